"""Read a Gemini ``generateContent`` response body (``candidates[0]`` and ``usageMetadata``)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from ...context import Message
from .._common import dumps_compact
from .._response_common import assistant_response, first_entry, mapping
from .._types import ParsedResponse
from ..usage import gemini_usage
from .request import model_content


def parse_gemini_response(body: Mapping[str, Any]) -> ParsedResponse:
    """Parse a ``generateContent`` response (``candidates[0]`` and ``usageMetadata``).

    A prompt blocked before generation (no candidates, a ``promptFeedback.blockReason``) gives an empty
    message with stop reason ``content_filter``. Calls without an ``id`` get a deterministic one made
    from the response id (or a hash of the response) and the call's position.
    """
    candidates = mapping(body, "response body").get("candidates")
    feedback = body.get("promptFeedback")
    if not candidates and isinstance(feedback, Mapping) and feedback.get("blockReason"):
        message, reason = Message(role="assistant"), "content_filter"
    else:
        candidate = first_entry(body, "candidates")
        content = candidate.get("content")
        parts = content.get("parts") if isinstance(content, Mapping) else None
        call_prefix = str(
            body.get("responseId")
            or hashlib.sha256(dumps_compact(parts).encode("utf-8", "surrogatepass")).hexdigest()[:16]
        )
        where = "candidates[0].content.parts[]"
        message = model_content([mapping(raw, where) for raw in parts or ()], f"gemini-{call_prefix}")
        reason = str(candidate.get("finishReason") or "")
    return assistant_response(
        body,
        message,
        model=str(body.get("modelVersion", "")),
        reason=reason,
        usage=gemini_usage(body.get("usageMetadata")),
        request_id=str(body.get("responseId", "")),
    )
