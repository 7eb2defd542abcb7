"""What a proxied agent can ask of its own session log: recall, search, and a view of the window.

The proxy keeps every tool output in full in the session log; these read it back for the MCP
server (:mod:`.mcp`). A recall id is the artifact id placeholders and truncation markers name: the
event id of the tool output (or message) in the log. The log is append-only and a compaction adds
events without changing any, so an id holds for the life of the session, across restarts and
compactions.

Access is by capability: the MCP server cannot see which credential its caller uses, so knowing an
id is what proves the right to it. Event ids carry 74 random bits (:func:`~contextwarden.log.events.new_event_id`);
the proxy writes them only into the requests of the session that holds them, and no endpoint
shows them, so a caller of another credential never sees one and cannot guess one. The search and
window tools take any recall id of a conversation as the proof of access to its session. Where the
MCP server can read the agent's own credential (``contextwarden mcp --credential-env NAME``), it
also serves only the sessions the proxy filed under that credential's namespace, so an id that
reached another credential's agent still recalls nothing there.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass

from ..errors import UsageError
from ..log.events import AssistantMessage, Event, ToolCall, ToolResult, UserMessage
from ..log.store import SessionStore
from ..window.items import REDUCED
from ..window.policies.placeholders import render_call
from .identity import namespace

RECALL_NAME = "recall"
"""The recall tool's own name (a client may list it under a longer one: ``mcp__contextwarden__recall``)."""

RECALL_DESCRIPTION = (
    "The original content a contextwarden placeholder or truncation marker stands for, byte for byte: the"
    " whole output, or lines start_line..end_line (1-based, inclusive)."
)
"""The recall tool's description; the proxy knows the tool in a client's tool list by its first sentence."""

SERVER_INSTRUCTIONS = (
    "contextwarden keeps every tool output of this conversation in full. Where an earlier output was"
    " replaced by a placeholder or cut by a marker, call recall with the id it names to get the original"
    " back; search_history finds lines of the conversation's history; window shows what the context holds."
)
"""What the server tells a client about itself; a client that defers MCP tools lists the server by it
(Codex: ``- mcp__contextwarden: contextwarden keeps every tool output...``), and the proxy knows the
server in such a listing by its first sentence."""

MAX_ANSWER_CHARS = 100_000
"""The longest text one recall returns whole (about 25,000 tokens, what MCP clients such as Claude
Code pass on by default); a longer output is recalled by line ranges."""

MAX_SEARCH_LINES = 50
"""The most matching lines one search returns."""

_ID = re.compile(r"[0-9a-f]{32}")
_LINE_CHARS = 240
_SPEAKER = {"user": "user", "assistant": "assistant"}
_RECALLABLE = (ToolResult, UserMessage, AssistantMessage)


@dataclass(frozen=True)
class Credential:
    """The agent's own credential, as the proxy namespaces its sessions by it."""

    secret: str
    """The key itself (an API key or token)."""
    salt: str
    """The proxy's salt (``CONTEXTWARDEN_PROXY_SALT``)."""

    def session_prefixes(self) -> tuple[str, ...]:
        """How the ids of its sessions start: clients send the key bare or as ``Authorization: Bearer <key>``."""
        return tuple(f"px-{namespace(sent, self.salt)}-" for sent in (self.secret, f"Bearer {self.secret}"))


class RecallError(UsageError):
    """A recall, search or window request that cannot be answered (the message says why and what to do)."""


@dataclass(frozen=True)
class _Stored:
    """One recallable event: its text as first recorded and what to call it."""

    text: str
    label: str


class History:
    """The session logs behind one proxy, as the MCP tools read them."""

    def __init__(
        self, store: SessionStore, *, max_answer_chars: int = MAX_ANSWER_CHARS, credential: Credential | None = None
    ) -> None:
        """Read ``store``; return no recall answer longer than ``max_answer_chars``.

        ``credential`` limits every tool to the sessions the proxy filed under that credential;
        ``None``: the recall id is the only proof.
        """
        self.store = store
        self.max_answer_chars = max_answer_chars
        self._prefixes = credential.session_prefixes() if credential is not None else ("",)
        self._where: dict[str, str] = {}
        """Recall id -> the session holding it, filled as sessions grow (each event is read once)."""
        self._indexed: dict[str, int] = {}
        """Session -> the last seq indexed."""
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ sessions

    def session_of(self, id: str) -> str:
        """The session holding recall id ``id`` (:class:`RecallError` if it is malformed or no session holds it)."""
        rid = id.strip()
        if not _ID.fullmatch(rid):
            raise RecallError(
                f"{id!r} is not a recall id: recall ids are the 32 hex digits a placeholder or truncation"
                " marker of this conversation names"
            )
        with self._lock:
            found = self._where.get(rid)
            if found is None:
                self._index()
                found = self._where.get(rid)
        if found is None:
            whose = "of this credential " if self._prefixes != ("",) else ""
            raise RecallError(f"no session {whose}holds {rid}; use an id exactly as this conversation names it")
        return found

    def _index(self) -> None:
        """Index what the sessions appended since the last look (the caller holds the lock)."""
        for info in self.store.list_sessions():
            if not info.id.startswith(self._prefixes):  # another credential's session: never read
                continue
            since = self._indexed.get(info.id, 0)
            if info.last_seq <= since:
                continue
            for event in self.store.iter_events(info.id, since_seq=since):
                if isinstance(event, _RECALLABLE):
                    self._where.setdefault(event.id, info.id)
            self._indexed[info.id] = info.last_seq

    # ------------------------------------------------------------------ recall

    def recall(self, id: str, start_line: int | None = None, end_line: int | None = None) -> str:
        """The content recall id ``id`` stands for, byte for byte, whole or lines ``start_line``..``end_line``.

        Lines are 1-based and inclusive, split at newlines only, each returned with its own line
        ending; an ``end_line`` past the end stops at the last line. Raises :class:`RecallError`
        for an unknown id, a malformed range, or an answer over the size limit.
        """
        id = id.strip()
        stored = self._stored(self.session_of(id), id)
        text = stored.text
        if start_line is None and end_line is None:
            if len(text) > self.max_answer_chars:
                raise RecallError(self._too_long(id, stored, text))
            return text
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        total = len(lines)
        first = 1 if start_line is None else start_line
        last = total if end_line is None else end_line
        if first < 1 or last < 1:
            raise RecallError(f"line numbers start at 1 (asked for {first}-{last})")
        if first > total:
            raise RecallError(f"{id} ({stored.label}) has {total:,} lines; start_line {first} is past its end")
        if last < first:
            raise RecallError(f"end_line {last} is before start_line {first}")
        last = min(last, total)
        ends_with_newline = text.endswith("\n") or last < total
        part = "\n".join(lines[first - 1 : last]) + ("\n" if ends_with_newline else "")
        if len(part) > self.max_answer_chars:
            raise RecallError(self._too_long(id, stored, part, first=first, last=last))
        return part

    def _too_long(self, id: str, stored: _Stored, text: str, *, first: int = 1, last: int | None = None) -> str:
        lines = text.count("\n") + (0 if text.endswith("\n") else 1)
        per_line = max(1, len(text) // max(lines, 1))
        fits = max(1, self.max_answer_chars // per_line - 1)
        return (
            f"{id} ({stored.label}) lines {first}-{last or lines} are {len(text):,} characters, over the"
            f" {self.max_answer_chars:,} one answer may hold; recall it by line ranges, for instance"
            f" start_line={first}, end_line={first + fits - 1}"
        )

    def _stored(self, session_id: str, id: str) -> _Stored:
        events = self.store.read(session_id)
        event = next((e for e in events if e.id == id), None)
        if isinstance(event, ToolResult):
            call = _call_of(events, event.call_id)
            return _Stored(text=event.output, label=f"output of {render_call(call, event.tool_name)}")
        if isinstance(event, (UserMessage, AssistantMessage)):
            return _Stored(text=event.text, label=f"{_SPEAKER[event.kind]} message at seq {event.seq}")
        raise RecallError(f"{id} names no tool output or message of this session")

    # ------------------------------------------------------------------ search

    def search(self, session: str, query: str, limit: int = 20) -> str:
        """Lines of the session's log (tool outputs, messages) holding every word of ``query``, with their ids."""
        session_id = self.session_of(session)
        words = [w.lower() for w in query.split()]
        if not words:
            raise RecallError("the query is empty: pass the words to look for")
        if not 1 <= limit <= MAX_SEARCH_LINES:
            raise RecallError(f"limit must be between 1 and {MAX_SEARCH_LINES} (got {limit})")
        events = self.store.read(session_id)
        calls = {c.id: c for e in events if isinstance(e, AssistantMessage) for c in e.tool_calls}
        found: list[str] = []
        matched = 0
        for event, text, label in _searchable(events, calls):
            for number, line in enumerate(text.split("\n"), start=1):
                lowered = line.lower()
                if all(w in lowered for w in words):
                    matched += 1
                    if len(found) < limit:
                        shown = line if len(line) <= _LINE_CHARS else line[: _LINE_CHARS - 1] + "…"
                        found.append(f"{event.id} line {number} ({label}): {shown}")
        if not found:
            return f"search_history {query!r}: no line of this session holds every word."
        head = f"search_history {query!r}: {matched:,} matching line{'s' if matched != 1 else ''}"
        head += f", the first {len(found)}" if matched > len(found) else ""
        return head + " (recall(id, start_line, end_line) returns them in full)\n" + "\n".join(found)


def window_view(history: History, session: str) -> str:
    """What the session's current window holds and why: sections, window events, standing reductions, items."""
    from ..governance.inspection import inspect_session

    view = inspect_session(history.store, history.session_of(session))
    ctx = view.context
    lines = [
        f"window of request {view.turn} ({ctx.model or 'model unknown'}): {ctx.total_tokens:,} tokens"
        + (f" of {view.window:,} ({view.percent(ctx.total_tokens):.1f}%)" if view.window else ""),
        "sections: " + ", ".join(f"{name} {tokens:,}" for name, tokens in view.sections.items() if tokens),
    ]
    if view.window_events:
        lines.append("window events: " + "; ".join(view.window_events))
    lines += [f"{decision.action} {decision.target}: {decision.reason}" for decision in view.standing]
    reduced = [item for item in view.items if item.state in {state.value for state in REDUCED}]
    lines.append(f"items: {len(view.items):,} ({len(reduced):,} reduced)")
    for item in view.items:
        preview = " ".join(item.preview.split())[:100]
        lines.append(
            f"  #{item.index} {item.source} {item.role} {item.section} {item.state} {item.tokens:,} tok: {preview}"
        )
    return "\n".join(lines)


def _call_of(events: Iterable[Event], call_id: str) -> ToolCall | None:
    return next(
        (c for e in events if isinstance(e, AssistantMessage) for c in e.tool_calls if c.id == call_id),
        None,
    )


def _searchable(events: Iterable[Event], calls: dict[str, ToolCall]) -> Iterable[tuple[Event, str, str]]:
    for event in events:
        if isinstance(event, ToolResult):
            yield event, event.output, f"output of {render_call(calls.get(event.call_id), event.tool_name)}"
        elif isinstance(event, (UserMessage, AssistantMessage)) and event.text:
            yield event, event.text, f"{_SPEAKER[event.kind]} message"
