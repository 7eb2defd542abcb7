"""Where request t+1 stops extending request t, and what broke the prefix there."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from ..fragments import dynamic_values
from .requests import Request, RequestItem

_TOOL_LABEL = re.compile(r"^tools\[\d+\] \((.*)\)$")

BreakCause = Literal[
    "model_changed",
    "system_dynamic",
    "system_changed",
    "tools_reordered",
    "tools_changed",
    "message_edited",
    "messages_removed",
    "history_shortened",
]
"""What broke a prefix."""

CAUSES: dict[BreakCause, str] = {
    "model_changed": "the model changed",
    "system_dynamic": "a timestamp or id in the system prompt",
    "system_changed": "the system prompt changed",
    "tools_reordered": "tools reordered",
    "tools_changed": "tools changed",
    "message_edited": "an earlier message was edited",
    "messages_removed": "earlier messages were removed",
    "history_shortened": "the history was cut short",
}
"""Every cause of a prefix break, with the words a report uses for it."""


@dataclass(frozen=True, kw_only=True)
class PrefixBreak:
    """Request ``request`` does not start with the whole of the request before it."""

    request: int
    """The request that broke the prefix (1-based)."""
    line: int
    """Its line in the source file (0 when not from a file)."""
    section: str
    """Where the first difference lies: ``model``, ``system``, ``tools`` or ``messages``."""
    item: str
    """The first differing item (its label in the new request, or in the old one when removed)."""
    cause: BreakCause
    """One of :data:`CAUSES`."""
    detail: str
    """What changed, in words (the dynamic value found, the tools added or removed...)."""
    shared_tokens: int
    """Tokens of the prefix the two requests still share (what a cache can still serve)."""
    window_events: tuple[str, ...] = ()
    """Recorded window events that explain the break (our own sessions)."""
    old_text: str = field(default="", repr=False, compare=False)
    """For an edited message: its text before (kept to name dynamic values on demand)."""
    new_text: str = field(default="", repr=False, compare=False)
    """For an edited message: its text after."""

    @property
    def explained(self) -> bool:
        """Whether a recorded window event accounts for the break."""
        return bool(self.window_events)

    def describe(self) -> str:
        """The detail, plus the dynamic values (dates, ids) an edited message swapped for new ones."""
        if not self.new_text:
            return self.detail
        before = _dynamic_detail(self.new_text, self.old_text)
        after = _dynamic_detail(self.old_text, self.new_text)
        # Only a value replaced by another value is a churning timestamp or id; an id that merely
        # appears in a new placeholder is stable.
        return f"{self.detail}; dynamic value(s) {before} -> {after}" if before and after else self.detail


def _common_prefix_len(a: str, b: str) -> int:
    # Binary search over slice comparisons runs at C speed on long texts.
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def changed_region(old: str, new: str) -> str:
    """The lines of ``new`` that differ from ``old`` (common leading and trailing text removed)."""
    start = _common_prefix_len(old, new)
    suffix = _common_prefix_len(old[start:][::-1], new[start:][::-1])
    end = len(new) - suffix
    line_start = new.rfind("\n", 0, start) + 1
    line_end = new.find("\n", end)
    return new[line_start : len(new) if line_end < 0 else line_end]


def _dynamic_detail(old: str, new: str) -> str:
    found = list(dict.fromkeys(dynamic_values(changed_region(old, new))))
    # A time inside a matched timestamp is the same value; name it once.
    outer = [v for v in found if not any(v != o and v in o for o in found)]
    return ", ".join(repr(v) for v in outer)


def _first_diff(old: tuple[RequestItem, ...], new: tuple[RequestItem, ...]) -> int | None:
    """The first index where ``new`` stops repeating ``old``; ``None`` when ``new`` extends ``old``."""
    for i, (a, b) in enumerate(zip(old, new, strict=False)):
        if a.digest != b.digest:
            return i
    return None if len(new) >= len(old) else len(new)


def _tool_name(item: RequestItem) -> str:
    match = _TOOL_LABEL.match(item.label)
    return match.group(1) if match else item.label


def _system_break(prev: Request, cur: Request, i: int) -> tuple[str, BreakCause, str]:
    old = "\n".join(item.text for item in prev.system)
    new = "\n".join(item.text for item in cur.system)
    item = cur.system[i].label if i < len(cur.system) else f"{prev.system[i].label} (removed)"
    dynamic = _dynamic_detail(old, new)
    if dynamic:
        return item, "system_dynamic", f"dynamic value(s) {dynamic} in the changed text"
    region = changed_region(old, new).strip()
    return item, "system_changed", f"changed text: {region[:120]!r}" if region else "system blocks differ"


def _tools_break(prev: Request, cur: Request, i: int) -> tuple[str, BreakCause, str]:
    if sorted(t.digest for t in prev.tools) == sorted(t.digest for t in cur.tools):
        order = ", ".join(_tool_name(t) for t in cur.tools[:8])
        return cur.tools[i].label, "tools_reordered", f"same tools in a new order: {order}"
    before = {_tool_name(t): t.digest for t in prev.tools}
    after = {_tool_name(t): t.digest for t in cur.tools}
    added = sorted(set(after) - set(before))
    removed = sorted(set(before) - set(after))
    changed = sorted(n for n in set(before) & set(after) if before[n] != after[n])
    parts = [
        f"{what}: {', '.join(names)}"
        for what, names in (("added", added), ("removed", removed), ("schema changed", changed))
        if names
    ]
    item = cur.tools[i].label if i < len(cur.tools) else f"{prev.tools[i].label} (removed)"
    return item, "tools_changed", "; ".join(parts) or "tool order changed"


def _messages_break(prev: Request, cur: Request, i: int) -> tuple[str, BreakCause, str]:
    if i >= len(cur.messages):
        dropped = len(prev.messages) - len(cur.messages)
        return f"{prev.messages[i].label} (dropped)", "history_shortened", f"{dropped} trailing item(s) gone"
    later = {item.digest: j for j, item in enumerate(prev.messages) if j > i}
    j = later.get(cur.messages[i].digest)
    if j is not None:
        return (
            f"{prev.messages[i].label} (removed)",
            "messages_removed",
            f"{j - i} item(s) removed from {prev.messages[i].label} on",
        )
    return cur.messages[i].label, "message_edited", f"{prev.messages[i].label} was changed"


def _first_break(prev: Request, cur: Request) -> tuple[str, int] | None:
    """Section and index of the first item of ``cur`` that is not a repeat of ``prev``.

    System blocks and tools must match exactly (anything added there shifts every later byte);
    the conversation may grow at its end.
    """
    for section, old, new in (("system", prev.system, cur.system), ("tools", prev.tools, cur.tools)):
        i = _first_diff(old, new)
        if i is None and len(new) > len(old):
            i = len(old)
        if i is not None:
            return section, i
    i = _first_diff(prev.messages, cur.messages)
    return None if i is None else ("messages", i)


def find_break(prev: Request, cur: Request) -> PrefixBreak | None:
    """The first place ``cur`` stops extending ``prev``, or ``None`` when it extends it.

    Items are compared in prompt order (system, tools, messages), so the break named is the first
    item a prefix cache would miss. A stateful request (``previous_response_id``) or one whose items
    could not be read is not compared.
    """
    if not cur.comparable:
        return None
    where = _first_break(prev, cur)
    if where is None:
        if prev.model and cur.model and prev.model != cur.model:
            return PrefixBreak(
                request=cur.number,
                line=cur.line,
                section="model",
                item="model",
                cause="model_changed",
                detail=f"{prev.model} -> {cur.model}",
                shared_tokens=0,
                window_events=cur.window_events,
            )
        return None
    section, i = where
    if section == "system":
        item, cause, detail = _system_break(prev, cur, i)
    elif section == "tools":
        item, cause, detail = _tools_break(prev, cur, i)
    else:
        item, cause, detail = _messages_break(prev, cur, i)
    edited = cause == "message_edited"
    return PrefixBreak(
        request=cur.number,
        line=cur.line,
        section=section,
        item=item,
        cause=cause,
        detail=detail,
        shared_tokens=_shared_before(cur, section, i),
        window_events=cur.window_events,
        old_text=prev.messages[i].text if edited else "",
        new_text=cur.messages[i].text if edited else "",
    )


def _shared_before(cur: Request, section: str, i: int) -> int:
    shared = 0
    for name, items in (("system", cur.system), ("tools", cur.tools), ("messages", cur.messages)):
        if name == section:
            return shared + sum(x.tokens for x in items[:i])
        shared += sum(x.tokens for x in items)
    return shared


def shared_prefix_tokens(prev: Request, cur: Request) -> int:
    """Tokens at the front of ``cur`` that ``prev`` had too (what a prefix cache could serve)."""
    if not cur.comparable or (prev.model and cur.model and prev.model != cur.model):
        return 0
    where = _first_break(prev, cur)
    if where is None:
        return sum(x.tokens for x in cur.items[: len(prev.items)])
    return _shared_before(cur, *where)
