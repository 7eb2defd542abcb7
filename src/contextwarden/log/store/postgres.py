r"""The store for many agent workers on many machines: PostgreSQL through psycopg 3.

An append locks the session's row, checks the caller's expected last seq, inserts the events and
moves ``last_seq`` in one transaction: for up to a hundred events that is one statement (an
``UPDATE ... WHERE last_seq = expected`` feeding the ``INSERT``), so one round trip; a larger one
reads the row ``FOR UPDATE`` first. The ``(session_id, seq)`` primary key backs that up, and a
violation of it is reported as a conflict. Event JSON is stored
as TEXT, not JSONB: JSONB refuses ``\u0000``, which tool output may hold. The queries are the
shared SQL core's (:mod:`._sql`); this module connects, runs transactions and maps errors.

psycopg is an optional dependency: ``pip install 'contextwarden[postgres]'``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from functools import cache
from itertools import chain
from typing import TYPE_CHECKING, Any

from ...errors import ConflictError, SessionExists, SessionNotFound, StoreError, UsageError
from . import _shared as sh
from ._pgpool import ConnectionPool
from ._protocol import SessionInfo
from ._sql import _SESSION_COLUMNS, STATEMENT_BYTES, Cursor, Dialect, DuplicateSeq, SQLStore, _info_from_row
from ._sql_checkpoints import pieces_migration

if TYPE_CHECKING:
    import psycopg

_SESSIONS = "contextwarden_sessions"
_EVENTS = "contextwarden_events"
_CHECKPOINTS = "contextwarden_checkpoints"
_PIECES = "contextwarden_checkpoint_pieces"
_SESSION_KEY = "contextwarden_sessions_pkey"
_SEQ_KEY = "contextwarden_events_pkey"
_ID_KEY = "contextwarden_events_id_key"
_LOCK_KEY = 0x636F6E7465787477  # an arbitrary advisory-lock key: serializes concurrent migrations

POSTGRES = Dialect(
    name="PostgreSQL",
    param="%s",
    sessions=_SESSIONS,
    events=_EVENTS,
    checkpoints=_CHECKPOINTS,
    pieces=_PIECES,
    migrations_table="contextwarden_schema_migrations",
    creation_order="ord",
    rows_per_insert=1,  # psycopg pipelines executemany; multi-row statements measured ~5% slower
    statement_commits=True,
    lock_append=" FOR UPDATE",
    lock_fork=" FOR SHARE",
    migration_lock=f"SELECT pg_advisory_xact_lock({_LOCK_KEY})",
    migrations=(
        (
            1,
            (
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
            ),
        ),
        (
            2,
            (
                f"""CREATE TABLE {_CHECKPOINTS} (
                    session_id TEXT NOT NULL,
                    key TEXT NOT NULL,
                    seq BIGINT NOT NULL,
                    event_id TEXT NOT NULL,
                    digest TEXT NOT NULL,
                    data TEXT NOT NULL,
                    PRIMARY KEY (session_id, key)
                )""",
            ),
        ),
        (3, pieces_migration(_CHECKPOINTS, _PIECES)),
    ),
)
"""PostgreSQL's spelling of the store: prefixed tables (they share a schema with other apps), row locks."""

_KEY_DETAIL = re.compile(r"Key \(id\)=\((.*)\) already exists\.", re.DOTALL)


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError as exc:
        raise ImportError("the PostgreSQL store needs psycopg 3: pip install 'contextwarden[postgres]'") from exc
    return psycopg


_LOOPBACK = re.compile(r"localhost|127(\.\d{1,3}){3}|::1|\[::1\]")


def on_this_machine(dsn: str) -> bool:
    """Whether every server ``dsn`` names is on this machine: a unix socket, ``localhost`` or a loopback address.

    A DSN that names no host means libpq's ``PGHOST``, else its unix socket.
    """
    params = _psycopg().conninfo.conninfo_to_dict(dsn)
    hosts = str(params.get("hostaddr") or params.get("host") or os.environ.get("PGHOST", ""))
    return all(not h or h.startswith("/") or _LOOPBACK.fullmatch(h) for h in hosts.split(","))


class PostgresStore(SQLStore):
    """A :class:`~contextwarden.log.store.SessionStore` in PostgreSQL.

    Each transaction takes one of up to ``connections`` connections (:class:`._pgpool.ConnectionPool`),
    so that many threads' statements run at once; the row locks the queries take keep appends
    serialized per session. Tables go in the first schema of the connection's ``search_path``.
    """

    dialect = POSTGRES

    def __init__(self, dsn: str, *, connect_timeout: float = 10.0, connections: int = 1) -> None:
        """Open the store on ``dsn``; ``connections``: how many transactions may run at once (threads share them)."""
        self._psycopg = _psycopg()
        self.dsn = dsn
        self._connect_timeout = connect_timeout
        self._pool = ConnectionPool(self._connect, size=connections)
        self._migrate()

    def __repr__(self) -> str:
        params = self._psycopg.conninfo.conninfo_to_dict(self.dsn)
        where = f"{params.get('host', '')}:{params.get('port', '')}/{params.get('dbname', '')}"
        return f"PostgresStore({where!r})"

    def close(self) -> None:
        """Close the connections (idempotent)."""
        self._pool.close()

    def _connect(self) -> psycopg.Connection[Any]:
        # called for each new pooled connection: one lost to a server restart is replaced this way
        try:
            conn: psycopg.Connection[Any] = self._psycopg.connect(
                self.dsn, autocommit=True, connect_timeout=max(1, int(self._connect_timeout))
            )
        except self._psycopg.Error as exc:
            raise StoreError(f"cannot connect to PostgreSQL: {_one_line(exc)}") from None
        return conn

    @contextmanager
    def _transaction(self, *, write: bool, asynchronous: bool = False) -> Iterator[Cursor]:
        # writes: the row locks the queries take do the serializing. Reads run each statement on its
        # own (autocommit): under READ COMMITTED a transaction gives a read no steadier view (each
        # statement takes a new snapshot anyway), and its BEGIN and COMMIT are two more round trips
        errors = self._psycopg.errors
        with self._pool.connection() as conn:
            try:
                with conn.transaction() if write else nullcontext(), conn.cursor() as cur:
                    if write and asynchronous:
                        cur.execute("SET LOCAL synchronous_commit = off")
                    yield cur
            except errors.UniqueViolation as exc:
                if exc.diag.constraint_name == _SEQ_KEY:
                    raise DuplicateSeq() from None
                if exc.diag.constraint_name == _SESSION_KEY:
                    # a concurrent fork or import won the race for the id
                    match = _KEY_DETAIL.fullmatch(str(exc.diag.message_detail or ""))
                    name = repr(match.group(1)) if match else "(id unknown)"
                    raise SessionExists(f"session {name} already exists") from None
                raise StoreError(f"PostgreSQL: {_one_line(exc)}") from None
            except self._psycopg.Error as exc:
                raise StoreError(f"PostgreSQL: {_one_line(exc)}") from None

    def _info_and_page(
        self, cur: Cursor, session_id: str, since_seq: int | None
    ) -> tuple[SessionInfo, list[tuple[int, str]] | None]:
        # one statement, so one round trip and one snapshot: the header and the rows it counts
        rows = cur.execute(_FIRST_PAGE_SQL, (since_seq, sh.PAGE_SIZE, session_id)).fetchall()
        if not rows:
            raise SessionNotFound(f"no session {session_id!r}")
        page = [(int(row[-2]), str(row[-1])) for row in rows if row[-2] is not None]
        return _info_from_row(rows[0][:-2]), page

    def _append_at_once(self, session_id: str, batch: sh.Batch, expected_last_seq: int, *, asynchronous: bool) -> bool:
        # one statement, so one round trip and its own transaction: the UPDATE takes the row lock and
        # moves last_seq only if it is still the expected one (a writer that waited on the lock sees
        # the committed value), and the INSERT writes the rows only if the UPDATE moved it
        rows = batch.rows
        if len(rows) > APPEND_AT_ONCE_ROWS or sum(len(row[4]) for row in rows) > STATEMENT_BYTES:
            return False
        params = (rows[-1][1], batch.window_start, session_id, expected_last_seq, *chain.from_iterable(rows))
        for _ in range(3):
            with self._transaction(write=False) as cur:
                try:
                    cur.execute(_append_sql(len(rows), asynchronous=asynchronous), params)
                except Exception as exc:
                    if self._is_duplicate_id(exc):
                        duplicate = self._duplicate_id(cur, exc, rows)
                        raise UsageError(
                            f"event id {duplicate!r} is already stored; event ids must be unique"
                        ) from None
                    raise
                if cur.rowcount == len(rows):
                    return True
            actual = self.get_session(session_id).last_seq  # SessionNotFound if there is none
            if actual != expected_last_seq:
                raise ConflictError(session_id, expected_last_seq, actual)
            # the session was created in between: its position is the expected one now
        raise ConflictError(session_id, expected_last_seq, self.get_session(session_id).last_seq)

    def _is_duplicate_id(self, exc: BaseException) -> bool:
        return isinstance(exc, self._psycopg.errors.UniqueViolation) and exc.diag.constraint_name == _ID_KEY

    def _duplicate_id(self, cur: Cursor, exc: BaseException, rows: Sequence[sh.Row]) -> str:
        # the transaction is aborted, so no query can ask; the server's detail names the key
        detail = getattr(getattr(exc, "diag", None), "message_detail", None) or ""
        match = _KEY_DETAIL.fullmatch(str(detail))
        return match.group(1) if match else "?"


_FIRST_PAGE_SQL = (
    f"SELECT {', '.join('s.' + c for c in _SESSION_COLUMNS.split(', '))}, e.seq, e.data FROM {_SESSIONS} s "
    f"LEFT JOIN LATERAL (SELECT seq, data FROM {_EVENTS} WHERE session_id = s.id "
    "AND seq > coalesce(%s::bigint, s.window_start_seq - 1) AND seq <= s.last_seq ORDER BY seq LIMIT %s) e ON true "
    "WHERE s.id = %s ORDER BY e.seq"
)
"""A session's header with the first page of its own rows after a seq (``NULL``: from its window's start)."""

APPEND_AT_ONCE_ROWS = 100
"""Most events an append writes in its one statement; a larger one takes a transaction of several."""


@cache
def _append_sql(count: int, *, asynchronous: bool) -> str:
    """The compare-and-append of ``count`` rows as one statement (cached: every append asks).

    ``asynchronous``: its transaction commits without waiting for the disk (:func:`asynchronous_statement`).
    """
    values = ", ".join(["(%s::text, %s::bigint, %s::text, %s::text, %s::text)"] * count)
    statement = (
        f"WITH moved AS (UPDATE {_SESSIONS} SET last_seq = %s, "
        "window_start_seq = coalesce(%s::bigint, window_start_seq) WHERE id = %s AND last_seq = %s RETURNING id) "
        f"INSERT INTO {_EVENTS} (session_id, seq, id, kind, data) "
        f"SELECT * FROM (VALUES {values}) AS batch WHERE EXISTS (SELECT 1 FROM moved)"
    )
    return asynchronous_statement(statement) if asynchronous else statement


ASYNCHRONOUS_CTE = "asynchronous AS (SELECT set_config('synchronous_commit', 'off', true))"
"""The ``WITH`` query :func:`asynchronous_statement` adds: ``set_config`` with ``is_local`` lasts to the
end of the transaction, and the commit reads it."""


def asynchronous_statement(statement: str) -> str:
    """``statement`` made to commit its own transaction without waiting for the disk, in the same round trip.

    ``statement`` starts with ``WITH`` and ends with its ``WHERE`` condition: a ``WITH`` query that only
    selects runs only if the statement reads it, so the condition reads it too (it is always true).
    """
    if not statement.startswith("WITH "):
        raise ValueError(f"not a statement with a WITH clause: {statement[:40]!r}")
    return f"WITH {ASYNCHRONOUS_CTE}, {statement[len('WITH ') :]} AND EXISTS (SELECT 1 FROM asynchronous)"


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


__all__ = ["POSTGRES", "PostgresStore"]
