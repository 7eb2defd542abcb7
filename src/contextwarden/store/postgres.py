r"""The store for many agent workers on many machines: PostgreSQL through psycopg 3.

An append locks the session's row (``SELECT ... FOR UPDATE``), checks the caller's expected last
seq, inserts the events and moves ``last_seq`` in one transaction; the ``(session_id, seq)``
primary key backs that up, and a violation of it is reported as a conflict. Event JSON is stored
as TEXT, not JSONB: JSONB refuses ``\u0000``, which tool output may hold.

psycopg is an optional dependency: ``pip install 'contextwarden[postgres]'``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ..errors import ConflictError, SessionExists, SessionNotFound, StoreError, UsageError
from ..events import Event, JSONValue
from . import _shared as sh
from ._protocol import SessionInfo

if TYPE_CHECKING:
    import psycopg

_SESSIONS = "contextwarden_sessions"
_EVENTS = "contextwarden_events"
_MIGRATIONS_TABLE = "contextwarden_schema_migrations"
_SEQ_KEY = "contextwarden_events_pkey"
_ID_KEY = "contextwarden_events_id_key"
_LOCK_KEY = 0x636F6E7465787477  # an arbitrary advisory-lock key: serializes concurrent migrations

_MIGRATIONS: list[tuple[int, list[str]]] = [
    (
        1,
        [
            f"""CREATE TABLE {_SESSIONS} (
                id TEXT PRIMARY KEY,
                ord BIGSERIAL,
                created_at DOUBLE PRECISION NOT NULL,
                last_seq BIGINT NOT NULL DEFAULT 0,
                window_start_seq BIGINT NOT NULL DEFAULT 1,
                parent_session_id TEXT,
                fork_seq BIGINT NOT NULL DEFAULT 0,
                metadata TEXT NOT NULL DEFAULT '{{}}'
            )""",
            f"CREATE INDEX {_SESSIONS}_parent ON {_SESSIONS} (parent_session_id)",
            f"""CREATE TABLE {_EVENTS} (
                session_id TEXT NOT NULL,
                seq BIGINT NOT NULL,
                id TEXT NOT NULL,
                kind TEXT NOT NULL,
                data TEXT NOT NULL,
                CONSTRAINT {_SEQ_KEY} PRIMARY KEY (session_id, seq),
                CONSTRAINT {_ID_KEY} UNIQUE (id)
            )""",
            f"CREATE INDEX {_EVENTS}_compaction ON {_EVENTS} (session_id, seq) WHERE kind = 'compaction'",
            f"""CREATE FUNCTION {_EVENTS}_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN RAISE EXCEPTION 'contextwarden events are append-only'; END $$""",
            f"""CREATE TRIGGER {_EVENTS}_append_only BEFORE UPDATE ON {_EVENTS}
                FOR EACH ROW EXECUTE FUNCTION {_EVENTS}_append_only()""",
        ],
    ),
]
"""Schema versions, applied in order and recorded in ``contextwarden_schema_migrations``."""

_SESSION_COLUMNS = "id, created_at, last_seq, window_start_seq, parent_session_id, fork_seq, metadata"
_INSERT_EVENT = f"INSERT INTO {_EVENTS} (session_id, seq, id, kind, data) VALUES (%s, %s, %s, %s, %s)"
_INSERT_SESSION = f"INSERT INTO {_SESSIONS} ({_SESSION_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s)"


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError as exc:
        raise ImportError("the PostgreSQL store needs psycopg 3: pip install 'contextwarden[postgres]'") from exc
    return psycopg


class PostgresStore:
    """A :class:`~contextwarden.store.SessionStore` in PostgreSQL.

    One connection per store object, shared by threads under a lock; give each concurrent worker
    its own store. Tables go in the first schema of the connection's ``search_path``.
    """

    def __init__(self, dsn: str, *, connect_timeout: float = 10.0) -> None:
        self._psycopg = _psycopg()
        self.dsn = dsn
        self._connect_timeout = connect_timeout
        self._lock = threading.RLock()
        self._conn: psycopg.Connection[Any] | None = None
        self._closed = False
        self._migrate()

    def __enter__(self) -> PostgresStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        params = self._psycopg.conninfo.conninfo_to_dict(self.dsn)
        where = f"{params.get('host', '')}:{params.get('port', '')}/{params.get('dbname', '')}"
        return f"PostgresStore({where!r})"

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
        with self._transaction() as cur:
            self._insert_session(cur, info)
        return info

    def get_session(self, session_id: str) -> SessionInfo:
        """Return the session's header; ``SessionNotFound`` if absent."""
        with self._transaction() as cur:
            return _get_info(cur, session_id)

    def list_sessions(self) -> list[SessionInfo]:
        """All sessions, oldest first."""
        with self._transaction() as cur:
            rows = cur.execute(f"SELECT {_SESSION_COLUMNS} FROM {_SESSIONS} ORDER BY created_at, ord").fetchall()
        return [_info_from_row(r) for r in rows]

    def delete_session(self, session_id: str) -> None:
        """Delete a session and its own events; refused while forks still read its events."""
        with self._transaction() as cur:
            _get_info(cur, session_id, lock=True)
            forks = [
                r[0]
                for r in cur.execute(
                    f"SELECT id FROM {_SESSIONS} WHERE parent_session_id = %s AND fork_seq > 0", (session_id,)
                )
            ]
            if forks:
                raise UsageError(f"session {session_id!r} has forks that share its events: {forks}; delete them first")
            cur.execute(f"DELETE FROM {_EVENTS} WHERE session_id = %s", (session_id,))
            cur.execute(f"DELETE FROM {_SESSIONS} WHERE id = %s", (session_id,))

    # ------------------------------------------------------------------ events

    def append(self, session_id: str, events: Sequence[Event], *, expected_last_seq: int) -> list[Event]:
        """Append events atomically after ``expected_last_seq``; return them as stored (seq assigned)."""
        sh.check_id(session_id)
        sh.check_seq(expected_last_seq, "expected_last_seq")
        prepared, window_start = sh.prepare_append(session_id, events, expected_last_seq=expected_last_seq)
        try:
            with self._transaction() as cur:
                # the row lock makes concurrent appends to one session wait here, one after another
                row = cur.execute(
                    f"SELECT last_seq, window_start_seq FROM {_SESSIONS} WHERE id = %s FOR UPDATE",
                    (session_id,),
                ).fetchone()
                if row is None:
                    raise SessionNotFound(f"no session {session_id!r}")
                if row[0] != expected_last_seq:
                    raise ConflictError(session_id, expected_last_seq, row[0])
                if not prepared:
                    return []
                self._insert_events(cur, [p.row for p in prepared])
                cur.execute(
                    f"UPDATE {_SESSIONS} SET last_seq = %s, window_start_seq = %s WHERE id = %s",
                    (
                        prepared[-1].event.seq,
                        window_start if window_start is not None else row[1],
                        session_id,
                    ),
                )
        except _SeqTaken:
            # only reachable if a writer skipped the row lock; the key still keeps the log gapless
            raise ConflictError(session_id, expected_last_seq, self.get_session(session_id).last_seq) from None
        return [p.event for p in prepared]

    def read(self, session_id: str, *, since_seq: int = 0) -> list[Event]:
        """Events with seq > ``since_seq``, in order (a fork's shared prefix included)."""
        return list(self.iter_events(session_id, since_seq=since_seq))

    def iter_events(self, session_id: str, *, since_seq: int = 0) -> Iterator[Event]:
        """Like :meth:`read`, streaming a page of rows at a time."""
        sh.check_seq(since_seq, "since_seq")
        with self._transaction() as cur:
            info = _get_info(cur, session_id)
            segments = sh.lineage(info, lambda sid: _get_info(cur, sid), since_seq=since_seq)
        return sh.iter_segments(segments, self._fetch)

    def read_window(self, session_id: str) -> list[Event]:
        """Events from the current window's start on; only those rows are read."""
        with self._transaction() as cur:
            info = _get_info(cur, session_id)
            segments = sh.lineage(info, lambda sid: _get_info(cur, sid), since_seq=info.window_start_seq - 1)
        return list(sh.iter_segments(segments, self._fetch))

    def fork(self, session_id: str, *, at_seq: int, new_session_id: str | None = None) -> SessionInfo:
        """Branch a session after ``at_seq``; the branch shares the prefix without copying it."""
        sh.check_seq(at_seq, "at_seq")
        new_id = sh.check_id(new_session_id if new_session_id is not None else sh.new_session_id())
        marker = sh.fork_marker(session_id, new_id, at_seq)
        with self._transaction() as cur:
            # a share lock: the parent cannot be deleted (or appended to) until the fork is recorded
            parent = _get_info(cur, session_id, lock=True, mode="FOR SHARE")
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
            self._closed = True
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    # ------------------------------------------------------------------ extras

    def kind_counts(self, session_id: str) -> dict[str, int]:
        """Count the events of each kind in the session (a fork's shared prefix included)."""
        counts: dict[str, int] = {}
        with self._transaction() as cur:
            info = _get_info(cur, session_id)
            for seg in sh.lineage(info, lambda sid: _get_info(cur, sid)):
                rows = cur.execute(
                    f"SELECT kind, count(*) FROM {_EVENTS} WHERE session_id = %s AND seq > %s AND seq <= %s "
                    "GROUP BY kind",
                    (seg.session_id, seg.after_seq, seg.upto_seq),
                ).fetchall()
                for kind, n in rows:
                    counts[kind] = counts.get(kind, 0) + int(n)
        return counts

    def restore_session(self, header: SessionInfo, events: Iterable[Event]) -> SessionInfo:
        """Create ``header.id`` holding ``events`` at seq 1..n; nothing is stored if anything fails."""
        tracker = sh.RestoreTracker(sh.check_id(header.id))
        with self._transaction() as cur:
            self._insert_session(cur, tracker.info(header))
            batch: list[tuple[str, int, str, str, str]] = []
            for prepared in tracker.feed(events):
                batch.append(prepared.row)
                if len(batch) >= sh.PAGE_SIZE:
                    self._insert_events(cur, batch)
                    batch = []
            self._insert_events(cur, batch)
            info = tracker.info(header)
            cur.execute(
                f"UPDATE {_SESSIONS} SET last_seq = %s, window_start_seq = %s WHERE id = %s",
                (info.last_seq, info.window_start_seq, info.id),
            )
        return info

    # ------------------------------------------------------------------ internals

    def _connection(self) -> psycopg.Connection[Any]:
        if self._closed:
            raise StoreError("the PostgreSQL store is closed")
        # a connection lost to a server restart is replaced on the next call instead of failing forever
        if self._conn is None or self._conn.broken or self._conn.closed:
            try:
                self._conn = self._psycopg.connect(
                    self.dsn, autocommit=True, connect_timeout=max(1, int(self._connect_timeout))
                )
            except self._psycopg.Error as exc:
                raise StoreError(f"cannot connect to PostgreSQL: {_one_line(exc)}") from None
        assert self._conn is not None
        return self._conn

    @contextmanager
    def _transaction(self) -> Iterator[psycopg.Cursor[Any]]:
        errors = self._psycopg.errors
        with self._lock:
            conn = self._connection()
            try:
                with conn.transaction(), conn.cursor() as cur:
                    yield cur
            except errors.UniqueViolation as exc:
                if exc.diag.constraint_name == _SEQ_KEY:
                    raise _SeqTaken() from None
                if exc.diag.constraint_name == _ID_KEY:
                    # the detail names the id: "Key (id)=(...) already exists."
                    raise UsageError(
                        f"an event id is already stored ({exc.diag.message_detail}); event ids must be unique"
                    ) from None
                raise StoreError(f"PostgreSQL: {_one_line(exc)}") from None
            except self._psycopg.Error as exc:
                raise StoreError(f"PostgreSQL: {_one_line(exc)}") from None

    def _migrate(self) -> None:
        with self._transaction() as cur:
            cur.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
            cur.execute(
                f"CREATE TABLE IF NOT EXISTS {_MIGRATIONS_TABLE} "
                "(version INTEGER PRIMARY KEY, applied_at DOUBLE PRECISION)"
            )
            row = cur.execute(f"SELECT coalesce(max(version), 0) FROM {_MIGRATIONS_TABLE}").fetchone()
            current = int(row[0]) if row else 0
            latest = _MIGRATIONS[-1][0]
            if current > latest:
                raise StoreError(f"the database has schema version {current}, newer than this contextwarden ({latest})")
            for version, statements in _MIGRATIONS:
                if version > current:
                    for statement in statements:
                        cur.execute(statement)
                    cur.execute(f"INSERT INTO {_MIGRATIONS_TABLE} VALUES (%s, %s)", (version, time.time()))

    def _insert_session(self, cur: psycopg.Cursor[Any], info: SessionInfo) -> None:
        exists = cur.execute(f"SELECT 1 FROM {_SESSIONS} WHERE id = %s", (info.id,)).fetchone()
        if exists:
            raise SessionExists(f"session {info.id!r} already exists")
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

    def _insert_events(self, cur: psycopg.Cursor[Any], rows: list[tuple[str, int, str, str, str]]) -> None:
        if not rows:
            return
        cur.executemany(_INSERT_EVENT, rows)

    def _fetch(self, segment: sh.Segment, after: int) -> list[tuple[int, str]]:
        with self._transaction() as cur:
            rows = cur.execute(
                f"SELECT seq, data FROM {_EVENTS} WHERE session_id = %s AND seq > %s AND seq <= %s "
                "ORDER BY seq LIMIT %s",
                (segment.session_id, after, segment.upto_seq, sh.PAGE_SIZE),
            ).fetchall()
        return [(int(seq), str(data)) for seq, data in rows]


class _SeqTaken(Exception):
    """Internal: the (session_id, seq) key refused a row; ``append`` turns it into a conflict."""


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


def _get_info(
    cur: psycopg.Cursor[Any], session_id: str, *, lock: bool = False, mode: str = "FOR UPDATE"
) -> SessionInfo:
    suffix = f" {mode}" if lock else ""
    row = cur.execute(f"SELECT {_SESSION_COLUMNS} FROM {_SESSIONS} WHERE id = %s{suffix}", (session_id,)).fetchone()
    if row is None:
        raise SessionNotFound(f"no session {session_id!r}")
    return _info_from_row(row)


def _info_from_row(row: tuple[Any, ...]) -> SessionInfo:
    sid, created_at, last_seq, window_start, parent, fork_seq, metadata = row
    return SessionInfo(
        id=str(sid),
        created_at=float(created_at),
        last_seq=int(last_seq),
        window_start_seq=int(window_start),
        parent_session_id=None if parent is None else str(parent),
        fork_seq=int(fork_seq),
        metadata=sh.loads_metadata(str(metadata)),
    )


def _latest_compaction(cur: psycopg.Cursor[Any], segment: sh.Segment) -> str | None:
    row = cur.execute(
        f"SELECT data FROM {_EVENTS} WHERE session_id = %s AND kind = 'compaction' "
        "AND seq > %s AND seq <= %s ORDER BY seq DESC LIMIT 1",
        (segment.session_id, segment.after_seq, segment.upto_seq),
    ).fetchone()
    return None if row is None else str(row[0])


__all__ = ["PostgresStore"]
