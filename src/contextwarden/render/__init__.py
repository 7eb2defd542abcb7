"""Provider payloads in and out: renderers, response parsers and tool-call pairing normalization.

Every renderer is a pure function of a :class:`~contextwarden.context.ModelContext` and normalizes
tool-call pairing first, so no provider rejects a request for an orphan result or an unanswered call.
"""

from .anthropic import render_anthropic
from .gemini import render_gemini
from .openai_chat import render_openai_chat
from .openai_responses import render_openai_responses
from .pairing import ABORTED_TEXT, normalize_pairing
from .parse import (
    map_stop_reason,
    parse_anthropic_response,
    parse_gemini_response,
    parse_openai_chat_response,
    parse_openai_responses_response,
    parse_request_messages,
)

__all__ = [
    "ABORTED_TEXT",
    "map_stop_reason",
    "normalize_pairing",
    "parse_anthropic_response",
    "parse_gemini_response",
    "parse_openai_chat_response",
    "parse_openai_responses_response",
    "parse_request_messages",
    "render_anthropic",
    "render_gemini",
    "render_openai_chat",
    "render_openai_responses",
]
