"""The embedded default store: one SQLite file, safe across threads and processes.

WAL journal with ``synchronous=FULL`` so an acknowledged append survives a crash; appends take the
write lock up front (``BEGIN IMMEDIATE``) so two processes appending to one session serialize and
the loser sees :class:`~contextwarden.errors.ConflictError`, never an interleaving. Each event is
one row holding the codec's JSON plus the columns the queries need. The queries are the shared
SQL core's (:mod:`._sql`); this module opens the file, runs transactions and maps SQLite's errors.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext, suppress

from ...errors import StoreError, UsageError
from . import _shared as sh
from ._sql import Cursor, Dialect, SQLStore
from ._sql_checkpoints import pieces_migration

SQLITE = Dialect(
    name="SQLite",
    param="?",
    sessions="sessions",
    events="events",
    checkpoints="checkpoints",
    pieces="checkpoint_pieces",
    migrations_table="schema_migrations",
    creation_order="rowid",
    # one statement of many rows costs SQLite about a quarter less CPU per row than one per row;
    # 100 rows of 5 values stay under the 999 variables older SQLite builds allow
    rows_per_insert=100,
    migrations=(
        (
            1,
            (
                """CREATE TABLE sessions (
                    id TEXT PRIMARY KEY,
                    created_at REAL NOT NULL,
                    last_seq INTEGER NOT NULL DEFAULT 0,
                    window_start_seq INTEGER NOT NULL DEFAULT 1,
                    parent_session_id TEXT,
                    fork_seq INTEGER NOT NULL DEFAULT 0,
                    metadata TEXT NOT NULL DEFAULT '{}'
                )""",
                "CREATE INDEX sessions_parent ON sessions (parent_session_id)",
                """CREATE TABLE events (
                    session_id TEXT NOT NULL,
                    seq INTEGER NOT NULL,
                    id TEXT NOT NULL UNIQUE,
                    kind TEXT NOT NULL,
                    data TEXT NOT NULL,
                    UNIQUE (session_id, seq)
                )""",
                "CREATE INDEX events_compaction ON events (session_id, seq) WHERE kind = 'compaction'",
                """CREATE TRIGGER events_append_only BEFORE UPDATE ON events
                BEGIN SELECT RAISE(ABORT, 'contextwarden events are append-only'); END""",
            ),
        ),
        (
            2,
            (
                """CREATE TABLE checkpoints (
                    session_id TEXT NOT NULL,
                    key TEXT NOT NULL,
                    seq INTEGER NOT NULL,
                    event_id TEXT NOT NULL,
                    digest TEXT NOT NULL,
                    data TEXT NOT NULL,
                    PRIMARY KEY (session_id, key)
                )""",
            ),
        ),
        (3, pieces_migration("checkpoints", "checkpoint_pieces")),
    ),
)
"""SQLite's spelling of the store; BEGIN IMMEDIATE stands in for row locks."""


class SQLiteStore(SQLStore):
    """A :class:`~contextwarden.log.store.SessionStore` in one SQLite file.

    One connection per store object, shared by threads under a lock; open one store per process.
    """

    dialect = SQLITE

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout: float = 30.0, synchronous: str = "FULL") -> None:
        # ``synchronous="NORMAL"``: a commit survives a crash of the process but not of the machine
        # (no fsync per commit); for writers that can replay what they wrote, like the proxy
        if synchronous not in ("FULL", "NORMAL"):
            raise UsageError(f"synchronous must be 'FULL' or 'NORMAL', got {synchronous!r}")
        self.path = os.fspath(path)
        self._synchronous = synchronous
        if self.path != ":memory:":
            os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
        self._lock = threading.RLock()
        try:
            # autocommit mode: transactions are opened explicitly, so BEGIN IMMEDIATE is ours to choose
            self._conn = sqlite3.connect(self.path, timeout=busy_timeout, isolation_level=None, check_same_thread=False)
            self._conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
            self._conn.execute("PRAGMA journal_mode = WAL")
            self._conn.execute(f"PRAGMA synchronous = {synchronous}")
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open SQLite store {self.path!r}: {exc}") from None
        self._migrate()

    def __repr__(self) -> str:
        return f"SQLiteStore({self.path!r})"

    def close(self) -> None:
        """Close the connection (idempotent)."""
        with self._lock:
            self._conn.close()

    def set_busy_timeout(self, seconds: float) -> None:
        """Wait at most ``seconds`` for another process's lock from now on (opening waited ``busy_timeout``)."""
        with self._lock:
            self._conn.execute(f"PRAGMA busy_timeout = {int(seconds * 1000)}")

    @contextmanager
    def _transaction(self, *, write: bool, asynchronous: bool = False) -> Iterator[Cursor]:
        # IMMEDIATE takes the write lock now, so the last_seq an append reads cannot change before
        # COMMIT; a read is one DEFERRED transaction, so a header and its rows come from one snapshot
        begin = "BEGIN IMMEDIATE" if write else "BEGIN DEFERRED"
        # the setting applies to the connection, so it is set for this commit and set back after it
        relax = write and asynchronous and self._synchronous == "FULL"
        with self._lock, self._synchronous_normal() if relax else nullcontext():
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

    @contextmanager
    def _synchronous_normal(self) -> Iterator[None]:
        # in WAL mode a NORMAL commit is not synced; the next FULL one syncs the WAL, this commit with it
        self._pragma("synchronous = NORMAL")
        try:
            yield
        finally:
            self._pragma(f"synchronous = {self._synchronous}")

    def _pragma(self, setting: str) -> None:
        try:
            self._conn.execute(f"PRAGMA {setting}")
        except sqlite3.Error as exc:
            raise StoreError(f"SQLite store {self.path!r}: {exc}") from None

    def _is_duplicate_id(self, exc: BaseException) -> bool:
        return isinstance(exc, sqlite3.IntegrityError) and "events.id" in str(exc)

    def _duplicate_id(self, cur: Cursor, exc: BaseException, rows: Sequence[sh.Row]) -> str:
        # executemany stops at the first refused row, and the rows before it are in this
        # transaction: the culprit is the first row whose id is stored at another position
        for session_id, seq, event_id, _, _ in rows:
            found = cur.execute("SELECT session_id, seq FROM events WHERE id = ?", (event_id,)).fetchone()
            if found is not None and tuple(found) != (session_id, seq):
                return event_id
        return "?"


__all__ = ["SQLITE", "SQLiteStore"]
