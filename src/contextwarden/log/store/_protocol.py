"""The ``SessionStore`` seam: what every session store does."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from ..events import Event, JSONValue


@dataclass(frozen=True, kw_only=True)
class SessionInfo:
    """A session's header: identity, lineage and size."""

    id: str
    """The session id."""
    created_at: float
    """Unix time of creation."""
    last_seq: int = 0
    """The seq of the newest event (0 when empty)."""
    window_start_seq: int = 1
    """The first seq of the current window (set by the latest compaction's ``first_kept_seq``)."""
    parent_session_id: str | None = None
    """For a fork or a subagent session: the session it came from."""
    fork_seq: int = 0
    """For a fork: the last seq of the parent the branch shares (0 when not a fork)."""
    metadata: dict[str, JSONValue] = field(default_factory=dict)
    """Free-form metadata (title, source file, agent, subagent task...)."""


@runtime_checkable
class SessionStore(Protocol):
    """An append-only store of session event logs.

    Events are never updated in place. ``append`` is atomic and uses optimistic concurrency:
    the caller passes the last seq it saw, and a mismatch raises ``ConflictError``.
    """

    def create_session(
        self,
        session_id: str | None = None,
        *,
        metadata: dict[str, JSONValue] | None = None,
        parent_session_id: str | None = None,
    ) -> SessionInfo:
        """Create an empty session (a new id when none is given); ``SessionExists`` if taken."""
        ...

    def get_session(self, session_id: str) -> SessionInfo:
        """Return the session's header; ``SessionNotFound`` if absent."""
        ...

    def list_sessions(self) -> list[SessionInfo]:
        """All sessions, oldest first."""
        ...

    def delete_session(self, session_id: str) -> None:
        """Delete a session and its own events (forks of it keep working only if deleted first)."""
        ...

    def append(self, session_id: str, events: Sequence[Event], *, expected_last_seq: int) -> list[Event]:
        """Append events atomically after ``expected_last_seq``; return them as stored (seq assigned)."""
        ...

    def read(self, session_id: str, *, since_seq: int = 0) -> list[Event]:
        """Events with seq > ``since_seq``, in order (a fork's shared prefix included)."""
        ...

    def iter_events(self, session_id: str, *, since_seq: int = 0) -> Iterator[Event]:
        """Like :meth:`read`, streaming (for export of long sessions)."""
        ...

    def read_window(self, session_id: str) -> list[Event]:
        """Events from the current window's start on: what resume needs, never the whole history."""
        ...

    def fork(self, session_id: str, *, at_seq: int, new_session_id: str | None = None) -> SessionInfo:
        """Branch a session after ``at_seq``; the branch shares the prefix without copying it."""
        ...

    def close(self) -> None:
        """Release connections and file handles."""
        ...


@dataclass(frozen=True, kw_only=True)
class StoredCheckpoint:
    """A projection checkpoint as a store keeps it (see :mod:`contextwarden.window.checkpoint`).

    Derived data: a store may lose it at any time, and a reader trusts it only when ``seq`` and
    ``event_id`` still name an event of the session and ``digest`` matches ``data``.
    """

    key: str
    """What it was made under (policy, counter, versions), as a digest; one checkpoint per session and key."""
    seq: int
    """The seq of the last event it covers."""
    event_id: str
    """The id of that event."""
    digest: str
    """SHA-256 of ``data``, hex."""
    data: str
    """The checkpoint's JSON."""
    pieces: tuple[int, ...] = ()
    """Offsets in ``data`` where a store may cut it into pieces it keeps apart, so that saving the
    next checkpoint writes only the pieces that changed (a hint: what is read back is ``data``)."""


@runtime_checkable
class CheckpointStore(Protocol):
    """A store that can also keep projection checkpoints next to the logs (an optional extra)."""

    def save_checkpoint(self, session_id: str, checkpoint: StoredCheckpoint) -> None:
        """Store ``checkpoint``, replacing the session's one of the same key; ``SessionNotFound`` if absent."""
        ...

    def load_checkpoint(self, session_id: str, key: str) -> StoredCheckpoint | None:
        """The session's checkpoint of ``key``, if one is stored."""
        ...

    def delete_checkpoints(self, session_id: str) -> None:
        """Drop every checkpoint of the session (builds get slower, never different)."""
        ...
