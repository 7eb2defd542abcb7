"""The proxy's own tables (session lanes, history prefixes, the ledger) next to the session store.

They live in the store's database: a SQLite file (the embedded default) or the PostgreSQL server
many workers share. Queries are written once with ``?`` placeholders; PostgreSQL gets ``%s``.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Sequence
from typing import Any

from ..errors import StoreError
from ..log.store import DEFAULT_SQLITE_PATH, PostgresStore, SessionStore, SQLiteStore, check_store_url, open_store
from ..log.store._pgpool import ConnectionPool
from ..log.store.postgres import on_this_machine

_SCHEMA = [
    """CREATE TABLE IF NOT EXISTS contextwarden_proxy_lanes (
        session_id TEXT PRIMARY KEY,
        scope TEXT NOT NULL,
        root TEXT NOT NULL,
        updated_at DOUBLE PRECISION NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS contextwarden_proxy_lanes_scope ON contextwarden_proxy_lanes (scope, root)",
    """CREATE TABLE IF NOT EXISTS contextwarden_proxy_prefixes (
        scope TEXT NOT NULL,
        digest TEXT NOT NULL,
        length INTEGER NOT NULL,
        session_id TEXT NOT NULL,
        PRIMARY KEY (scope, digest, session_id)
    )""",
    """CREATE TABLE IF NOT EXISTS contextwarden_proxy_ledger (
        at DOUBLE PRECISION NOT NULL,
        session_id TEXT NOT NULL,
        model TEXT NOT NULL,
        format TEXT NOT NULL,
        mode TEXT NOT NULL,
        outcome TEXT NOT NULL,
        status INTEGER NOT NULL,
        client_tokens INTEGER NOT NULL,
        forwarded_tokens INTEGER NOT NULL,
        input_tokens INTEGER NOT NULL,
        cache_read_tokens INTEGER NOT NULL,
        cache_write_tokens INTEGER NOT NULL,
        output_tokens INTEGER NOT NULL,
        cost_usd DOUBLE PRECISION NOT NULL,
        client_cost_usd DOUBLE PRECISION NOT NULL,
        projected_cost_usd DOUBLE PRECISION NOT NULL,
        added_ms DOUBLE PRECISION NOT NULL,
        note TEXT NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS contextwarden_proxy_ledger_session ON contextwarden_proxy_ledger (session_id)",
]


LOCK_WAIT_SECONDS = 0.25
"""How long a statement waits for another process's SQLite write lock before it fails (and the
request falls back): a locked store costs a request this much, never the driver's 30 s."""


DB_CONNECTIONS = 16
"""Connections the proxy keeps to a PostgreSQL store, for the session log and as many for its own
tables, opened as concurrent requests need them (``--workers`` split them: each worker opens its
share). Concurrent requests' statements then run side by side instead of queueing for one connection;
at 50 concurrent sessions 16 cut the time before forwarding the most of 1, 4, 8 and 16
(docs/benchmarks.md, "Proxy under load")."""


SQLITE_MAX_PARAMETERS = 32766 if sqlite3.sqlite_version_info >= (3, 32, 0) else 999
"""SQLite's default limit on one statement's parameters (999 before SQLite 3.32.0)."""
POSTGRES_MAX_PARAMETERS = 65535
"""PostgreSQL's limit on one statement's parameters (its protocol counts them in 16 bits)."""


class ProxyDB:
    """The proxy's tables: one SQLite connection shared by threads under a lock, or a PostgreSQL pool.

    A PostgreSQL connection lost to a server restart is replaced: the statement that finds it broken
    runs once more on a new one, and while the server is down each statement fails at once
    (:class:`~contextwarden.errors.StoreError`), so requests fall back and ledger rows wait.
    """

    def __init__(self, url: str | None, *, lock_wait: float = LOCK_WAIT_SECONDS, connections: int = 1) -> None:
        """Open the database ``url`` names (the same spellings as :func:`contextwarden.log.store.open_store`).

        ``lock_wait``: seconds a SQLite statement waits for another process's write lock.
        ``connections``: at most this many PostgreSQL connections, one per statement running.
        """
        self._lock = threading.Lock()
        self._url = url
        self.postgres = bool(url and url.startswith(("postgresql://", "postgres://")))
        self._errors: tuple[type[Exception], ...] = (sqlite3.Error, OSError)
        self._refusals: tuple[type[Exception], ...] = (sqlite3.DataError, sqlite3.IntegrityError)
        self._pool: ConnectionPool | None = None
        if self.postgres:
            import psycopg

            self._errors = (psycopg.Error, OSError)
            self._refusals = (psycopg.DataError, psycopg.IntegrityError)
            self._pool = ConnectionPool(self._connect_postgres, size=connections)
        self.local = not self.postgres or on_this_machine(url or "")
        """Whether the database is on this machine (a SQLite file, or PostgreSQL over a socket or loopback)."""
        self.max_parameters = POSTGRES_MAX_PARAMETERS if self.postgres else SQLITE_MAX_PARAMETERS
        """The most parameters one statement may have."""
        self._lock_wait = lock_wait
        self._conn: Any = None
        try:
            if self._pool is None:
                self._connect_sqlite()
            for statement in _SCHEMA:
                self._run(statement, ())
        except (_Lost, *self._errors) as exc:
            raise StoreError(f"cannot open the proxy tables: {_one_line(exc)}") from None
        if not self.postgres:
            self.execute(f"PRAGMA busy_timeout = {int(lock_wait * 1000)}")

    def _connect_postgres(self) -> Any:
        import psycopg

        return psycopg.connect(self._url or "", autocommit=True, connect_timeout=5)

    def _connect_sqlite(self) -> None:
        path = _sqlite_path(self._url)
        if path != ":memory:":
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        # opening (the schema below) may wait as long as the library's stores do; statements after it wait lock_wait
        conn = sqlite3.connect(path, timeout=30.0, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA journal_mode = WAL")
        # lanes, prefixes and ledger rows can be rebuilt or lost on power failure without harm
        # (the session log itself keeps the store's own full sync); no fsync per request for them
        conn.execute("PRAGMA synchronous = NORMAL")
        self._conn = conn

    def _run(self, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        """One statement on a connection of its own (PostgreSQL) or on the shared one under the lock."""
        if self._pool is None:
            with self._lock:
                cur = self._conn.execute(sql, params)
                return [tuple(r) for r in cur.fetchall()] if cur.description else []
        with self._pool.connection() as conn:
            try:
                cur = conn.execute(sql.replace("?", "%s"), params)
                return [tuple(r) for r in cur.fetchall()] if cur.description else []
            except self._errors as exc:
                if conn.broken or conn.closed:
                    raise _Lost(exc) from None
                raise

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run one statement; return its rows (empty for statements without any).

        A failure (the database down, locked past ``lock_wait``) is a ``StoreError``; values the
        database cannot hold (a NUL in a PostgreSQL text, a number out of a column's range) are a
        :class:`ValuesRefused`, the ``StoreError`` that running the statement again does not cure.
        """
        for attempt in (1, 2):
            try:
                return self._run(sql, tuple(params))
            except _Lost as lost:
                # a server restart broke the connection: nothing was sent, so once more on a new one
                if attempt == 1:
                    continue
                raise StoreError(f"the proxy's tables: {_one_line(lost.cause)}") from None
            except self._refusals as exc:
                raise ValuesRefused(f"the proxy's tables refused the values: {_one_line(exc)}") from None
            except self._errors as exc:
                raise StoreError(f"the proxy's tables: {_one_line(exc)}") from None
        raise AssertionError("unreachable")

    def close(self) -> None:
        """Close the connections."""
        if self._pool is not None:
            self._pool.close()
        with self._lock:
            if self._conn is not None:
                self._conn.close()


class ValuesRefused(StoreError):
    """The database refused the statement's values: running it again later would fail again."""


class _Lost(Exception):
    """Internal: the statement's PostgreSQL connection was found broken (a server restart)."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.cause = cause


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


def open_session_store(url: str | None, *, lock_wait: float = LOCK_WAIT_SECONDS, connections: int = 1) -> SessionStore:
    """The session store ``url`` names, opened for the proxy: SQLite commits without an fsync each.

    Why that is safe here: the client holds its whole history and resends it on every call, so a
    commit lost to a machine crash (a process crash loses nothing in WAL mode) is ingested again from
    the client's next request; only the usage report of a lost turn is gone. An fsync per commit
    cost ~3 ms per append on a loaded disk, twice per request, all of it added latency.
    ``lock_wait`` bounds the wait for another process's write lock (:data:`LOCK_WAIT_SECONDS`);
    ``connections`` is the size of a PostgreSQL store's connection pool.
    """
    if url is None or not url.startswith(("postgresql://", "postgres://", "memory:")):
        store = SQLiteStore(_sqlite_path(url), synchronous="NORMAL")  # its schema check may wait as usual
        store.set_busy_timeout(lock_wait)
        return store
    if url.startswith(("postgresql://", "postgres://")):
        return PostgresStore(url, connections=connections)
    return open_store(url)


def _sqlite_path(url: str | None) -> str:
    if url is None:
        return os.path.join(os.getcwd(), DEFAULT_SQLITE_PATH)
    check_store_url(url)
    if url in ("memory:", "memory://"):
        return ":memory:"
    if url.startswith("sqlite:///"):
        return url[len("sqlite:///") :]
    return url


def local_storage(store: SessionStore, db: ProxyDB) -> bool:
    """Whether the session store and the proxy's tables are both on this machine, their statements short.

    SQLite files, or PostgreSQL over a unix socket or a loopback address (``on_this_machine``).
    """
    if isinstance(store, SQLiteStore):
        return db.local
    return isinstance(store, PostgresStore) and on_this_machine(store.dsn) and db.local
