"""Reading request payloads of every wire format into request items, through the wire codecs.

The codec of the payload's format parses it (:mod:`contextwarden.wire`, the one parser per format);
each parsed item comes with the raw JSON it was read from (:class:`~contextwarden.wire.RawSpan`), and
its digest hashes those bytes, provider cache markers left out. An item is one parsed message: a whole
Chat message, a Responses input item (an assistant turn: its run of items), an Anthropic assistant turn
or ``tool_result`` block, a Gemini content or ``functionResponse`` part.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..log.events import AssistantMessage, Event, Instruction, ToolCall, ToolResult, UserMessage
from ..tokens import IMAGE_TOKENS, MESSAGE_OVERHEAD, TokenCounter
from ..wire import ParsedRequest, RawSpan, detect_format
from ..wire._common import arguments_text
from ..wire.usage import any_usage
from ._items import (
    RequestFormat,
    RequestItem,
    RequestUsage,
    Section,
    canonical_json,
    item_digest,
    strip_cache_control,
    text_kind,
)

_WRAPPERS = ("request", "body", "payload", "params")
_IMAGE_KINDS = frozenset({"image", "image_url", "input_image", "document", "input_file", "fileData", "inlineData"})


def unwrap(raw: Mapping[str, Any]) -> tuple[Mapping[str, Any], RequestFormat | None, Mapping[str, Any] | None]:
    """The request payload inside ``raw`` (itself, or under a wrapper key), its format and its response."""
    fmt = detect_format(raw)
    if fmt is not None:
        return raw, fmt, None
    for key in _WRAPPERS:
        inner = raw.get(key)
        fmt = detect_format(inner) if isinstance(inner, Mapping) else None
        if fmt is not None:
            assert isinstance(inner, Mapping)
            response = raw.get("response")
            return inner, fmt, response if isinstance(response, Mapping) else None
    return raw, None, None


class ItemBuilder:
    """Collects the items of one payload, reusing the previous request's token counts."""

    def __init__(self, counter: TokenCounter, known: dict[bytes, int]) -> None:
        self.counter = counter
        self.known = known
        self.system: list[RequestItem] = []
        self.tools: list[RequestItem] = []
        self.messages: list[RequestItem] = []

    def add(
        self,
        section: Section,
        *,
        role: str,
        kind: str,
        label: str,
        text: str,
        digest: bytes,
        images: int = 0,
        overhead: int = MESSAGE_OVERHEAD,
        calls: tuple[ToolCall, ...] = (),
        call_id: str = "",
    ) -> None:
        """Append one item."""
        tokens = self.known.get(digest)
        if tokens is None:
            tokens = overhead + self.counter.count(text) + images * IMAGE_TOKENS
            self.known[digest] = tokens
        target = {"system": self.system, "tools": self.tools, "messages": self.messages}[section]
        target.append(
            RequestItem(
                section=section,
                index=len(target),
                role=role,
                kind=kind,
                label=label,
                text=text,
                digest=digest,
                tokens=tokens,
                calls=calls,
                call_id=call_id,
            )
        )

    def request(self, parsed: ParsedRequest) -> None:
        """Add the items of a parsed request: system, tools, then the conversation."""
        for instruction, span in zip(parsed.instructions, parsed.spans, strict=False):
            self.add(
                "system",
                role="system",
                kind="system",
                label=f"{span.path} ({instruction.role})",
                text=instruction.text,
                digest=_digest("m", span),
            )
        for tool, span in zip(parsed.tools, parsed.tool_spans, strict=True):
            self.add(
                "tools",
                role="schema",
                kind="tool_schema",
                label=f"{span.path} ({tool.name})",
                text=_json_text(span.values),
                digest=_digest("tool", span),
                overhead=0,
            )
        for event, span in zip(parsed.events, parsed.spans[len(parsed.instructions) :], strict=True):
            self._event(event, span)

    def _event(self, event: Event, span: RawSpan) -> None:
        digest = _digest("m", span)
        if isinstance(event, ToolResult):
            name, call_id = event.tool_name, event.call_id
            self.add(
                "messages",
                role="tool",
                kind=f"tool_output:{name}",
                label=f"{span.path} (tool result of {name}, {call_id})",
                text=event.output,
                digest=digest,
                images=len(event.parts),
                call_id=call_id,
            )
        elif isinstance(event, AssistantMessage):
            pieces = [t.text for t in event.thinking if t.text]
            pieces += [event.text] if event.text else []
            pieces += [f"{call.name}({arguments_text(call)})" for call in event.tool_calls]
            pieces += [part.raw_json for part in event.opaque if part.kind != "reasoning"]
            spoken = bool(event.text or event.tool_calls)
            self.add(
                "messages",
                role="assistant",
                kind="assistant" if spoken or not event.thinking else "reasoning",
                label=f"{span.path} (assistant)",
                text="\n".join(pieces),
                digest=digest,
                calls=event.tool_calls,
            )
        elif isinstance(event, (UserMessage, Instruction)):
            role = "user" if isinstance(event, UserMessage) else event.role
            opaque = event.opaque if isinstance(event, UserMessage) else ()
            images = sum(1 for part in opaque if part.kind in _IMAGE_KINDS)
            images += len(event.parts) if isinstance(event, UserMessage) else 0
            texts = [event.text] if event.text else []
            texts += [part.raw_json for part in opaque if part.kind not in _IMAGE_KINDS]
            text = "\n".join(texts)
            self.add(
                "messages",
                role=role,
                kind=text_kind(role, text),
                label=f"{span.path} ({role})",
                text=text,
                digest=digest,
                images=images,
            )


def _digest(prefix: str, span: RawSpan) -> bytes:
    # The path is left out: an item that moves (history dropped before it) keeps its digest.
    if len(span.values) == 1:
        return item_digest(prefix, span.values[0])
    return item_digest(prefix, [strip_cache_control(v) for v in span.values])


def _json_text(values: tuple[Any, ...]) -> str:
    return "\n".join(canonical_json(strip_cache_control(v)).decode("utf-8", "surrogatepass") for v in values)


def response_usage(response: Mapping[str, Any] | None) -> RequestUsage | None:
    counts = any_usage(response.get("usage") if response is not None else None)
    if counts is None:
        return None
    return RequestUsage(input_tokens=counts.input, cache_read_tokens=counts.cache_read, output_tokens=counts.output)
