"""Model providers: the ``Provider`` seam and HTTP clients for model APIs.

OpenAI-compatible and Anthropic clients, error classification and the retry loop. Nothing here
imports a provider SDK; the clients speak HTTP through ``httpx``.
"""

from __future__ import annotations

from ..chat import CallOptions, ChatMessage, ChatRequest, ChatResponse, Provider, Role, Usage
from .anthropic import AnthropicProvider
from .classify import (
    OVERFLOW_PATTERNS,
    OverflowPattern,
    classify_error,
    is_context_overflow,
    is_silent_overflow,
    match_overflow,
)
from .openai_compat import OpenAICompatProvider
from .retry import RetryPolicy, backoff_delay, parse_retry_after

__all__ = [
    "OVERFLOW_PATTERNS",
    "AnthropicProvider",
    "CallOptions",
    "ChatMessage",
    "ChatRequest",
    "ChatResponse",
    "OpenAICompatProvider",
    "OverflowPattern",
    "Provider",
    "RetryPolicy",
    "Role",
    "Usage",
    "backoff_delay",
    "classify_error",
    "is_context_overflow",
    "is_silent_overflow",
    "match_overflow",
    "parse_retry_after",
]
