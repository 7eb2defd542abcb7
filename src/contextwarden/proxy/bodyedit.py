"""Minimal edits to a client's own request body, written into the client's own bytes.

The proxy never renders a fresh body when it only changes a few blocks: it replaces the content of
the tool results the projection changed (masked, superseded, truncated) and may add one
``cache_control`` breakpoint on the last block, keeping the system prompt, the tools, thinking
signatures, encrypted items, unknown fields and key order. Edits are copy-on-write (the client's
parsed body is never mutated; only the changed messages are copied) and are written into the raw
bytes by splicing: each changed block is serialized in the client's JSON style, found exactly once
in the original bytes and replaced there, so every byte outside the changed blocks is the client's.
When a block cannot be found exactly once, the whole edited body is re-serialized in the client's
style, and only if that style reproduces the client's bytes exactly; otherwise nothing is edited.

The tool-result addressing (by call id, per wire format) belongs next to the codecs in
``contextwarden.wire`` and can move there as is.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..log.events import ToolResult
from ..wire import AddressedBody, ParsedRequest

Serializer = Callable[[Any], bytes]

_STYLES: tuple[dict[str, Any], ...] = (
    {"separators": (",", ":"), "ensure_ascii": False},  # Claude Code, the Anthropic and OpenAI SDKs
    {"separators": (",", ":"), "ensure_ascii": True},
    {"separators": (", ", ": "), "ensure_ascii": False},
    {"separators": (", ", ": "), "ensure_ascii": True},  # Python's json.dumps defaults
)

MAX_BREAKPOINTS = 4
"""Anthropic accepts at most four ``cache_control`` breakpoints in one request."""


def _serializer(options: dict[str, Any]) -> Serializer:
    def dump(value: Any) -> bytes:
        return json.dumps(value, **options).encode("utf-8", "surrogatepass")

    return dump


_SERIALIZERS = tuple(_serializer(o) for o in _STYLES)
compact = _SERIALIZERS[0]
"""Compact JSON, as the SDKs and Claude Code send it: for bodies the proxy renders itself."""


def client_style(raw: bytes, body: Any) -> Serializer | None:
    """The serializer that reproduces ``raw`` from its parsed ``body`` exactly, or ``None``."""
    for dump in _SERIALIZERS:
        if dump(body) == raw:
            return dump
    return None


@dataclass
class Edit:
    """A copy-on-write edit of a parsed body: the new body and the messages it replaced."""

    body: dict[str, Any]
    """The edited body (shares every unchanged part with the original)."""
    key: str = "messages"
    """The body's list of messages (``input`` for OpenAI Responses)."""
    replaced: dict[int, tuple[Any, Any]] = field(default_factory=dict)
    """Index -> ``(the client's message, the edited message)`` for each message that changed."""
    breakpoints: int | None = None
    """The body's ``cache_control`` marks when the caller counted them (kept up to date by each mark);
    ``None``: counted over the body when a mark is placed."""

    addressed: AddressedBody | None = None
    """Where each of the client's messages lies in its bytes, when the caller read them so: each
    changed message is then spliced at its own place, with no search of the body."""

    def write(self, raw: bytes, original: Mapping[str, Any]) -> bytes | None:
        """The edited body as bytes: spliced into ``raw``, else re-serialized in the client's style, else ``None``."""
        placed = self._placed(raw)
        if placed is not None:
            return placed
        out = raw
        for old, new in self.replaced.values():
            for dump in _SERIALIZERS:
                before = dump(old)
                if out.count(before) == 1:
                    out = out.replace(before, dump(new))
                    break
            else:
                dump_all = client_style(raw, original)
                return dump_all(self.body) if dump_all is not None else None
        return out

    def _placed(self, raw: bytes) -> bytes | None:
        """Each changed message written over its own bytes, or ``None`` when a place is unknown or not in a style."""
        at = self.addressed
        if at is None or at.raw is not raw or at.key != self.key:
            return None
        pieces, pos = [], 0
        for index in sorted(self.replaced):
            old, new = self.replaced[index]
            if index >= len(at.starts):
                return None
            span = at.item_bytes(index)
            dump = next((d for d in _SERIALIZERS if d(old) == span), None)
            if dump is None:
                return None
            pieces += [raw[pos : at.starts[index]], dump(new)]
            pos = at.ends[index]
        pieces.append(raw[pos:])
        return b"".join(pieces)

    def set_message(self, index: int, new: Any) -> None:
        """Replace message ``index`` (copying the list once; the client's version is remembered)."""
        items = self.body[self.key]
        if not self.replaced:
            items = list(items)
            self.body = {**self.body, self.key: items}
        original = self.replaced[index][0] if index in self.replaced else items[index]
        items[index] = new
        self.replaced[index] = (original, new)


def replace_tool_outputs(
    fmt: str,
    body: dict[str, Any],
    replacements: Mapping[str, str],
    *,
    holders: Mapping[str, Sequence[int]] | None = None,
) -> Edit:
    """An edit giving each tool result whose call id is in ``replacements`` that text as its content.

    ``holders`` (Anthropic: :func:`result_holders` of the body's messages) lets only the messages that
    hold those results be visited, not the whole history.
    """
    edit = Edit(body=body, key="input" if fmt == "openai_responses" else "messages")
    if not replacements:
        return edit
    items = body.get(edit.key)
    items = items if isinstance(items, list) else []
    visit: Iterable[int] = range(len(items))
    if holders is not None and fmt == "anthropic":
        visit = sorted({i for call_id in replacements for i in holders.get(call_id, ()) if i < len(items)})
    for index in visit:
        item = items[index]
        new = _replaced(fmt, item, replacements)
        if new is not item:
            edit.set_message(index, new)
    return edit


def replace_gemini_results(body: dict[str, Any], replacements: Mapping[str, str], parsed: ParsedRequest) -> Edit:
    """An edit of a Gemini body giving each ``functionResponse`` whose call id is in ``replacements`` that text.

    Gemini pairs a response with its call by name and order, so a result's call id is the parser's
    (``parsed``, the body read by the Gemini codec); its span says which part of which content holds it.
    The part keeps its ``id`` and ``name``; its ``response`` becomes ``{"output": text}``.
    """
    edit = Edit(body=body, key="contents")
    contents = body.get("contents")
    if not replacements or not isinstance(contents, list):
        return edit
    spans = parsed.spans[len(parsed.instructions) :]
    parts_by_content: dict[int, dict[int, str]] = {}
    for event, span in zip(parsed.events, spans, strict=False):
        text = replacements.get(event.call_id) if isinstance(event, ToolResult) else None
        place = _GEMINI_PART.fullmatch(span.path) if text is not None else None
        if place is not None and text is not None:
            parts_by_content.setdefault(int(place[1]), {})[int(place[2])] = text
    for index, texts in sorted(parts_by_content.items()):
        content = contents[index]
        parts = list(content["parts"])
        for number, text in texts.items():
            response = dict(parts[number]["functionResponse"])
            response["response"] = {"output": text}
            parts[number] = {**parts[number], "functionResponse": response}
        edit.set_message(index, {**content, "parts": parts})
    return edit


_GEMINI_PART = re.compile(r"contents\[(\d+)\]\.parts\[(\d+)\]")
"""The span of one ``functionResponse`` part (:func:`contextwarden.wire.gemini.parse_contents`)."""


def _replaced(fmt: str, item: Any, replacements: Mapping[str, str]) -> Any:
    if not isinstance(item, dict):
        return item
    if fmt == "openai_chat":
        text = replacements.get(str(item.get("tool_call_id", ""))) if item.get("role") == "tool" else None
        return item if text is None else {**item, "content": text}
    if fmt == "openai_responses":
        is_output = item.get("type") in _RESPONSES_OUTPUTS
        text = replacements.get(str(item.get("call_id", ""))) if is_output else None
        return item if text is None else {**item, "output": text}
    content = item.get("content")
    if not isinstance(content, list):
        return item
    blocks = list(content)
    changed = False
    for j, block in enumerate(blocks):
        if isinstance(block, dict) and block.get("type") == "tool_result":
            text = replacements.get(str(block.get("tool_use_id", "")))
            if text is not None:
                blocks[j] = {**block, "content": text}
                changed = True
    return {**item, "content": blocks} if changed else item


_RESPONSES_OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output"})


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def count_breakpoints(body: Mapping[str, Any], *, message_marks: int | None = None) -> int:
    """How many ``cache_control`` marks an Anthropic body carries (tools, system and messages).

    ``message_marks`` is the messages' share when the caller already knows it (the suffix reader
    carries it from request to request, so a long history is not walked again).
    """
    found = 0
    for part in [*_list(body.get("tools")), *_list(body.get("system"))]:
        found += isinstance(part, dict) and bool(part.get("cache_control"))
    if message_marks is None:
        message_marks = count_message_marks(_list(body.get("messages")))
    return found + message_marks


def count_message_marks(messages: Sequence[Any]) -> int:
    """How many content blocks of ``messages`` (Anthropic) carry a ``cache_control`` mark."""
    found = 0
    for message in messages:
        for block in _list(message.get("content") if isinstance(message, dict) else None):
            found += isinstance(block, dict) and bool(block.get("cache_control"))
    return found


def result_holders(
    messages: Sequence[Any], *, offset: int = 0, into: dict[str, tuple[int, ...]] | None = None
) -> dict[str, tuple[int, ...]]:
    """Call id -> indices (counted from ``offset``) of the Anthropic messages holding its ``tool_result``.

    Added to ``into`` when given (a count carried from an earlier request, extended by new messages).
    """
    holders = into if into is not None else {}
    for index, message in enumerate(messages, start=offset):
        for block in _list(message.get("content") if isinstance(message, dict) else None):
            if isinstance(block, dict) and block.get("type") == "tool_result":
                call_id = str(block.get("tool_use_id", ""))
                known = holders.get(call_id, ())
                if index not in known:
                    holders[call_id] = (*known, index)
    return holders


def mark_before_result(
    edit: Edit, call_id: str, *, ttl: str = "5m", holders: Mapping[str, Sequence[int]] | None = None
) -> bool:
    """Add a breakpoint at the end of the message before the one holding ``call_id``'s tool result.

    That is the planner's frontier: the oldest result a later batch may change. A prefix cached up to
    there stays readable after the batch, so only what follows is written again. Same limits as
    :func:`mark_tail`; returns whether a breakpoint was added. ``holders`` (:func:`result_holders`
    of the messages) finds the message without walking the history.
    """
    messages = _list(edit.body.get("messages"))
    candidates: Iterable[int] = range(len(messages))
    if holders is not None:
        candidates = sorted(i for i in holders.get(call_id, ()) if i < len(messages))
    for index in candidates:
        blocks = _list(messages[index].get("content") if isinstance(messages[index], dict) else None)
        if any(
            isinstance(b, dict) and b.get("type") == "tool_result" and b.get("tool_use_id") == call_id for b in blocks
        ):
            return index > 0 and _mark(edit, index - 1, ttl)
    return False


def mark_tail(edit: Edit, *, ttl: str = "5m") -> bool:
    """Add a breakpoint on the last content block of an Anthropic body, if one is free there.

    The client's own breakpoints are kept and counted; nothing is added once four are in use, when
    the last block already carries one, or on a thinking block (Anthropic refuses those). Returns
    whether a breakpoint was added.
    """
    messages = _list(edit.body.get("messages"))
    return bool(messages) and _mark(edit, len(messages) - 1, ttl)


def _mark(edit: Edit, index: int, ttl: str) -> bool:
    messages = _list(edit.body.get("messages"))
    used = count_breakpoints(edit.body) if edit.breakpoints is None else edit.breakpoints
    if not isinstance(messages[index], dict) or used >= MAX_BREAKPOINTS:
        return False
    last = messages[index]
    content = last.get("content")
    if isinstance(content, str) and content:
        content = [{"type": "text", "text": content}]
    if not isinstance(content, list) or not content or not isinstance(content[-1], dict):
        return False
    tail = content[-1]
    if tail.get("cache_control") or tail.get("type") in ("thinking", "redacted_thinking"):
        return False
    mark = {"type": "ephemeral"} if ttl == "5m" else {"type": "ephemeral", "ttl": ttl}
    edit.set_message(index, {**last, "content": [*content[:-1], {**tail, "cache_control": mark}]})
    edit.breakpoints = used + 1
    return True
