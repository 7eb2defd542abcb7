"""The log's side of the match: its message digests per session, kept up to date from its tail.

A :class:`Chain` holds the digest, kind, seq and id of every mirrored message the window still
has, in order; the mirror's own window events (a trim or a reset) drop the messages they cut, as
they do from the window. :func:`mirrored_events` reads the same history from the log in one pass.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from ..errors import SessionExists, SessionNotFound, StoreError
from ..log.events import Compaction, Event, new_event_id
from ..log.store._protocol import SessionStore
from ..log.store._shared import header_and_events
from ._digest import MIRRORED_KINDS, content_digest

MIRROR_SUMMARIZER = "mirror"
"""The ``summarizer`` of the window events the mirror records."""

CARRIED_EDITS = "carried over the client's restart"
"""The ``reason`` of a batch recording a window's standing edits again on the new copies after the client's
rewind or edit: the client's doing, like the restart itself, not a planner's decision."""


@dataclass
class Chain:
    """The log's message digests for one session, extended from the log's tail."""

    session_id: str
    digests: list[str] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)
    seqs: list[int] = field(default_factory=list)
    event_ids: list[str] = field(default_factory=list)
    last_seq: int = 0
    loaded: bool = False
    """Whether the chain has read the log once: then it follows the log as far as this process has seen."""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def refresh(self, store: SessionStore) -> None:
        """Fold in the events appended since the last look (all of them on the first)."""
        self.loaded = True
        try:
            # the header with the events after the chain's last seq: one round trip on a SQL store
            info, new = header_and_events(store, self.session_id, since_seq=self.last_seq)
        except SessionNotFound:
            try:
                info = store.create_session(self.session_id)
            except (SessionExists, StoreError):
                # another writer created it first (PostgresStore reports that race as a
                # unique-key StoreError); anything else still fails on the read below
                info = store.get_session(self.session_id)
            new = None
        if info.last_seq < self.last_seq:  # the session was deleted and recreated
            self.digests, self.kinds, self.seqs, self.event_ids, self.last_seq = [], [], [], [], 0
            new = None
        if info.last_seq > self.last_seq:
            for event in new if new is not None else store.iter_events(self.session_id, since_seq=self.last_seq):
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
            span = dropped_span(event, self.seqs)
            if span is not None:
                for column in (self.digests, self.kinds, self.seqs, self.event_ids):
                    del column[span]

    def follow(self, events: Sequence[Event]) -> None:
        """Fold in ``events`` another part of this process appended, as the store returned them, if they come next.

        Events that do not follow the chain's last seq are left for the next read (a mirror call that
        does not read first finds the gap when its compare-and-append fails).
        """
        if events and events[0].seq == self.last_seq + 1:
            for event in events:
                self.fold(event)

    def append(self, store: SessionStore, events: Sequence[Event]) -> list[Event]:
        """Append ``events`` after the chain's last seq (compare-and-append) and fold them in."""
        stored = store.append(self.session_id, events, expected_last_seq=self.last_seq)
        for event in stored:
            self.fold(event)
        return stored


def dropped_span(event: Event, seqs: Sequence[int]) -> slice | None:
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
            span = dropped_span(event, [e.seq for e in events])
            if span is not None:
                del events[span]
    return events


def fresh(event: Event) -> Event:
    """A copy to append: a new id (ids are unique across the store) and no position yet."""
    return replace(event, id=new_event_id(), session_id="", seq=0)


class _Chains:
    """One chain per (store, session), kept as long as the store object lives."""

    def __init__(self) -> None:
        self._by_store: weakref.WeakKeyDictionary[SessionStore, dict[str, Chain]] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    def get(self, store: SessionStore, session_id: str) -> Chain:
        with self._lock:
            sessions = self._by_store.setdefault(store, {})
            chain = sessions.get(session_id)
            if chain is None:
                chain = sessions[session_id] = Chain(session_id)
            return chain


chains = _Chains()
"""The process's chains: every mirror call on the same store object shares them."""


def follow_appended(store: SessionStore, session_id: str, events: Sequence[Event]) -> None:
    """Tell the session's chain of ``events`` this process appended outside the mirror, as the store returned them."""
    chain = chains.get(store, session_id)
    with chain.lock:
        chain.follow(events)


def follow_created(store: SessionStore, session_id: str) -> None:
    """Tell the session's chain this process has just created the session: its log is empty, no read needed."""
    chain = chains.get(store, session_id)
    with chain.lock:
        if not chain.loaded and chain.last_seq == 0:
            chain.loaded = True


def follow_to(store: SessionStore, session_id: str, seq: int) -> None:
    """Read the session's tail into its chain if the chain ends before ``seq``, a seq the log is known to have.

    For a moment when no request waits: events the chain could not follow (another part of the process
    appended between the chain's last and a followed append) are read now, not by the next mirror call
    after its append fails.
    """
    chain = chains.get(store, session_id)
    with chain.lock:
        if chain.loaded and chain.last_seq < seq:
            chain.refresh(store)
