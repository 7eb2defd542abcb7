"""OpenHands SDK (V1) event streams: events serialized with a ``kind`` discriminator.

The ``openhands-sdk`` package (``openhands.sdk.event``) writes each event as its Pydantic model with
``kind`` naming the class. This reader follows what the SDK's ``LLMConvertibleEvent.events_to_messages``
sends to the model:

- ``SystemPromptEvent`` → :class:`Instruction` (``system_prompt.text``); its ``tools`` go to
  ``metadata["tools"]`` (names) since they are part of every request.
- ``MessageEvent`` → :class:`UserMessage` (source ``user``; text contents joined, image URLs decoded
  or kept as ``[image: URL]``) or :class:`AssistantMessage` (source ``agent``, with its thinking blocks
  and ``reasoning_content``).
- ``ActionEvent`` → one tool call of the :class:`AssistantMessage` for its ``llm_response_id`` (parallel
  calls of one response share it; only the first carries the ``thought``).
- ``ObservationEvent`` → :class:`ToolResult` for ``tool_call_id``: the observation's text contents,
  after the SDK's error header when ``is_error``, with ``exit_code`` when the observation has one;
  ``UserRejectObservation`` → ``Action rejected: <reason>``; ``AgentErrorEvent`` → its ``error``;
  both with ``is_error``.
- ``Condensation`` and ``CondensationSummaryEvent`` → :class:`Compaction` with the summary
  (``details.provider_side = true``, ``forgotten_event_ids`` kept).
- State updates, pauses, condensation requests, token and streaming events are skipped and counted.

The SDK records no per-call usage in its events (it keeps metrics in the conversation state), so
these transcripts carry none.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..log.events import BinaryPart, JSONValue, ThinkingBlock, ToolCall
from ._builder import TranscriptBuilder
from ._common import binary_from_data_url, parse_arguments, parse_timestamp

SDK_KINDS = frozenset(
    {
        "SystemPromptEvent",
        "MessageEvent",
        "ActionEvent",
        "ObservationEvent",
        "UserRejectObservation",
        "AgentErrorEvent",
        "Condensation",
        "CondensationSummaryEvent",
        "CondensationRequest",
        "ConversationStateUpdateEvent",
        "PauseEvent",
        "TokenEvent",
        "StreamingDeltaEvent",
        "ConversationErrorEvent",
    }
)
"""Event classes of ``openhands.sdk.event`` this reader knows (read or deliberately skipped)."""
_SKIPPED = frozenset(
    {
        "CondensationRequest",
        "ConversationStateUpdateEvent",
        "PauseEvent",
        "TokenEvent",
        "StreamingDeltaEvent",
        "ConversationErrorEvent",
    }
)
ERROR_HEADER = "[An error occurred during execution.]\n"
"""What the SDK puts before an error observation's content in the model's view."""


def is_sdk_event(item: Any) -> bool:
    """Whether ``item`` looks like a serialized SDK event (``kind`` naming a known event class)."""
    return isinstance(item, dict) and item.get("kind") in SDK_KINDS


def read_sdk_events(events: Sequence[dict[str, Any]], builder: TranscriptBuilder, where: Sequence[str]) -> None:
    """Append the model-visible content of SDK ``events`` to ``builder``; ``where`` names each for errors."""
    for event, place in zip(events, where, strict=True):
        _read(event, builder, place)


def _read(event: dict[str, Any], builder: TranscriptBuilder, where: str) -> None:
    kind = event.get("kind")
    at = parse_timestamp(event.get("timestamp"))
    if kind == "SystemPromptEvent":
        prompt = event.get("system_prompt")
        builder.instruction(_text_of(prompt), source="openhands system")
        tools = event.get("tools")
        if isinstance(tools, list):
            builder.metadata["tools"] = [_tool_name(t) for t in tools if _tool_name(t)]
    elif kind == "MessageEvent":
        _message(event, builder, at)
    elif kind == "ActionEvent":
        _action(event, builder, at)
    elif kind == "ObservationEvent":
        observation = event.get("observation")
        observation = observation if isinstance(observation, dict) else {}
        is_error = bool(observation.get("is_error"))
        text = _texts(observation.get("content"))
        exit_code = observation.get("exit_code")
        builder.tool_result(
            str(event.get("tool_call_id") or ""),
            (ERROR_HEADER if is_error else "") + text,
            is_error=is_error or (isinstance(exit_code, int) and exit_code != 0),
            exit_code=exit_code if isinstance(exit_code, int) and not isinstance(exit_code, bool) else None,
            where=where,
            at=at,
        )
    elif kind == "UserRejectObservation":
        reason = event.get("rejection_reason") or "User rejected the action"
        builder.tool_result(
            str(event.get("tool_call_id") or ""), f"Action rejected: {reason}", is_error=True, where=where, at=at
        )
    elif kind == "AgentErrorEvent":
        builder.tool_result(
            str(event.get("tool_call_id") or ""), str(event.get("error") or ""), is_error=True, where=where, at=at
        )
    elif kind in ("Condensation", "CondensationSummaryEvent"):
        summary = event.get("summary")
        details: dict[str, JSONValue] = {"provider_side": True}
        forgotten = event.get("forgotten_event_ids")
        if isinstance(forgotten, list):
            details["forgotten_event_ids"] = [str(i) for i in forgotten]
        builder.compaction(summary if isinstance(summary, str) else "", details=details, at=at)
    elif kind in _SKIPPED:
        builder.skip(f"sdk:{kind}")
    else:
        builder.unknown(f"sdk:{kind}")


def _message(event: dict[str, Any], builder: TranscriptBuilder, at: float | None) -> None:
    message = event.get("llm_message")
    message = message if isinstance(message, dict) else {}
    content = message.get("content")
    extended = event.get("extended_content")
    texts = [_texts(content), _texts(extended)]
    if event.get("source") == "user":
        parts: list[BinaryPart] = []
        for url in _image_urls(content):
            part = binary_from_data_url(url)
            if part is not None:
                parts.append(part)
            else:
                texts.append(f"[image: {url}]")
        builder.user("\n".join(t for t in texts if t), parts=parts, at=at)
        return
    builder.assistant(
        text="\n".join(t for t in texts if t),
        thinking=_thinking(message.get("thinking_blocks"), message.get("reasoning_content")),
        key=_response_key(event),
        at=at,
    )


def _action(event: dict[str, Any], builder: TranscriptBuilder, at: float | None) -> None:
    call = event.get("tool_call")
    call = call if isinstance(call, dict) else {}
    call_id = str(call.get("id") or event.get("tool_call_id") or "")
    name = str(call.get("name") or event.get("tool_name") or "")
    tool_call = ToolCall(id=call_id, name=name, arguments=parse_arguments(call.get("arguments")))
    builder.assistant(
        text=_texts(event.get("thought")),
        thinking=_thinking(event.get("thinking_blocks"), event.get("reasoning_content")),
        tool_calls=[tool_call],
        key=_response_key(event),
        at=at,
    )


def _response_key(event: dict[str, Any]) -> str:
    response = event.get("llm_response_id")
    return f"sdk-response:{response}" if response else f"sdk-event:{event.get('id')}"


def _thinking(blocks: Any, reasoning: Any) -> list[ThinkingBlock]:
    out: list[ThinkingBlock] = []
    for block in blocks if isinstance(blocks, list) else ():
        if not isinstance(block, dict):
            continue
        if block.get("type") == "redacted_thinking":
            out.append(ThinkingBlock(text="", signature=str(block.get("data") or "")))
        else:
            text, signature = str(block.get("thinking") or ""), str(block.get("signature") or "")
            out.append(ThinkingBlock(text=text, signature=signature))
    if not out and isinstance(reasoning, str) and reasoning:
        out.append(ThinkingBlock(text=reasoning))
    return out


def _texts(content: Any) -> str:
    """Text of an SDK content list (``TextContent`` items), or of a single one, or a plain string."""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        return _text_of(content)
    if isinstance(content, list):
        return "\n".join(t for t in (_text_of(c) for c in content) if t)
    return ""


def _text_of(item: Any) -> str:
    if isinstance(item, str):
        return item
    if isinstance(item, dict) and item.get("type", "text") == "text" and isinstance(item.get("text"), str):
        return str(item["text"])
    return ""


def _image_urls(content: Any) -> list[str]:
    urls: list[str] = []
    for item in content if isinstance(content, list) else ():
        if isinstance(item, dict) and item.get("type") == "image":
            urls.extend(u for u in item.get("image_urls") or () if isinstance(u, str) and u)
    return urls


def _tool_name(tool: Any) -> str:
    if not isinstance(tool, dict):
        return ""
    function = tool.get("function")
    if isinstance(function, dict) and isinstance(function.get("name"), str):
        return str(function["name"])
    name = tool.get("name") or tool.get("title")
    return name if isinstance(name, str) else ""
