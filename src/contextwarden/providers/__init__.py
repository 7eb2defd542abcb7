"""Model providers: the ``Provider`` seam and HTTP clients for model APIs.

A provider takes the :class:`~contextwarden.context.ModelContext` that ``ContextManager.build``
returns and answers with a :class:`ModelReply` (the assistant message and usage events to append).
OpenAI-compatible and Anthropic clients share one base (``_http.HTTPProvider``: the connection pool,
retries, cancellation), each adding its path, its wire codec and its headers. Nothing here imports a
provider SDK; the clients speak HTTP through ``httpx``.
"""

from __future__ import annotations

from functools import partial

from .._deprecated import deprecated_names
from ..chat import _INSTEAD, CallOptions, ModelReply, Provider, _compat, model_reply
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
    "ModelReply",
    "OpenAICompatProvider",
    "OverflowPattern",
    "Provider",
    "RetryPolicy",
    "backoff_delay",
    "classify_error",
    "is_context_overflow",
    "is_silent_overflow",
    "match_overflow",
    "model_reply",
    "parse_retry_after",
]


_OLD = ("ChatMessage", "ChatRequest", "ChatResponse", "Role", "Usage")
__getattr__ = deprecated_names(__name__, {old: (partial(_compat, old), _INSTEAD[old]) for old in _OLD})
