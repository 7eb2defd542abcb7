"""The conversation as labelled text for a summarizer, with per-item caps and a token budget.

A summarizer must read the conversation as a *record*, not continue it, so every message becomes
a labelled entry (``[user #12]``, ``[assistant thinking #13]``, ``[tool call #13 read_file]``,
``[tool result #14 read_file, error]``) instead of a chat turn. Each entry is capped (cut in the
middle, with a marker saying how much went), and the whole transcript is fitted to a token budget
*before* it is sent, so a summary request can never overflow the summarizer's own window:

1. render with the first cap of :data:`ITEM_CAPS`; if too big, try the next, smaller cap;
2. still too big at the smallest cap: drop the oldest entries (one marker says how many).

Entries come from the window's items (what the model saw) or, for re-grounding, straight from
the raw events of the log (:func:`entries_from_events`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from ...context import Message
from ...log.events import AssistantMessage, Event, Instruction, JSONValue, Pin, Steering, ToolResult, UserMessage
from ...tokens import TokenCounter
from ...window.items import REDUCED, ContextItem
from ...window.outcome import output_failed, result_failed

EntryLabel = Literal[
    "user", "assistant", "assistant thinking", "tool call", "tool result", "instruction", "steering", "pin"
]
"""What a transcript entry is; the summarizers and truth checks read entries by it."""

ITEM_CAPS: tuple[int, ...] = (2_000, 1_000, 500, 250, 120)
"""Per-entry token caps tried in order until the transcript fits its budget."""


@dataclass(frozen=True, kw_only=True)
class Entry:
    """One labelled piece of the transcript."""

    seq: int
    """Seq of the event it came from (0 when unknown)."""
    label: EntryLabel
    """What it is."""
    text: str
    """The content, uncapped."""
    name: str = ""
    """The tool's name for tool calls and results."""
    error: bool = False
    """For tool results: whether the tool failed."""
    call_id: str = ""
    """For tool calls and results: the call's id, which pairs a result with its call."""
    shown: bool = True
    """False when the window shows a placeholder in its place: ``text`` is the placeholder, not the output."""

    def header(self) -> str:
        """The entry's label line, for example ``[tool result #14 run_tests, error]``."""
        where = f" #{self.seq}" if self.seq else ""
        name = f" {self.name}" if self.name else ""
        flag = ", error" if self.error else ""
        return f"[{self.label}{where}{name}{flag}]"


@dataclass(frozen=True, kw_only=True)
class Transcript:
    """A transcript fitted to a budget."""

    text: str
    """The rendered transcript."""
    tokens: int
    """Its size by the counter used to fit it."""
    item_cap: int
    """The per-entry cap that made it fit."""
    dropped: int = 0
    """Oldest entries left out because even the smallest cap did not fit."""
    entries: int = 0
    """Entries included."""


_PATH_KEYS = ("path", "file", "file_path", "filename", "target", "command", "cmd", "pattern", "query", "url")


_SHELL_WRAPPER = (("bash", "-lc"), ("bash", "-c"), ("sh", "-c"), ("zsh", "-lc"))
"""An argv that only wraps the real command in a shell (Codex sends ``["bash", "-lc", "make test"]``)."""


def _argument(text: str, key: str) -> str | None:
    """The ``key`` argument of a tool call's JSON arguments as one string (an argv joined), or None."""
    try:
        raw = json.loads(text)
    except json.JSONDecodeError:
        m = re.search(rf'"{key}"\s*:\s*"((?:[^"\\]|\\.)*)"', text)
        return m.group(1) if m else None
    value = raw.get(key) if isinstance(raw, dict) else None
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        argv = list(value)
        if tuple(argv[:2]) in _SHELL_WRAPPER and len(argv) == 3:
            argv = argv[2:]
        return " ".join(argv)
    return value if isinstance(value, str) else None


def call_label(entry: Entry) -> str:
    """``read_file src/a.py`` from a tool-call entry (its most telling argument, when there is one).

    The argument is decoded (no JSON escapes) and cut to its first line (an edit's body is not a
    label); a command that already starts with the tool's name (``curl curl ...``) is not prefixed.
    """
    for key in _PATH_KEYS:
        value = _argument(entry.text, key)
        if value is None or not value.strip():
            continue
        lines = value.strip().splitlines()
        first = lines[0][:160] + (" …" if len(lines) > 1 or len(lines[0]) > 160 else "")
        return first if first.split(" ", 1)[0] == entry.name else f"{entry.name} {first}"
    return entry.name


class PendingCalls:
    """Tool calls waiting for their results: a result takes its own call, by id.

    Entries without ids (a transcript that has none) pair by order per tool name instead.
    """

    def __init__(self) -> None:
        self._by_id: dict[str, str] = {}
        self._by_name: dict[str, list[str]] = {}

    def add(self, call: Entry, value: str) -> None:
        """Remember ``value`` (a label, a name) for the call ``call``."""
        if call.call_id:
            self._by_id[call.call_id] = value
        else:
            self._by_name.setdefault(call.name, []).append(value)

    def take(self, result: Entry) -> str | None:
        """The value of the call ``result`` answers (None when that call is not pending)."""
        if result.call_id:
            return self._by_id.pop(result.call_id, None)
        queue = self._by_name.get(result.name)
        return queue.pop(0) if queue else None

    def __len__(self) -> int:
        return len(self._by_id) + sum(len(q) for q in self._by_name.values())


def _arguments(arguments: dict[str, JSONValue]) -> str:
    raw = arguments.get("_raw")
    if len(arguments) == 1 and isinstance(raw, str):
        return raw
    return json.dumps(arguments, ensure_ascii=False, sort_keys=True)


def _message_entries(
    seq: int, message: Message, *, kind: str, failed: bool | None = None, shown: bool = True
) -> list[Entry]:
    role = message.role
    if role == "tool":
        error = output_failed(message.text, is_error=message.is_error, exit_code=None) if failed is None else failed
        return [
            Entry(
                seq=seq,
                label="tool result",
                text=message.text,
                name=message.tool_name,
                error=error,
                call_id=message.tool_call_id,
                shown=shown,
            )
        ]
    if role == "assistant":
        out = [Entry(seq=seq, label="assistant thinking", text=b.text) for b in message.thinking if b.text]
        if message.text:
            out.append(Entry(seq=seq, label="assistant", text=message.text))
        out += [
            Entry(seq=seq, label="tool call", text=_arguments(c.arguments), name=c.name, call_id=c.id)
            for c in message.tool_calls
        ]
        return out
    if role in ("system", "developer"):
        return [Entry(seq=seq, label="instruction", text=message.text)]
    label: EntryLabel = "steering" if kind == "steering" else "pin" if kind == "pin" else "user"
    return [Entry(seq=seq, label=label, text=message.text)]


def entries_from_items(items: Iterable[ContextItem], *, failed: Collection[str] | None = None) -> list[Entry]:
    """Entries for window items, as the model saw them (truncated, masked or not).

    ``failed``: ids of the tool results that failed, read from their events (a window item does not
    keep the exit code); None judges a result by its text and error flag alone.
    """
    out: list[Entry] = []
    for item in items:
        flag = None if failed is None or item.kind != "tool_result" else bool(set(item.source_ids) & set(failed))
        shown = item.state not in REDUCED
        out += _message_entries(item.recency, item.message, kind=item.kind, failed=flag, shown=shown)
    return out


def entries_from_events(events: Iterable[Event]) -> list[Entry]:
    """Entries for raw events of the log (re-grounding reads these, not an earlier summary)."""
    out: list[Entry] = []
    for e in events:
        if isinstance(e, UserMessage):
            out.append(Entry(seq=e.seq, label="user", text=e.text))
        elif isinstance(e, Steering):
            out.append(Entry(seq=e.seq, label="steering", text=e.text))
        elif isinstance(e, Pin):
            out.append(Entry(seq=e.seq, label="pin", text=e.text))
        elif isinstance(e, Instruction):
            out.append(Entry(seq=e.seq, label="instruction", text=e.text))
        elif isinstance(e, AssistantMessage):
            message = Message(role="assistant", text=e.text, thinking=e.thinking, tool_calls=e.tool_calls)
            out += _message_entries(e.seq, message, kind="assistant")
        elif isinstance(e, ToolResult):
            out.append(
                Entry(
                    seq=e.seq,
                    label="tool result",
                    text=e.output,
                    name=e.tool_name,
                    error=result_failed(e),
                    call_id=e.call_id,
                )
            )
    return out


def cap_text(text: str, max_tokens: int, counter: TokenCounter) -> str:
    """``text`` cut in the middle to about ``max_tokens`` tokens, with a marker naming the cut."""
    tokens = counter.count(text)
    if tokens <= max_tokens:
        return text
    keep = max(int(len(text) * max_tokens / tokens) - 60, 40)
    head, tail = text[: keep // 2], text[len(text) - keep // 2 :]
    return f"{head}\n[... about {tokens - max_tokens} tokens omitted ...]\n{tail}"


def render_entry(entry: Entry, cap: int, counter: TokenCounter) -> str:
    """One entry as text: its label line, then its content capped to ``cap`` tokens."""
    return f"{entry.header()}\n{cap_text(entry.text.strip(), cap, counter)}"


def render_entries(entries: Sequence[Entry], cap: int, counter: TokenCounter) -> str:
    """Entries as one transcript, blank-line separated."""
    return "\n\n".join(render_entry(e, cap, counter) for e in entries)


def fit_transcript(entries: Sequence[Entry], *, budget: int, counter: TokenCounter) -> Transcript:
    """Render ``entries`` within ``budget`` tokens: smaller caps first, then drop the oldest."""
    if budget <= 0:
        return Transcript(text="", tokens=0, item_cap=0, dropped=len(entries))
    rendered: list[str] = []
    for cap in ITEM_CAPS:
        rendered = [render_entry(e, cap, counter) for e in entries]
        text = "\n\n".join(rendered)
        tokens = counter.count(text)
        if tokens <= budget:
            return Transcript(text=text, tokens=tokens, item_cap=cap, entries=len(entries))
    # Even the smallest cap is too big: keep the newest entries that fit, oldest go first.
    cap = ITEM_CAPS[-1]
    kept: list[str] = []
    used = 0
    for piece in reversed(rendered):
        size = counter.count(piece) + 2
        if used + size > budget - 30:
            break
        kept.append(piece)
        used += size
    dropped = len(rendered) - len(kept)
    marker = f"[... {dropped} older entries left out to fit the summarizer's window ...]"
    text = "\n\n".join([marker, *reversed(kept)])
    return Transcript(text=text, tokens=counter.count(text), item_cap=cap, dropped=dropped, entries=len(kept))


def chunk_entries(
    entries: Sequence[Entry], *, budget: int, counter: TokenCounter, cap: int = ITEM_CAPS[1]
) -> list[list[Entry]]:
    """Split ``entries`` into consecutive chunks whose rendering fits ``budget`` tokens each.

    Used by re-grounding when the raw events do not fit one summarizer call. An entry larger than
    the budget on its own is still capped, so every chunk holds at least one entry.
    """
    chunks: list[list[Entry]] = []
    current: list[Entry] = []
    used = 0
    effective = max(min(cap, budget - 40), 40)
    for entry in entries:
        size = counter.count(render_entry(entry, effective, counter)) + 2
        if current and used + size > budget:
            chunks.append(current)
            current, used = [], 0
        current.append(entry)
        used += size
    if current:
        chunks.append(current)
    return chunks
