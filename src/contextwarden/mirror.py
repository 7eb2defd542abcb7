"""Mirror an external history into a session log: append only what is new, idempotently.

A framework or a proxy client owns its own message list and sends the whole of it on every model
call. :func:`mirror_history` makes the session log follow that list without the caller keeping
any count of what was already stored::

    from contextwarden.mirror import mirror_history

    events = get_codec("openai-chat").parse_request(body).events  # the client's full history
    result = mirror_history(store, session_id, events)            # call it on every model call
    result.appended        # the stored copies of the events that were new (often one or two)
    result.window_event    # a window event, when the list no longer extends the log

How it matches. Each message event (instruction, user, assistant, tool result) gets a digest of
its *content* (:func:`content_digest`): never its id, seq or timestamp, and not the fields a
request cannot carry back (an assistant's ``model`` and ``stop_reason``, an exit code, an
instruction's ``source``). The log's digests are kept per store and session and extended from the
log's tail, so a 2,000-message history costs one digest per message and no re-read of the log.

The outcomes, one per call:

- **extend** (or **unchanged**): the list starts with the log's messages; the rest is appended.
  Calling twice with the same list appends nothing the second time.
- **behind**: the list is a strict prefix of the log's messages: a writer with an older copy (a
  retried request, a concurrent worker). Nothing is recorded; a real rewind shows itself on the
  next call, when the list continues differently, and is then a reset.
- **trim**: the client dropped its oldest messages (keeping, or not, its leading system
  instructions) and kept the rest unchanged. A
  :class:`~contextwarden.log.events.Compaction` with ``details["mirror"] == "trim"`` moves the window
  start to the first message the client kept (never earlier than the current window start, so a
  planner compaction is not undone); the new tail is appended after it.
- **reset**: the client edited or rewound its history. A compaction with
  ``details["mirror"] == "reset"`` opens a new window, and the client's whole list is appended
  after it, so the window is the client's history and nothing the client dropped comes back.
  The log keeps the old version; nothing is deleted.

Both window events carry a one-line note as their summary and a task-state snapshot that keeps
the original goal pinned when the client kept the message that holds it.

Concurrency: the append uses the store's compare-and-append; on :class:`ConflictError` the log's
new tail is read and the match is redone, so two writers mirroring the same list append it once.

Only message kinds take part in matching. Events other code appends (usage reports, the planner's
window events, pins, steering) are never expected in the client's list and never cause a
divergence. A :class:`~contextwarden.log.events.UserMessage` appended directly, outside the mirrored
list, does: add user input through the history you mirror.
"""

from __future__ import annotations

import hashlib
import json
import struct
import threading
import weakref
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from .errors import ConflictError, SessionExists, SessionNotFound, StoreError, UsageError
from .log.codec import event_to_dict
from .log.events import (
    AssistantMessage,
    BinaryPart,
    Compaction,
    Event,
    EventKind,
    Instruction,
    JSONValue,
    OpaquePart,
    ToolResult,
    UserMessage,
    new_event_id,
)
from .log.store._protocol import SessionStore
from .window.state import TaskState, derive_state

MIRRORED_KINDS: frozenset[EventKind] = frozenset(
    {Instruction.kind, UserMessage.kind, AssistantMessage.kind, ToolResult.kind}
)
"""The event kinds a client's history consists of; only these are matched against the log."""

MIRROR_SUMMARIZER = "mirror"
"""The ``summarizer`` of the window events this module records."""

Outcome = Literal["unchanged", "extend", "behind", "trim", "reset"]

_MAX_ATTEMPTS = 16
_ENVELOPE = frozenset({"id", "session_id", "seq", "created_at", "parent_id"})
# Fields a request cannot send back as they were stored (the response's metadata), so they
# must not make a re-sent message look different.
_NOT_CONTENT = _ENVELOPE | {"model", "stop_reason", "exit_code", "source"}


@dataclass(frozen=True, kw_only=True)
class MirrorResult:
    """What one :func:`mirror_history` call did."""

    outcome: Outcome
    """``unchanged``, ``extend``, ``behind``, ``trim`` or ``reset`` (see the module docstring)."""
    appended: tuple[Event, ...] = ()
    """The stored copies of the history's events that were new, in order (window event excluded)."""
    window_event: Compaction | None = None
    """The stored window event recorded for a trim or a reset, if one was needed."""
    matched: int = 0
    """How many leading events of the history were already in the log."""
    last_seq: int = 0
    """The session's last seq after the call."""


def content_digest(event: Event) -> str:
    """A digest of what the event says, independent of id, seq, time and response metadata."""
    texts: list[str] = [event.kind]
    if isinstance(event, UserMessage):
        texts += [event.text, _canonical([_parts(event.parts), _opaque(event.opaque)])]
    elif isinstance(event, AssistantMessage):
        calls = [[c.id, c.name, c.arguments] for c in event.tool_calls]
        thinking = [[b.text, b.signature] for b in event.thinking]
        texts += [event.text, _canonical([calls, thinking, _opaque(event.opaque)])]
    elif isinstance(event, ToolResult):
        texts += [event.output, _canonical([event.call_id, event.tool_name, event.is_error, _parts(event.parts)])]
    elif isinstance(event, Instruction):
        texts += [event.role, event.text]
    else:
        texts.append(_canonical({k: v for k, v in event_to_dict(event).items() if k not in _NOT_CONTENT}))
    # Large texts are hashed as they are (no escaping pass); the lengths up front keep the
    # concatenation unambiguous. Lone surrogates (undecodable bytes) survive surrogatepass.
    data = [t.encode("utf-8", "surrogatepass") for t in texts]
    h = hashlib.blake2b(struct.pack(f"<{len(data)}Q", *map(len, data)), digest_size=16)
    for chunk in data:
        h.update(chunk)
    return h.hexdigest()


def _parts(parts: Iterable[BinaryPart]) -> list[list[str]]:
    return [[p.media_type, p.name, hashlib.blake2b(p.data, digest_size=16).hexdigest()] for p in parts]


def _opaque(items: Iterable[OpaquePart]) -> list[list[object]]:
    # provider items kept verbatim (encrypted reasoning...) are content the client sends back
    return [[item.format, item.position, item.raw_json] for item in items]


def mirror_history(
    store: SessionStore,
    session_id: str,
    history: Sequence[Event],
    *,
    exact: bool = False,
    digests: Sequence[str] | None = None,
) -> MirrorResult:
    """Make the session's log follow ``history``, the client's full list of events, in order.

    ``exact`` says the list is the authority even when it is shorter than the log: a strict prefix
    is then a rewind (a reset), not an older copy (``behind``), and an empty list empties the
    window. Session backends that pop items use it; clients that may resend stale copies do not.
    ``digests``, when given, are the :func:`content_digest` of each event of ``history`` (a caller
    that already computed them, as the proxy does for session identity, saves the second pass).

    Creates the session when it does not exist. An empty ``history`` changes nothing (unless
    ``exact``). Events of
    other kinds than :data:`MIRRORED_KINDS` in ``history`` are refused with a ``UsageError``.
    Appended events get fresh ids, so a caller may pass the same objects on every call.
    """
    for event in history:
        if event.kind not in MIRRORED_KINDS:
            raise UsageError(
                f"mirror_history takes message events ({', '.join(sorted(MIRRORED_KINDS))}), got {event.kind!r}"
            )
    if digests is None:
        digests = [content_digest(e) for e in history]
    elif len(digests) != len(history):
        raise UsageError(f"mirror_history got {len(digests)} digests for {len(history)} events")
    chain = _chains.get(store, session_id)
    with chain.lock:
        for _ in range(_MAX_ATTEMPTS):
            chain.refresh(store)
            try:
                return _sync(store, chain, history, digests, exact=exact)
            except ConflictError:
                continue  # another writer appended first: read its tail and match again
    raise ConflictError(session_id, chain.last_seq, store.get_session(session_id).last_seq)


# --------------------------------------------------------------------------- the log's chain


@dataclass
class _Chain:
    """The log's message digests for one session, extended from the log's tail."""

    session_id: str
    digests: list[str] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)
    seqs: list[int] = field(default_factory=list)
    event_ids: list[str] = field(default_factory=list)
    last_seq: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def refresh(self, store: SessionStore) -> None:
        """Fold in the events appended since the last look (all of them on the first)."""
        try:
            info = store.get_session(self.session_id)
        except SessionNotFound:
            try:
                info = store.create_session(self.session_id)
            except (SessionExists, StoreError):
                # another writer created it first (PostgresStore reports that race as a
                # unique-key StoreError); anything else still fails on the read below
                info = store.get_session(self.session_id)
        if info.last_seq < self.last_seq:  # the session was deleted and recreated
            self.digests, self.kinds, self.seqs, self.event_ids, self.last_seq = [], [], [], [], 0
        if info.last_seq > self.last_seq:
            for event in store.iter_events(self.session_id, since_seq=self.last_seq):
                self.fold(event)

    def fold(self, event: Event) -> None:
        """Take one stored event into the chain."""
        self.last_seq = max(self.last_seq, event.seq)
        if event.kind in MIRRORED_KINDS:
            self.digests.append(content_digest(event))
            self.kinds.append(event.kind)
            self.seqs.append(event.seq)
            self.event_ids.append(event.id)
        else:
            span = _dropped_span(event, self.seqs)
            if span is not None:
                for column in (self.digests, self.kinds, self.seqs, self.event_ids):
                    del column[span]


def _dropped_span(event: Event, seqs: Sequence[int]) -> slice | None:
    """Which of the mirrored messages (given by seq) a mirror window event drops, if it is one."""
    if not isinstance(event, Compaction) or event.summarizer != MIRROR_SUMMARIZER:
        return None
    mode = event.details.get("mirror")
    keep_from = event.details.get("from_seq")
    lead = event.details.get("kept_leading", 0)
    if mode == "reset":
        return slice(0, len(seqs))
    if mode == "trim" and isinstance(keep_from, int) and isinstance(lead, int):
        return slice(lead, next((i for i, s in enumerate(seqs) if s >= keep_from), len(seqs)))
    return None


def mirrored_events(store: SessionStore, session_id: str) -> list[Event]:
    """The history the log holds for the client now: what its next full list should start with.

    The mirrored message events in order, with what trims and resets dropped left out. Reads the
    whole log (a session backend's ``get_items`` needs it once per run, not once per call).
    """
    events: list[Event] = []
    for event in store.iter_events(session_id):
        if event.kind in MIRRORED_KINDS:
            events.append(event)
        else:
            span = _dropped_span(event, [e.seq for e in events])
            if span is not None:
                del events[span]
    return events


class _Chains:
    """One chain per (store, session), kept as long as the store object lives."""

    def __init__(self) -> None:
        self._by_store: weakref.WeakKeyDictionary[SessionStore, dict[str, _Chain]] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    def get(self, store: SessionStore, session_id: str) -> _Chain:
        with self._lock:
            sessions = self._by_store.setdefault(store, {})
            chain = sessions.get(session_id)
            if chain is None:
                chain = sessions[session_id] = _Chain(session_id)
            return chain


_chains = _Chains()


# --------------------------------------------------------------------------- matching


def _sync(
    store: SessionStore, chain: _Chain, history: Sequence[Event], digests: Sequence[str], *, exact: bool
) -> MirrorResult:
    log = chain.digests
    if not history and not (exact and log):
        return MirrorResult(outcome="unchanged", last_seq=chain.last_seq)
    common = _common_prefix(log, digests)
    if common == len(log):
        new = history[common:]
        appended = _append(store, chain, [_fresh(e) for e in new]) if new else []
        return MirrorResult(
            outcome="extend" if new else "unchanged",
            appended=tuple(appended),
            matched=common,
            last_seq=chain.last_seq,
        )
    if common == len(digests) and not exact:
        return MirrorResult(outcome="behind", matched=common, last_seq=chain.last_seq)
    start = _trim_start(chain, digests, common)
    if start is not None:
        return _trim(store, chain, history, lead=common, start=start)
    return _reset(store, chain, history, common)


def _common_prefix(log: Sequence[str], client: Sequence[str]) -> int:
    n = min(len(log), len(client))
    if log[:n] == client[:n]:  # the usual case, one C-level comparison
        return n
    return next(i for i in range(n) if log[i] != client[i])


def _trim_start(chain: _Chain, client: Sequence[str], lead: int) -> int | None:
    """Where the log continues unchanged in the client's list after its first ``lead`` messages.

    A trim keeps at most the leading system instructions (they live in the window's task-state
    snapshot) and then a contiguous tail of the log; anything else is an edit.
    """
    if lead >= len(client) or any(k != Instruction.kind for k in chain.kinds[:lead]):
        return None
    log, first = chain.digests, client[lead]
    for start in range(lead + 1, len(log)):
        if log[start] == first:
            kept = len(log) - start
            if kept <= len(client) - lead and log[start:] == client[lead : lead + kept]:
                return start
    return None


def _trim(store: SessionStore, chain: _Chain, history: Sequence[Event], *, lead: int, start: int) -> MirrorResult:
    info = store.get_session(chain.session_id)
    cut = chain.seqs[start]
    matched = lead + len(chain.digests) - start
    new = [_fresh(e) for e in history[matched:]]
    window_event: Compaction | None = None
    batch: list[Event] = list(new)
    if cut > info.window_start_seq:
        window = store.read_window(chain.session_id)
        # the system the window opens with is exactly the instructions the client kept
        kept_system = tuple(e.text for e in history[:lead] if isinstance(e, Instruction))
        state = replace(_state_before(window, cut), system=kept_system)
        note = (
            f"The client dropped {start - lead} of its oldest messages (log events up to {cut - 1}); "
            "the session log keeps them."
        )
        details: dict[str, JSONValue] = {"mirror": "trim", "from_seq": cut, "kept_leading": lead}
        window_event = _window_event(note, first_kept_seq=cut, covered_to=cut - 1, state=state, details=details)
        batch.insert(0, window_event)
    stored = _append(store, chain, batch)
    event = stored[0] if window_event is not None else None
    return MirrorResult(
        outcome="trim",
        appended=tuple(stored[1:] if event is not None else stored),
        window_event=event if isinstance(event, Compaction) else None,
        matched=matched,
        last_seq=chain.last_seq,
    )


def _reset(store: SessionStore, chain: _Chain, history: Sequence[Event], common: int) -> MirrorResult:
    window = store.read_window(chain.session_id)
    kept_ids = set(chain.event_ids[:common])
    state = _state_before(window, chain.last_seq + 1)
    # Keep the goal pinned only when the client still holds the message it came from.
    if state.goal_event_id and state.goal_event_id in kept_ids:
        anchors = TaskState(
            goal=state.goal,
            goal_event_id=state.goal_event_id,
            constraints=state.constraints,
            latest_steering=state.latest_steering,
        )
    else:
        anchors = TaskState()
    note = (
        f"The client changed its history at message {common + 1} (it edited, trimmed or rewound it); "
        "this window starts over from the client's copy. The earlier version stays in the session log."
    )
    opening = _window_event(
        note,
        first_kept_seq=chain.last_seq + 2,
        covered_to=chain.last_seq,
        state=anchors,
        details={"mirror": "reset", "from_seq": chain.last_seq + 2, "diverged_at": common},
    )
    stored = _append(store, chain, [opening, *(_fresh(e) for e in history)])
    event = stored[0]
    return MirrorResult(
        outcome="reset",
        appended=tuple(stored[1:]),
        window_event=event if isinstance(event, Compaction) else None,
        matched=0,
        last_seq=chain.last_seq,
    )


def _state_before(window: Sequence[Event], seq: int) -> TaskState:
    """The task state of the window's events before ``seq``, from the window's own snapshot on."""
    opening = next((e for e in reversed(window) if isinstance(e, Compaction)), None)
    base = TaskState.from_dict(opening.state) if opening is not None else None
    return derive_state((e for e in window if e.seq < seq and not isinstance(e, Compaction)), base=base)


def _window_event(
    note: str, *, first_kept_seq: int, covered_to: int, state: TaskState, details: dict[str, JSONValue]
) -> Compaction:
    return Compaction(
        summary=note,
        first_kept_seq=first_kept_seq,
        covered_to_seq=covered_to,
        summarizer=MIRROR_SUMMARIZER,
        state=state.to_dict(),
        details=details,
    )


def _append(store: SessionStore, chain: _Chain, events: Sequence[Event]) -> list[Event]:
    stored = store.append(chain.session_id, events, expected_last_seq=chain.last_seq)
    for event in stored:
        chain.fold(event)
    return stored


def _fresh(event: Event) -> Event:
    """A copy to append: a new id (ids are unique across the store) and no position yet."""
    return replace(event, id=new_event_id(), session_id="", seq=0)


def _canonical(value: object) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=True, separators=(",", ":"), default=str)
