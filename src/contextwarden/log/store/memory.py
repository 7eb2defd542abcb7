"""An in-memory session store: for tests, replays and short-lived agents.

Events are kept as the codec's JSON text, exactly as the database stores keep them, so a caller
mutating a dict inside an event it appended cannot change the log, and every store returns the
same values. ``keep_objects=True`` keeps the stored events themselves instead (each is still
encoded once on append, so what cannot be stored is refused as in every store): no second copy
of every text, for a caller that never mutates what it appended or read, such as the replay,
whose store of a 200 MB transcript otherwise holds the transcript again as JSON.
"""

from __future__ import annotations

import copy
import dataclasses
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from ...errors import ConflictError, SessionExists, SessionNotFound, UsageError
from ..codec import dumps_event
from ..events import Event, JSONValue
from . import _shared as sh
from ._protocol import SessionInfo, StoredCheckpoint


@dataclass
class _Session:
    info: SessionInfo
    rows: list[tuple[str, str, str | Event]] = field(default_factory=list)
    """The session's own events as ``(id, kind, text or event)``, ``rows[i]`` at seq ``first_seq + i``."""

    @property
    def first_seq(self) -> int:
        return self.info.fork_seq + 1 if self.info.parent_session_id is not None else 1


class MemoryStore:
    """A :class:`~contextwarden.log.store.SessionStore` in a dict, guarded by a lock."""

    def __init__(self, *, keep_objects: bool = False) -> None:
        """``keep_objects``: keep appended events as objects, not JSON text (see the module docstring)."""
        self.keep_objects = keep_objects
        self._lock = threading.RLock()
        self._sessions: dict[str, _Session] = {}
        self._ids: set[str] = set()
        self._checkpoints: dict[tuple[str, str], StoredCheckpoint] = {}

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ sessions

    def create_session(
        self,
        session_id: str | None = None,
        *,
        metadata: dict[str, JSONValue] | None = None,
        parent_session_id: str | None = None,
    ) -> SessionInfo:
        """Create an empty session (a new id when none is given); ``SessionExists`` if taken."""
        info = sh.new_session_info(session_id, metadata, parent_session_id)
        sid = info.id
        with self._lock:
            if sid in self._sessions:
                raise SessionExists(f"session {sid!r} already exists")
            self._sessions[sid] = _Session(info)
        return _copy(info)

    def get_session(self, session_id: str) -> SessionInfo:
        """Return the session's header; ``SessionNotFound`` if absent."""
        with self._lock:
            return _copy(self._get(session_id).info)

    def list_sessions(self) -> list[SessionInfo]:
        """All sessions, oldest first."""
        with self._lock:
            infos = [s.info for s in self._sessions.values()]
        # dicts keep insertion order, so equal created_at values stay in creation order
        return [_copy(i) for i in sorted(infos, key=lambda i: i.created_at)]

    def delete_session(self, session_id: str) -> None:
        """Delete a session and its own events; refused while forks still read its events."""
        with self._lock:
            session = self._get(session_id)
            forks = [
                s.info.id
                for s in self._sessions.values()
                if s.info.parent_session_id == session_id and s.info.fork_seq > 0
            ]
            if forks:
                raise UsageError(f"session {session_id!r} has forks that share its events: {forks}; delete them first")
            del self._sessions[session_id]
            self._ids.difference_update(row[0] for row in session.rows)
            self.delete_checkpoints(session_id)

    # ------------------------------------------------------------------ events

    def append(self, session_id: str, events: Sequence[Event], *, expected_last_seq: int) -> list[Event]:
        """Append events atomically after ``expected_last_seq``; return them as stored (seq assigned)."""
        sh.check_id(session_id)
        sh.check_seq(expected_last_seq, "expected_last_seq")
        batch = sh.prepare_append(session_id, events, expected_last_seq=expected_last_seq)
        with self._lock:
            session = self._get(session_id)
            if session.info.last_seq != expected_last_seq:
                raise ConflictError(session_id, expected_last_seq, session.info.last_seq)
            taken = [row[2] for row in batch.rows if row[2] in self._ids]
            if taken:
                raise UsageError(f"event id {taken[0]!r} is already stored; event ids must be unique")
            if not batch.rows:
                return []
            if self.keep_objects:
                session.rows.extend((row[2], row[3], e) for row, e in zip(batch.rows, batch.events, strict=True))
            else:
                session.rows.extend(_row(row) for row in batch.rows)
            self._ids.update(row[2] for row in batch.rows)
            window_start = batch.window_start
            session.info = dataclasses.replace(
                session.info,
                last_seq=batch.rows[-1][1],
                window_start_seq=window_start if window_start is not None else session.info.window_start_seq,
            )
        return batch.events

    def read(self, session_id: str, *, since_seq: int = 0) -> list[Event]:
        """Events with seq > ``since_seq``, in order (a fork's shared prefix included)."""
        return list(self.iter_events(session_id, since_seq=since_seq))

    def iter_events(self, session_id: str, *, since_seq: int = 0) -> Iterator[Event]:
        """Like :meth:`read`, streaming."""
        sh.check_seq(since_seq, "since_seq")
        with self._lock:
            segments = sh.lineage(self._get(session_id).info, self._info, since_seq=since_seq)
        return sh.iter_segments(segments, self._fetch)

    def read_window(self, session_id: str) -> list[Event]:
        """Events from the current window's start on."""
        with self._lock:
            info = self._get(session_id).info
            segments = sh.lineage(info, self._info, since_seq=info.window_start_seq - 1)
        return list(sh.iter_segments(segments, self._fetch))

    def fork(self, session_id: str, *, at_seq: int, new_session_id: str | None = None) -> SessionInfo:
        """Branch a session after ``at_seq``; the branch shares the prefix without copying it."""
        sh.check_seq(at_seq, "at_seq")
        new_id = sh.check_new_session_id(new_session_id if new_session_id is not None else sh.new_session_id())
        marker = sh.fork_marker(session_id, new_id, at_seq)
        with self._lock:
            parent = self._get(session_id).info
            if at_seq > parent.last_seq:
                raise UsageError(f"cannot fork {session_id!r} at seq {at_seq}: it has {parent.last_seq} events")
            if new_id in self._sessions:
                raise SessionExists(f"session {new_id!r} already exists")
            segments = sh.lineage(parent, self._info, upto_seq=at_seq)
            info = SessionInfo(
                id=new_id,
                created_at=time.time(),
                last_seq=at_seq + 1,
                window_start_seq=sh.fork_window_start(segments, self._latest_compaction),
                parent_session_id=session_id,
                fork_seq=at_seq,
                metadata=dict(parent.metadata),
            )
            self._sessions[new_id] = _Session(info, [_row(marker)])
            self._ids.add(marker[2])
        return _copy(info)

    def close(self) -> None:
        """Nothing to release; the data lives as long as the object."""

    # ------------------------------------------------------------------ checkpoints

    def save_checkpoint(self, session_id: str, checkpoint: StoredCheckpoint) -> None:
        """Store ``checkpoint``, replacing the session's one of the same key; ``SessionNotFound`` if absent."""
        with self._lock:
            self._get(session_id)
            self._checkpoints[(session_id, checkpoint.key)] = checkpoint

    def load_checkpoint(self, session_id: str, key: str) -> StoredCheckpoint | None:
        """The session's checkpoint of ``key``, if one is stored."""
        with self._lock:
            return self._checkpoints.get((session_id, key))

    def delete_checkpoints(self, session_id: str) -> None:
        """Drop every checkpoint of the session (builds get slower, never different)."""
        with self._lock:
            for key in [k for k in self._checkpoints if k[0] == session_id]:
                del self._checkpoints[key]

    # ------------------------------------------------------------------ extras

    def kind_counts(self, session_id: str) -> dict[str, int]:
        """Count the events of each kind in the session (a fork's shared prefix included)."""
        counts: dict[str, int] = {}
        with self._lock:
            for seg in sh.lineage(self._get(session_id).info, self._info):
                session = self._sessions[seg.session_id]
                lo, hi = seg.after_seq + 1 - session.first_seq, seg.upto_seq + 1 - session.first_seq
                for _, kind, _ in session.rows[lo:hi]:
                    counts[kind] = counts.get(kind, 0) + 1
        return counts

    def restore_session(self, header: SessionInfo, events: Iterable[Event]) -> SessionInfo:
        """Create ``header.id`` holding ``events`` at seq 1..n; nothing is stored if anything fails."""
        tracker = sh.RestoreTracker(sh.check_new_session_id(header.id))
        rows = list(tracker.feed(events))
        info = tracker.info(header)
        with self._lock:
            if info.id in self._sessions:
                raise SessionExists(f"session {info.id!r} already exists")
            taken = [row[2] for row in rows if row[2] in self._ids]
            if taken:
                raise UsageError(f"event id {taken[0]!r} is already stored; event ids must be unique")
            self._sessions[info.id] = _Session(info, [_row(row) for row in rows])
            self._ids.update(row[2] for row in rows)
        return _copy(info)

    # ------------------------------------------------------------------ internals

    def _get(self, session_id: str) -> _Session:
        session = self._sessions.get(session_id)
        if session is None:
            raise SessionNotFound(f"no session {session_id!r}")
        return session

    def _info(self, session_id: str) -> SessionInfo:
        return self._get(session_id).info

    def _fetch(self, segment: sh.Segment, after: int) -> list[tuple[int, str | Event]]:
        with self._lock:
            session = self._get(segment.session_id)
            start = after + 1 - session.first_seq
            stop = min(segment.upto_seq + 1 - session.first_seq, start + sh.PAGE_SIZE)
            return [(session.first_seq + i, session.rows[i][2]) for i in range(start, stop)]

    def _latest_compaction(self, segment: sh.Segment) -> str | None:
        session = self._sessions[segment.session_id]
        lo, hi = segment.after_seq + 1 - session.first_seq, segment.upto_seq + 1 - session.first_seq
        for i in range(hi - 1, lo - 1, -1):
            if session.rows[i][1] == "compaction":
                kept = session.rows[i][2]
                return kept if isinstance(kept, str) else dumps_event(kept)
        return None


def _row(row: sh.Row) -> tuple[str, str, str]:
    return (row[2], row[3], row[4])


def _copy(info: SessionInfo) -> SessionInfo:
    # SessionInfo is frozen but its metadata dict is not; hand out copies so callers cannot edit ours
    return dataclasses.replace(info, metadata=copy.deepcopy(info.metadata))
