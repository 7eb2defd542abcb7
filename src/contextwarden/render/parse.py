"""Provider responses and usage back into events; recorded request payloads back into messages.

Each ``parse_*_response`` returns the :class:`~contextwarden.events.AssistantMessage` and, when the body
reports usage, a :class:`~contextwarden.events.UsageReport` linked to it (``response_event_id``).
``UsageReport.input_tokens`` is always the total input, cached tokens included, whatever the provider's
own convention (Anthropic reports uncached input separately; OpenAI and Gemini include cached tokens).

Stop reasons are mapped to one vocabulary: ``end_turn``, ``max_tokens``, ``tool_use``,
``content_filter``; others pass through lowercased. Tool-call arguments are parsed from JSON text, and
text that is not a JSON object is kept as ``{"_raw": text}``.

A body that is not the provider's response shape raises
:class:`~contextwarden.errors.MalformedResponse`, naming what was missing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from ..errors import MalformedResponse
from ..events import AssistantMessage, ThinkingBlock, ToolCall, UsageReport
from ._common import (
    arguments_object,
    dumps_compact,
    pack_responses_signature,
    parse_arguments,
)
from ._requests import anthropic_assistant_content, openai_tool_call, parse_request_messages

__all__ = [
    "map_stop_reason",
    "parse_anthropic_response",
    "parse_gemini_response",
    "parse_openai_chat_response",
    "parse_openai_responses_response",
    "parse_request_messages",
]

Parsed = tuple[AssistantMessage, UsageReport | None]

_STOP_REASONS = {
    "stop": "end_turn",
    "end_turn": "end_turn",
    "completed": "end_turn",
    "length": "max_tokens",
    "max_tokens": "max_tokens",
    "max_output_tokens": "max_tokens",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "tool_use": "tool_use",
    "content_filter": "content_filter",
    "safety": "content_filter",
    "recitation": "content_filter",
    "blocklist": "content_filter",
    "prohibited_content": "content_filter",
    "spii": "content_filter",
    "refusal": "content_filter",
}


def map_stop_reason(reason: str, *, has_tool_calls: bool = False) -> str:
    """Map a provider's stop or finish reason to contextwarden's vocabulary.

    Gemini and OpenAI Responses say ``STOP``/``completed`` even when the answer is tool calls, so a
    normal stop with calls is ``tool_use``.
    """
    mapped = _STOP_REASONS.get(reason.lower(), reason.lower())
    if mapped == "end_turn" and has_tool_calls:
        return "tool_use"
    return mapped


def parse_openai_chat_response(body: Mapping[str, Any]) -> Parsed:
    """Parse a Chat Completions response (``choices[0].message`` and ``usage``)."""
    choice = _first(body, "choices")
    message = _mapping(choice.get("message"), "choices[0].message")
    text = _openai_text(message.get("content"))
    if not text and isinstance(message.get("refusal"), str):
        text = message["refusal"]
    calls = tuple(_chat_call(raw) for raw in message.get("tool_calls") or ())
    # OpenAI-compatible servers (llama.cpp, vLLM, DeepSeek) return reasoning here.
    reasoning = message.get("reasoning_content")
    thinking = (ThinkingBlock(text=reasoning),) if isinstance(reasoning, str) and reasoning else ()
    assistant = AssistantMessage(
        text=text,
        thinking=thinking,
        tool_calls=calls,
        model=str(body.get("model", "")),
        stop_reason=map_stop_reason(str(choice.get("finish_reason") or ""), has_tool_calls=bool(calls)),
    )
    usage = body.get("usage")
    if not isinstance(usage, Mapping):
        return assistant, None
    details = usage.get("prompt_tokens_details")
    cached = _int(details.get("cached_tokens")) if isinstance(details, Mapping) else 0
    return assistant, _usage(
        body,
        assistant,
        total_input=_int(usage.get("prompt_tokens")),
        output=_int(usage.get("completion_tokens")),
        cache_read=cached,
    )


def _chat_call(raw: object) -> ToolCall:
    call = _mapping(raw, "tool_calls[]")
    _mapping(call.get("function"), "tool_calls[].function")
    return openai_tool_call(call)


def parse_openai_responses_response(body: Mapping[str, Any]) -> Parsed:
    """Parse a Responses API response (``output`` items, ``status`` and ``usage``)."""
    output = _mapping(body, "response body").get("output")
    if not isinstance(output, list):
        raise MalformedResponse("OpenAI Responses body has no 'output' list")
    texts: list[str] = []
    thinking: list[ThinkingBlock] = []
    calls: list[ToolCall] = []
    for raw in output:
        item = _mapping(raw, "output[]")
        kind = item.get("type")
        if kind == "message":
            for part in item.get("content") or ():
                if isinstance(part, Mapping) and part.get("type") in ("output_text", "refusal"):
                    texts.append(str(part.get("text", part.get("refusal", ""))))
        elif kind == "function_call":
            calls.append(
                ToolCall(
                    id=str(item.get("call_id", "")),
                    name=str(item.get("name", "")),
                    arguments=parse_arguments(str(item.get("arguments") or "")),
                )
            )
        elif kind == "reasoning":
            thinking.append(_responses_reasoning(item))
    status = str(body.get("status") or "completed")
    incomplete = body.get("incomplete_details")
    if status == "incomplete" and isinstance(incomplete, Mapping):
        status = str(incomplete.get("reason") or status)
    assistant = AssistantMessage(
        text="".join(texts),
        thinking=tuple(thinking),
        tool_calls=tuple(calls),
        model=str(body.get("model", "")),
        stop_reason=map_stop_reason(status, has_tool_calls=bool(calls)),
    )
    usage = body.get("usage")
    if not isinstance(usage, Mapping):
        return assistant, None
    details = usage.get("input_tokens_details")
    cached = _int(details.get("cached_tokens")) if isinstance(details, Mapping) else 0
    return assistant, _usage(
        body,
        assistant,
        total_input=_int(usage.get("input_tokens")),
        output=_int(usage.get("output_tokens")),
        cache_read=cached,
    )


def _responses_reasoning(item: Mapping[str, Any]) -> ThinkingBlock:
    pieces = [str(s.get("text", "")) for s in item.get("summary") or () if isinstance(s, Mapping)]
    if not pieces:  # open-weight models return the raw reasoning as content instead of a summary
        pieces = [str(c.get("text", "")) for c in item.get("content") or () if isinstance(c, Mapping)]
    encrypted = item.get("encrypted_content")
    item_id = item.get("id")
    signature = ""
    if isinstance(encrypted, str) and encrypted and isinstance(item_id, str) and item_id:
        signature = pack_responses_signature(item_id, encrypted)
    return ThinkingBlock(text="\n\n".join(p for p in pieces if p), signature=signature)


def parse_anthropic_response(body: Mapping[str, Any]) -> Parsed:
    """Parse a Messages API response (``content`` blocks, ``stop_reason`` and ``usage``)."""
    content = _mapping(body, "response body").get("content")
    if not isinstance(content, list):
        raise MalformedResponse("Anthropic body has no 'content' list")
    text, thinking, calls = anthropic_assistant_content([_mapping(raw, "content[]") for raw in content])
    assistant = AssistantMessage(
        text=text,
        thinking=thinking,
        tool_calls=calls,
        model=str(body.get("model", "")),
        stop_reason=map_stop_reason(str(body.get("stop_reason") or ""), has_tool_calls=bool(calls)),
    )
    usage = body.get("usage")
    if not isinstance(usage, Mapping):
        return assistant, None
    read = _int(usage.get("cache_read_input_tokens"))
    write = _int(usage.get("cache_creation_input_tokens"))
    return assistant, _usage(
        body,
        assistant,
        total_input=_int(usage.get("input_tokens")) + read + write,
        output=_int(usage.get("output_tokens")),
        cache_read=read,
        cache_write=write,
    )


def parse_gemini_response(body: Mapping[str, Any]) -> Parsed:
    """Parse a ``generateContent`` response (``candidates[0]`` and ``usageMetadata``).

    A prompt blocked before generation (no candidates, a ``promptFeedback.blockReason``) gives an empty
    message with stop reason ``content_filter``. Calls without an ``id`` get a deterministic one made
    from the response id (or a hash of the response) and the call's position.
    """
    candidates = _mapping(body, "response body").get("candidates")
    feedback = body.get("promptFeedback")
    if not candidates and isinstance(feedback, Mapping) and feedback.get("blockReason"):
        return _gemini_result(body, AssistantMessage(model=_gemini_model(body), stop_reason="content_filter"))
    candidate = _first(body, "candidates")
    content = candidate.get("content")
    parts = content.get("parts") if isinstance(content, Mapping) else None
    texts: list[str] = []
    thinking: list[ThinkingBlock] = []
    calls: list[ToolCall] = []
    call_prefix = str(
        body.get("responseId") or hashlib.sha256(dumps_compact(parts).encode("utf-8", "surrogatepass")).hexdigest()[:16]
    )
    for raw in parts or ():
        part = _mapping(raw, "candidates[0].content.parts[]")
        signature = str(part.get("thoughtSignature") or "")
        if part.get("thought"):
            thinking.append(ThinkingBlock(text=str(part.get("text", "")), signature=signature))
            continue
        if signature:
            thinking.append(ThinkingBlock(text="", signature=signature))
        if "functionCall" in part:
            call = _mapping(part["functionCall"], "functionCall")
            calls.append(
                ToolCall(
                    id=str(call.get("id") or f"gemini-{call_prefix}-{len(calls)}"),
                    name=str(call.get("name", "")),
                    arguments=arguments_object(call.get("args")),
                )
            )
        elif "text" in part:
            texts.append(str(part["text"]))
    assistant = AssistantMessage(
        text="".join(texts),
        thinking=tuple(thinking),
        tool_calls=tuple(calls),
        model=_gemini_model(body),
        stop_reason=map_stop_reason(str(candidate.get("finishReason") or ""), has_tool_calls=bool(calls)),
    )
    return _gemini_result(body, assistant)


def _gemini_model(body: Mapping[str, Any]) -> str:
    return str(body.get("modelVersion", ""))


def _gemini_result(body: Mapping[str, Any], assistant: AssistantMessage) -> Parsed:
    usage = body.get("usageMetadata")
    if not isinstance(usage, Mapping):
        return assistant, None
    return assistant, _usage(
        body,
        assistant,
        total_input=_int(usage.get("promptTokenCount")),
        # Gemini counts thinking apart from the candidates; both are billed as output.
        output=_int(usage.get("candidatesTokenCount")) + _int(usage.get("thoughtsTokenCount")),
        cache_read=_int(usage.get("cachedContentTokenCount")),
        request_id=str(body.get("responseId", "")),
    )


# --------------------------------------------------------------------------- helpers


def _usage(
    body: Mapping[str, Any],
    assistant: AssistantMessage,
    *,
    total_input: int,
    output: int,
    cache_read: int,
    cache_write: int = 0,
    request_id: str | None = None,
) -> UsageReport:
    return UsageReport(
        input_tokens=total_input,
        output_tokens=output,
        cache_read_tokens=cache_read,
        cache_write_tokens=cache_write,
        request_id=str(body.get("id", "")) if request_id is None else request_id,
        response_event_id=assistant.id,
        model=assistant.model,
    )


def _openai_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(part.get("text", ""))
            for part in content
            if isinstance(part, Mapping) and part.get("type") in ("text", "output_text")
        )
    return ""


def _first(body: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    if not isinstance(body, Mapping):
        raise MalformedResponse(f"response body is {type(body).__name__}, not a JSON object")
    items = body.get(key)
    if not isinstance(items, list) or not items:
        raise MalformedResponse(f"response body has no {key!r} entries")
    return _mapping(items[0], f"{key}[0]")


def _mapping(value: object, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise MalformedResponse(f"{where} is {type(value).__name__}, expected a JSON object")
    return value


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
