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
from ..log.store import DEFAULT_SQLITE_PATH, SessionStore, SQLiteStore, check_store_url, open_store

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


class ProxyDB:
    """One connection to the store's database, shared by threads under a lock.

    A PostgreSQL connection lost to a server restart is replaced: the statement that finds it broken
    runs once more on a new one, and while the server is down each statement fails at once
    (:class:`~contextwarden.errors.StoreError`), so requests fall back and ledger rows wait.
    """

    def __init__(self, url: str | None, *, lock_wait: float = LOCK_WAIT_SECONDS) -> None:
        """Open the database ``url`` names (the same spellings as :func:`contextwarden.log.store.open_store`).

        ``lock_wait``: seconds a SQLite statement waits for another process's write lock.
        """
        self._lock = threading.Lock()
        self._url = url
        self.postgres = bool(url and url.startswith(("postgresql://", "postgres://")))
        self._errors: tuple[type[Exception], ...] = (sqlite3.Error, OSError)
        if self.postgres:
            import psycopg

            self._errors = (psycopg.Error, OSError)
        self._lock_wait = lock_wait
        self._conn: Any = None
        try:
            self._connect()
        except self._errors as exc:
            raise StoreError(f"cannot open the proxy tables: {_one_line(exc)}") from None
        for statement in _SCHEMA:
            self.execute(statement)
        if not self.postgres:
            self.execute(f"PRAGMA busy_timeout = {int(lock_wait * 1000)}")

    def _connect(self) -> Any:
        if self.postgres:
            import psycopg

            self._conn = psycopg.connect(self._url or "", autocommit=True, connect_timeout=5)
            return self._conn
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
        return conn

    def _connection(self) -> Any:
        if self._conn is None or (self.postgres and (self._conn.broken or self._conn.closed)):
            return self._connect()
        return self._conn

    def _sql(self, sql: str) -> str:
        return sql.replace("?", "%s") if self.postgres else sql

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run one statement; return its rows (empty for statements without any).

        A failure (the database down, locked past ``lock_wait``) is a ``StoreError``.
        """
        with self._lock:
            for attempt in (1, 2):
                try:
                    cur = self._connection().execute(self._sql(sql), tuple(params))
                    rows = cur.fetchall() if cur.description else []
                    return [tuple(r) for r in rows]
                except self._errors as exc:
                    # a server restart broke the connection: nothing was sent, so once more on a new one
                    lost = self.postgres and self._conn is not None and (self._conn.broken or self._conn.closed)
                    if attempt == 1 and lost:
                        continue
                    raise StoreError(f"the proxy's tables: {_one_line(exc)}") from None
        raise AssertionError("unreachable")

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


def open_session_store(url: str | None, *, lock_wait: float = LOCK_WAIT_SECONDS) -> SessionStore:
    """The session store ``url`` names, opened for the proxy: SQLite commits without an fsync each.

    Why that is safe here: the client holds its whole history and resends it on every call, so a
    commit lost to a machine crash (a process crash loses nothing in WAL mode) is ingested again from
    the client's next request; only the usage report of a lost turn is gone. An fsync per commit
    cost ~3 ms per append on a loaded disk, twice per request, all of it added latency.
    ``lock_wait`` bounds the wait for another process's write lock (:data:`LOCK_WAIT_SECONDS`).
    """
    if url is None or not url.startswith(("postgresql://", "postgres://", "memory:")):
        store = SQLiteStore(_sqlite_path(url), synchronous="NORMAL")  # its schema check may wait as usual
        store.set_busy_timeout(lock_wait)
        return store
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
