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


class ProxyDB:
    """One connection to the store's database, shared by threads under a lock."""

    def __init__(self, url: str | None) -> None:
        """Open the database ``url`` names (the same spellings as :func:`contextwarden.log.store.open_store`)."""
        self._lock = threading.Lock()
        self.postgres = bool(url and url.startswith(("postgresql://", "postgres://")))
        try:
            if url and self.postgres:
                import psycopg

                self._conn: Any = psycopg.connect(url, autocommit=True)
            else:
                path = _sqlite_path(url)
                if path != ":memory:":
                    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
                self._conn = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
                self._conn.execute("PRAGMA journal_mode = WAL")
                # lanes, prefixes and ledger rows can be rebuilt or lost on power failure without harm
                # (the session log itself keeps the store's own full sync); no fsync per request for them
                self._conn.execute("PRAGMA synchronous = NORMAL")
            for statement in _SCHEMA:
                self.execute(statement)
        except (sqlite3.Error, OSError) as exc:
            raise StoreError(f"cannot open the proxy tables: {exc}") from None

    def _sql(self, sql: str) -> str:
        return sql.replace("?", "%s") if self.postgres else sql

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run one statement; return its rows (empty for statements without any)."""
        with self._lock:
            cur = self._conn.execute(self._sql(sql), tuple(params))
            rows = cur.fetchall() if cur.description else []
            return [tuple(r) for r in rows]

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._conn.close()


def open_session_store(url: str | None) -> SessionStore:
    """The session store ``url`` names, opened for the proxy: SQLite commits without an fsync each.

    Why that is safe here: the client holds its whole history and resends it on every call, so a
    commit lost to a machine crash (a process crash loses nothing in WAL mode) is ingested again from
    the client's next request; only the usage report of a lost turn is gone. An fsync per commit
    cost ~3 ms per append on a loaded disk, twice per request, all of it added latency.
    """
    if url is None or not url.startswith(("postgresql://", "postgres://", "memory:")):
        return SQLiteStore(_sqlite_path(url), synchronous="NORMAL")
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
