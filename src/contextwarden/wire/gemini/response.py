"""Read a Gemini ``generateContent`` response body (``candidates[0]`` and ``usageMetadata``)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from ...log.events import AssistantMessage
from .._common import dumps_compact
from .._response_common import first_entry, int_field, map_stop_reason, mapping, usage_report
from .._types import ParsedResponse
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
        return _gemini_result(body, AssistantMessage(model=_gemini_model(body), stop_reason="content_filter"))
    candidate = first_entry(body, "candidates")
    content = candidate.get("content")
    parts = content.get("parts") if isinstance(content, Mapping) else None
    call_prefix = str(
        body.get("responseId") or hashlib.sha256(dumps_compact(parts).encode("utf-8", "surrogatepass")).hexdigest()[:16]
    )
    message = model_content(
        [mapping(raw, "candidates[0].content.parts[]") for raw in parts or ()], f"gemini-{call_prefix}"
    )
    assistant = AssistantMessage(
        text=message.text,
        thinking=message.thinking,
        tool_calls=message.tool_calls,
        opaque=message.opaque,
        model=_gemini_model(body),
        stop_reason=map_stop_reason(str(candidate.get("finishReason") or ""), has_tool_calls=bool(message.tool_calls)),
    )
    return _gemini_result(body, assistant)


def _gemini_model(body: Mapping[str, Any]) -> str:
    return str(body.get("modelVersion", ""))


def _gemini_result(body: Mapping[str, Any], assistant: AssistantMessage) -> ParsedResponse:
    usage = body.get("usageMetadata")
    if not isinstance(usage, Mapping):
        return assistant, None
    return assistant, usage_report(
        body,
        assistant,
        total_input=int_field(usage.get("promptTokenCount")),
        # Gemini counts thinking apart from the candidates; both are billed as output.
        output=int_field(usage.get("candidatesTokenCount")) + int_field(usage.get("thoughtsTokenCount")),
        cache_read=int_field(usage.get("cachedContentTokenCount")),
        request_id=str(body.get("responseId", "")),
    )
