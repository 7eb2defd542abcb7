"""The embedded default store: one SQLite file, safe across threads and processes.

WAL journal with ``synchronous=FULL`` so an acknowledged append survives a crash; appends take the
write lock up front (``BEGIN IMMEDIATE``) so two processes appending to one session serialize and
the loser sees :class:`~contextwarden.errors.ConflictError`, never an interleaving. Each event is
one row holding the codec's ASCII JSON plus the columns the queries need.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress

from ..errors import ConflictError, SessionExists, SessionNotFound, StoreError, UsageError
from ..events import Event, JSONValue
from . import _shared as sh
from ._protocol import SessionInfo

_MIGRATIONS: list[tuple[int, str]] = [
    (
        1,
        """
        CREATE TABLE sessions (
            id TEXT PRIMARY KEY,
            created_at REAL NOT NULL,
            last_seq INTEGER NOT NULL DEFAULT 0,
            window_start_seq INTEGER NOT NULL DEFAULT 1,
            parent_session_id TEXT,
            fork_seq INTEGER NOT NULL DEFAULT 0,
            metadata TEXT NOT NULL DEFAULT '{}'
        );
        CREATE INDEX sessions_parent ON sessions (parent_session_id);
        CREATE TABLE events (
            session_id TEXT NOT NULL,
            seq INTEGER NOT NULL,
            id TEXT NOT NULL UNIQUE,
            kind TEXT NOT NULL,
            data TEXT NOT NULL,
            UNIQUE (session_id, seq)
        );
        CREATE INDEX events_compaction ON events (session_id, seq) WHERE kind = 'compaction';
        CREATE TRIGGER events_append_only BEFORE UPDATE ON events
        BEGIN SELECT RAISE(ABORT, 'contextwarden events are append-only'); END;
        """,
    ),
]
"""Schema versions, applied in order and recorded in ``schema_migrations``."""

_SESSION_COLUMNS = "id, created_at, last_seq, window_start_seq, parent_session_id, fork_seq, metadata"
_INSERT_EVENT = "INSERT INTO events (session_id, seq, id, kind, data) VALUES (?, ?, ?, ?, ?)"
_INSERT_SESSION = f"INSERT INTO sessions ({_SESSION_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)"


class SQLiteStore:
    """A :class:`~contextwarden.store.SessionStore` in one SQLite file.

    One connection per store object, shared by threads under a lock; open one store per process.
    """

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout: float = 30.0) -> None:
        self.path = os.fspath(path)
        if self.path != ":memory:":
            os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
        self._lock = threading.RLock()
        try:
            # autocommit mode: transactions are opened explicitly, so BEGIN IMMEDIATE is ours to choose
            self._conn = sqlite3.connect(self.path, timeout=busy_timeout, isolation_level=None, check_same_thread=False)
            self._conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
            self._conn.execute("PRAGMA journal_mode = WAL")
            self._conn.execute("PRAGMA synchronous = FULL")
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open SQLite store {self.path!r}: {exc}") from None
        self._migrate()

    def __enter__(self) -> SQLiteStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SQLiteStore({self.path!r})"

    # ------------------------------------------------------------------ sessions

    def create_session(
        self,
        session_id: str | None = None,
        *,
        metadata: dict[str, JSONValue] | None = None,
        parent_session_id: str | None = None,
    ) -> SessionInfo:
        """Create an empty session (a new id when none is given); ``SessionExists`` if taken."""
        sid = sh.check_id(session_id if session_id is not None else sh.new_session_id())
        if parent_session_id is not None:
            sh.check_id(parent_session_id, "parent session id")
        meta = sh.dumps_metadata(metadata)
        info = SessionInfo(
            id=sid,
            created_at=time.time(),
            metadata=sh.loads_metadata(meta),
            parent_session_id=parent_session_id,
        )
        with self._write() as cur:
            self._insert_session(cur, info)
        return info

    def get_session(self, session_id: str) -> SessionInfo:
        """Return the session's header; ``SessionNotFound`` if absent."""
        with self._read() as cur:
            return _get_info(cur, session_id)

    def list_sessions(self) -> list[SessionInfo]:
        """All sessions, oldest first."""
        with self._read() as cur:
            rows = cur.execute(f"SELECT {_SESSION_COLUMNS} FROM sessions ORDER BY created_at, rowid").fetchall()
        return [_info_from_row(r) for r in rows]

    def delete_session(self, session_id: str) -> None:
        """Delete a session and its own events; refused while forks still read its events."""
        with self._write() as cur:
            _get_info(cur, session_id)
            forks = [
                r[0]
                for r in cur.execute(
                    "SELECT id FROM sessions WHERE parent_session_id = ? AND fork_seq > 0", (session_id,)
                )
            ]
            if forks:
                raise UsageError(f"session {session_id!r} has forks that share its events: {forks}; delete them first")
            cur.execute("DELETE FROM events WHERE session_id = ?", (session_id,))
            cur.execute("DELETE FROM sessions WHERE id = ?", (session_id,))

    # ------------------------------------------------------------------ events

    def append(self, session_id: str, events: Sequence[Event], *, expected_last_seq: int) -> list[Event]:
        """Append events atomically after ``expected_last_seq``; return them as stored (seq assigned)."""
        sh.check_id(session_id)
        sh.check_seq(expected_last_seq, "expected_last_seq")
        prepared, window_start = sh.prepare_append(session_id, events, expected_last_seq=expected_last_seq)
        with self._write() as cur:
            row = cur.execute("SELECT last_seq, window_start_seq FROM sessions WHERE id = ?", (session_id,)).fetchone()
            if row is None:
                raise SessionNotFound(f"no session {session_id!r}")
            if row[0] != expected_last_seq:
                raise ConflictError(session_id, expected_last_seq, row[0])
            if not prepared:
                return []
            self._insert_events(cur, [p.row for p in prepared])
            cur.execute(
                "UPDATE sessions SET last_seq = ?, window_start_seq = ? WHERE id = ?",
                (prepared[-1].event.seq, window_start if window_start is not None else row[1], session_id),
            )
        return [p.event for p in prepared]

    def read(self, session_id: str, *, since_seq: int = 0) -> list[Event]:
        """Events with seq > ``since_seq``, in order (a fork's shared prefix included)."""
        return list(self.iter_events(session_id, since_seq=since_seq))

    def iter_events(self, session_id: str, *, since_seq: int = 0) -> Iterator[Event]:
        """Like :meth:`read`, streaming a page of rows at a time."""
        sh.check_seq(since_seq, "since_seq")
        with self._read() as cur:
            info = _get_info(cur, session_id)
            segments = sh.lineage(info, lambda sid: _get_info(cur, sid), since_seq=since_seq)
        return sh.iter_segments(segments, self._fetch)

    def read_window(self, session_id: str) -> list[Event]:
        """Events from the current window's start on; only those rows are read."""
        with self._read() as cur:
            info = _get_info(cur, session_id)
            segments = sh.lineage(info, lambda sid: _get_info(cur, sid), since_seq=info.window_start_seq - 1)
        return list(sh.iter_segments(segments, self._fetch))

    def fork(self, session_id: str, *, at_seq: int, new_session_id: str | None = None) -> SessionInfo:
        """Branch a session after ``at_seq``; the branch shares the prefix without copying it."""
        sh.check_seq(at_seq, "at_seq")
        new_id = sh.check_id(new_session_id if new_session_id is not None else sh.new_session_id())
        marker = sh.fork_marker(session_id, new_id, at_seq)
        with self._write() as cur:
            parent = _get_info(cur, session_id)
            if at_seq > parent.last_seq:
                raise UsageError(f"cannot fork {session_id!r} at seq {at_seq}: it has {parent.last_seq} events")
            segments = sh.lineage(parent, lambda sid: _get_info(cur, sid), upto_seq=at_seq)
            info = SessionInfo(
                id=new_id,
                created_at=time.time(),
                last_seq=at_seq + 1,
                window_start_seq=sh.fork_window_start(segments, lambda seg: _latest_compaction(cur, seg)),
                parent_session_id=session_id,
                fork_seq=at_seq,
                metadata=parent.metadata,
            )
            self._insert_session(cur, info)
            self._insert_events(cur, [marker.row])
        return info

    def close(self) -> None:
        """Close the connection (idempotent)."""
        with self._lock:
            self._conn.close()

    # ------------------------------------------------------------------ extras

    def kind_counts(self, session_id: str) -> dict[str, int]:
        """Count the events of each kind in the session (a fork's shared prefix included)."""
        counts: dict[str, int] = {}
        with self._read() as cur:
            info = _get_info(cur, session_id)
            for seg in sh.lineage(info, lambda sid: _get_info(cur, sid)):
                rows = cur.execute(
                    "SELECT kind, count(*) FROM events WHERE session_id = ? AND seq > ? AND seq <= ? GROUP BY kind",
                    (seg.session_id, seg.after_seq, seg.upto_seq),
                )
                for kind, n in rows:
                    counts[kind] = counts.get(kind, 0) + n
        return counts

    def restore_session(self, header: SessionInfo, events: Iterable[Event]) -> SessionInfo:
        """Create ``header.id`` holding ``events`` at seq 1..n; nothing is stored if anything fails.

        ``events`` is consumed inside the transaction, so a decoding error raised by a lazy
        iterable (a JSONL file read line by line) rolls everything back.
        """
        tracker = sh.RestoreTracker(sh.check_id(header.id))
        with self._write() as cur:
            self._insert_session(cur, tracker.info(header))
            self._insert_events(cur, (p.row for p in tracker.feed(events)))
            info = tracker.info(header)
            cur.execute(
                "UPDATE sessions SET last_seq = ?, window_start_seq = ? WHERE id = ?",
                (info.last_seq, info.window_start_seq, info.id),
            )
        return info

    # ------------------------------------------------------------------ internals

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Cursor]:
        # IMMEDIATE takes the write lock now, so the last_seq we read cannot change before COMMIT
        with self._transaction("BEGIN IMMEDIATE") as cur:
            yield cur

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Cursor]:
        # one read transaction, so a header and the rows read under it come from one snapshot
        with self._transaction("BEGIN DEFERRED") as cur:
            yield cur

    @contextmanager
    def _transaction(self, begin: str) -> Iterator[sqlite3.Cursor]:
        with self._lock:
            try:
                cur = self._conn.cursor()
                cur.execute(begin)
            except sqlite3.Error as exc:
                raise StoreError(f"SQLite store {self.path!r}: {exc}") from None
            try:
                yield cur
                cur.execute("COMMIT")
            except BaseException as exc:
                if self._conn.in_transaction:
                    with suppress(sqlite3.Error):
                        self._conn.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise StoreError(f"SQLite store {self.path!r}: {exc}") from None
                raise
            finally:
                cur.close()

    def _migrate(self) -> None:
        with self._write() as cur:
            cur.execute("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at REAL)")
            current = cur.execute("SELECT coalesce(max(version), 0) FROM schema_migrations").fetchone()[0]
            latest = _MIGRATIONS[-1][0]
            if current > latest:
                raise StoreError(
                    f"{self.path!r} has schema version {current}, newer than this contextwarden "
                    f"({latest}); upgrade contextwarden"
                )
            for version, script in _MIGRATIONS:
                if version > current:
                    # executescript would COMMIT our transaction; run the statements one by one instead
                    for statement in _statements(script):
                        cur.execute(statement)
                    cur.execute("INSERT INTO schema_migrations VALUES (?, ?)", (version, time.time()))

    def _insert_session(self, cur: sqlite3.Cursor, info: SessionInfo) -> None:
        try:
            cur.execute(
                _INSERT_SESSION,
                (
                    info.id,
                    info.created_at,
                    info.last_seq,
                    info.window_start_seq,
                    info.parent_session_id,
                    info.fork_seq,
                    sh.dumps_metadata(info.metadata),
                ),
            )
        except sqlite3.IntegrityError:
            raise SessionExists(f"session {info.id!r} already exists") from None

    def _insert_events(self, cur: sqlite3.Cursor, rows: Iterable[tuple[str, int, str, str, str]]) -> None:
        last_id = ""

        def remember() -> Iterator[tuple[str, int, str, str, str]]:
            nonlocal last_id
            for row in rows:
                last_id = row[2]
                yield row

        try:
            cur.executemany(_INSERT_EVENT, remember())
        except sqlite3.IntegrityError as exc:
            # executemany stops at the failing row, which is the last one the generator handed out
            if "events.id" in str(exc):
                raise UsageError(f"event id {last_id!r} is already stored; event ids must be unique") from None
            raise StoreError(f"SQLite store {self.path!r}: {exc}") from None

    def _fetch(self, segment: sh.Segment, after: int) -> list[tuple[int, str]]:
        with self._read() as cur:
            rows = cur.execute(
                "SELECT seq, data FROM events WHERE session_id = ? AND seq > ? AND seq <= ? ORDER BY seq LIMIT ?",
                (segment.session_id, after, segment.upto_seq, sh.PAGE_SIZE),
            ).fetchall()
        return [(int(seq), str(data)) for seq, data in rows]


def _statements(script: str) -> list[str]:
    """Split a migration script on ``;`` outside trigger bodies (which end in ``END;``)."""
    out: list[str] = []
    buf = ""
    for piece in script.split(";"):
        buf += piece + ";"
        if sqlite3.complete_statement(buf):
            if buf.strip(" \n;"):
                out.append(buf.strip())
            buf = ""
    return out


def _get_info(cur: sqlite3.Cursor, session_id: str) -> SessionInfo:
    row = cur.execute(f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE id = ?", (session_id,)).fetchone()
    if row is None:
        raise SessionNotFound(f"no session {session_id!r}")
    return _info_from_row(row)


def _info_from_row(row: tuple[object, ...]) -> SessionInfo:
    sid, created_at, last_seq, window_start, parent, fork_seq, metadata = row
    return SessionInfo(
        id=str(sid),
        created_at=float(created_at),  # type: ignore[arg-type]
        last_seq=int(last_seq),  # type: ignore[call-overload]
        window_start_seq=int(window_start),  # type: ignore[call-overload]
        parent_session_id=None if parent is None else str(parent),
        fork_seq=int(fork_seq),  # type: ignore[call-overload]
        metadata=sh.loads_metadata(str(metadata)),
    )


def _latest_compaction(cur: sqlite3.Cursor, segment: sh.Segment) -> str | None:
    row = cur.execute(
        "SELECT data FROM events WHERE session_id = ? AND kind = 'compaction' AND seq > ? AND seq <= ? "
        "ORDER BY seq DESC LIMIT 1",
        (segment.session_id, segment.after_seq, segment.upto_seq),
    ).fetchone()
    return None if row is None else str(row[0])


__all__ = ["SQLiteStore"]
