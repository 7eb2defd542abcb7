"""What every store shares: argument checks, placing appended events, fork lineage, window starts.

The stores differ only in where rows live; the rules (gapless seq, window start from the latest
compaction, a fork reading its parent's prefix without a copy) are written once, here.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import NamedTuple, Protocol, runtime_checkable

from ...errors import CodecError, SessionNotFound, StoreError, UsageError
from ..codec import dumps_event, loads_event
from ..events import EVENT_TYPES, Compaction, Event, ForkMarker, JSONValue, with_position
from ._protocol import SessionInfo, SessionStore

_ID_MAX = 500
PAGE_SIZE = 500
"""Rows fetched per round trip when streaming a session."""


def new_session_id() -> str:
    """Return a fresh session id."""
    return uuid.uuid4().hex


def check_id(value: object, what: str = "session id") -> str:
    """Return ``value`` if it is a usable id; ``UsageError`` otherwise.

    Ids go into SQL text columns, file names and terminal tables, so control characters, NUL and
    lone surrogates (which PostgreSQL and UTF-8 reject) are refused here rather than deep in a driver.
    """
    if not isinstance(value, str) or not value or len(value) > _ID_MAX or not value.isprintable():
        raise UsageError(f"invalid {what} {value!r}: use 1-{_ID_MAX} printable characters (no control characters)")
    return value


def check_new_session_id(value: object, what: str = "session id") -> str:
    r"""Return ``value`` if a new session may take it as its id; ``UsageError`` otherwise.

    On top of :func:`check_id`: an id names a session by itself, in a terminal and as a file name
    (``replay --dump-requests``), so it is not blank, has no leading or trailing whitespace, no path
    separator (``/``, ``\``) and is not ``.`` or ``..``. Existing sessions keep whatever id they
    have; only new ones (created, forked, imported) are held to this.
    """
    sid = check_id(value, what)
    if sid != sid.strip() or "/" in sid or "\\" in sid or sid in (".", ".."):
        raise UsageError(f"invalid {what} {sid!r}: no leading or trailing spaces, no '/' or '\\', and not '.' or '..'")
    return sid


def check_seq(value: object, what: str) -> int:
    """Return ``value`` if it is a non-negative int; ``UsageError`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise UsageError(f"{what} must be an integer >= 0, got {value!r}")
    return value


def new_session_info(
    session_id: str | None, metadata: dict[str, JSONValue] | None, parent_session_id: str | None
) -> SessionInfo:
    """Check ``create_session``'s arguments and return the new session's header (a new id if none)."""
    sid = check_new_session_id(session_id if session_id is not None else new_session_id())
    if parent_session_id is not None:
        check_id(parent_session_id, "parent session id")
    meta = loads_metadata(dumps_metadata(metadata))
    return SessionInfo(id=sid, created_at=time.time(), metadata=meta, parent_session_id=parent_session_id)


def dumps_metadata(metadata: dict[str, JSONValue] | None) -> str:
    """Encode session metadata as ASCII JSON; ``UsageError`` if it is not JSON."""
    try:
        return json.dumps(metadata or {}, ensure_ascii=True, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise UsageError(f"session metadata must be JSON-serializable: {exc}") from None


def loads_metadata(text: str) -> dict[str, JSONValue]:
    """Decode session metadata stored by :func:`dumps_metadata`."""
    value = json.loads(text)
    if not isinstance(value, dict):
        raise StoreError(f"stored session metadata is not an object: {text[:80]!r}")
    return value


Row = tuple[str, int, str, str, str]
"""``(session_id, seq, id, kind, data)``: the column order of every events table."""


Prepared = tuple[Event, Row]
"""An event placed at its seq (the stored copy, session id and seq assigned) and its row.

A plain tuple, not a NamedTuple: one is made per appended event, and a NamedTuple costs a call."""


class Batch(NamedTuple):
    """An append, placed and encoded before any lock is taken."""

    events: list[Event]
    """The stored copies, to return to the caller."""
    rows: list[Row]
    """Their rows, in seq order."""
    window_start: int | None
    """The window start the batch's latest compaction sets, if it has one."""


def decode(text: str, session_id: str, seq: int) -> Event:
    """Decode a stored row; a row that fails is a corrupt store, not bad input."""
    try:
        return loads_event(text)
    except CodecError as exc:
        raise StoreError(f"stored event {session_id!r} seq {seq} is corrupt: {exc}") from None


def place(event: Event, session_id: str, seq: int) -> Prepared:
    """Check ``event`` is a registered kind with a valid id and place it at ``seq``."""
    cls = type(event)
    if EVENT_TYPES.get(getattr(cls, "kind", "")) is not cls:
        raise UsageError(f"cannot store {cls.__name__}: not a registered event kind")
    check_id(event.id, "event id")
    stored = with_position(event, session_id=session_id, seq=seq)
    try:
        text = dumps_event(stored)
    except (CodecError, TypeError, ValueError) as exc:
        raise CodecError(f"{cls.kind} event {event.id!r} cannot be encoded: {exc}") from None
    return stored, (session_id, seq, stored.id, cls.kind, text)


def compaction_window_start(event: Compaction) -> int:
    """Return the window start a compaction sets: ``first_kept_seq``, never past itself, never below 1."""
    return max(1, min(event.first_kept_seq, event.seq))


def prepare_append(session_id: str, events: Sequence[Event], *, expected_last_seq: int) -> Batch:
    """Place ``events`` after ``expected_last_seq`` and encode them.

    Encoding happens here, before a store takes its lock, so a slow encode never blocks writers.
    Duplicate ids inside the batch are refused; ids already in the store are the store's to check.
    """
    stored: list[Event] = []
    rows: list[Row] = []
    seen: set[str] = set()
    window_start: int | None = None
    seq = expected_last_seq
    for event in events:
        seq += 1
        placed, row = place(event, session_id, seq)
        if row[2] in seen:
            raise UsageError(f"event id {row[2]!r} appears twice in one append")
        seen.add(row[2])
        if isinstance(placed, Compaction):
            window_start = compaction_window_start(placed)
        stored.append(placed)
        rows.append(row)
    return Batch(stored, rows, window_start)


class RestoreTracker:
    """Places a restored session's events in order and follows its window start.

    ``restore_session`` feeds a stream through it; any problem raises mid-stream so the store's
    transaction rolls back and nothing is imported.
    """

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.last_seq = 0
        self.window_start = 1
        self._seen: set[str] = set()

    def feed(self, events: Iterable[Event]) -> Iterator[Row]:
        """Yield the row of each event placed at the next seq; it must carry that seq already (or 0)."""
        for event in events:
            seq = self.last_seq + 1
            if event.seq not in (0, seq):
                raise CodecError(f"event {event.id!r} has seq {event.seq}, expected {seq} (seq must be gapless)")
            placed, row = place(event, self.session_id, seq)
            if placed.id in self._seen:
                raise CodecError(f"event id {placed.id!r} appears twice")
            self._seen.add(placed.id)
            if isinstance(placed, Compaction):
                self.window_start = compaction_window_start(placed)
            self.last_seq = seq
            yield row

    def info(self, header: SessionInfo) -> SessionInfo:
        """Return the restored session's header once every event went through."""
        return SessionInfo(
            id=self.session_id,
            created_at=header.created_at,
            last_seq=self.last_seq,
            window_start_seq=self.window_start,
            parent_session_id=header.parent_session_id,
            fork_seq=0,
            metadata=dict(header.metadata),
        )


# --------------------------------------------------------------------------- lineage


@dataclass(frozen=True)
class Segment:
    """Rows of one session with ``after_seq < seq <= upto_seq``."""

    session_id: str
    after_seq: int
    upto_seq: int


def lineage(
    info: SessionInfo,
    get_info: Callable[[str], SessionInfo],
    *,
    since_seq: int = 0,
    upto_seq: int | None = None,
) -> list[Segment]:
    """Return the row ranges holding ``info``'s events with ``since_seq < seq <= upto_seq``, oldest first.

    A fork owns only the rows after its ``fork_seq``; the rows before come from its parent (and
    from the parent's parent, for a fork of a fork), capped at the fork point.
    """
    segments: list[Segment] = []
    hi = info.last_seq if upto_seq is None else min(upto_seq, info.last_seq)
    current = info
    while True:
        shared = current.fork_seq if current.parent_session_id is not None else 0
        lo = max(shared, since_seq)
        if lo < hi:
            segments.append(Segment(current.id, lo, hi))
        if shared == 0 or since_seq >= min(hi, shared):
            break
        hi = min(hi, shared)
        assert current.parent_session_id is not None
        try:
            current = get_info(current.parent_session_id)
        except SessionNotFound:
            raise StoreError(f"session {info.id!r} is a fork of {current.parent_session_id!r}, which is gone") from None
    segments.reverse()
    return segments


def iter_segments(
    segments: Sequence[Segment], fetch: Callable[[Segment, int], Sequence[tuple[int, str | Event]]]
) -> Iterator[Event]:
    """Stream the events of ``segments`` a page at a time.

    ``fetch(segment, after)`` returns up to :data:`PAGE_SIZE` ``(seq, text)`` rows of the segment
    with seq > ``after``, in order (a row may hold the stored event itself instead of its text).
    Paging by seq keeps each store call short, and stays consistent because rows up to a segment's
    ``upto_seq`` never change.
    """
    for segment in segments:
        after = segment.after_seq
        while after < segment.upto_seq:
            rows = fetch(segment, after)
            if not rows:
                raise StoreError(f"session {segment.session_id!r} is missing events after seq {after}")
            for seq, text in rows:
                if seq != after + 1:
                    raise StoreError(f"session {segment.session_id!r} has a gap before seq {seq}")
                yield decode(text, segment.session_id, seq) if isinstance(text, str) else text
                after = seq


def fork_window_start(segments: Sequence[Segment], latest_compaction: Callable[[Segment], str | None]) -> int:
    """Return the window start at the end of ``segments``: set by their latest compaction, else 1."""
    for segment in reversed(segments):
        text = latest_compaction(segment)
        if text is not None:
            event = loads_event(text)
            assert isinstance(event, Compaction)
            return compaction_window_start(event)
    return 1


def fork_marker(session_id: str, new_session_id: str, at_seq: int) -> Row:
    """Build the row of a fork's first event, placed right after the shared prefix."""
    return place(ForkMarker(source_session_id=session_id, at_seq=at_seq), new_session_id, at_seq + 1)[1]


# --------------------------------------------------------------------------- optional capabilities


@runtime_checkable
class SupportsRestore(Protocol):
    """A store that can restore a whole session (header and events) in one transaction."""

    def restore_session(self, header: SessionInfo, events: Iterable[Event]) -> SessionInfo:
        """Create ``header.id`` holding ``events`` at seq 1..n; nothing is stored if anything fails."""
        ...


@runtime_checkable
class SupportsKindCounts(Protocol):
    """A store that can count a session's events per kind without decoding them."""

    def kind_counts(self, session_id: str) -> dict[str, int]:
        """Count the events of each kind in the session (a fork's shared prefix included)."""
        ...


def count_kinds(store: SessionStore, session_id: str) -> dict[str, int]:
    """Per-kind event counts, from the store's index when it has one, else by streaming."""
    if isinstance(store, SupportsKindCounts):
        return store.kind_counts(session_id)
    counts: dict[str, int] = {}
    for event in store.iter_events(session_id):
        counts[event.kind] = counts.get(event.kind, 0) + 1
    return counts


@runtime_checkable
class SupportsHeaderRead(Protocol):
    """A store that reads a session's header and its events after a seq together (one round trip for a page)."""

    def header_and_events(self, session_id: str, *, since_seq: int = 0) -> tuple[SessionInfo, Iterator[Event]]:
        """The session's header and its events with seq > ``since_seq``, as of one moment."""
        ...


def header_and_events(
    store: SessionStore, session_id: str, *, since_seq: int = 0
) -> tuple[SessionInfo, Iterator[Event]]:
    """The session's header and the events after ``since_seq``, together when the store can read them so."""
    if isinstance(store, SupportsHeaderRead):
        return store.header_and_events(session_id, since_seq=since_seq)
    info = store.get_session(session_id)

    def events() -> Iterator[Event]:  # read only if asked for: the caller may need the header alone
        yield from store.iter_events(session_id, since_seq=since_seq)

    return info, events()
