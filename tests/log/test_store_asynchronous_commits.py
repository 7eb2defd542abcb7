"""Appends that commit without waiting for the disk (``asynchronous_commits``), and only those.

What the database is told is checked where it decides: PostgreSQL reads ``synchronous_commit`` at
commit time, so an append made inside an open transaction shows the setting the commit would use;
SQLite reads ``PRAGMA synchronous`` at commit, so the statements around the transaction show it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from contextwarden.log.events import UserMessage
from contextwarden.log.store import (
    PostgresStore,
    SQLiteStore,
    asynchronous_commits,
    committing_asynchronously,
)
from contextwarden.log.store.postgres import APPEND_AT_ONCE_ROWS, asynchronous_statement
from contextwarden.proxy._db import ProxyDB
from contextwarden.proxy.identity import Identity, SessionIndex


def _users(n: int) -> list[UserMessage]:
    return [UserMessage(text=f"u {i}") for i in range(n)]


def test_the_context_is_only_inside_the_block_and_nests() -> None:
    assert not committing_asynchronously()
    with asynchronous_commits():
        with asynchronous_commits():
            assert committing_asynchronously()
        assert committing_asynchronously()
    assert not committing_asynchronously()


# ---------------------------------------------------------------------------------------------- SQLite


def _traced(store: SQLiteStore) -> list[str]:
    sent: list[str] = []
    store._conn.set_trace_callback(sent.append)
    return sent


def _synchronous(store: SQLiteStore) -> int:
    return int(store._conn.execute("PRAGMA synchronous").fetchone()[0])


def test_a_full_sqlite_store_relaxes_only_the_asynchronous_appends_commit(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db")  # synchronous=FULL: every commit syncs the WAL
    store.create_session("s")
    sent = _traced(store)
    store.append("s", _users(1), expected_last_seq=0)
    assert not [s for s in sent if s.startswith("PRAGMA")]
    sent.clear()
    with asynchronous_commits():
        store.append("s", _users(2), expected_last_seq=1)
    pragmas = [i for i, s in enumerate(sent) if s.startswith("PRAGMA synchronous")]
    begin, commit = sent.index("BEGIN IMMEDIATE"), sent.index("COMMIT")
    assert [sent[i] for i in pragmas] == ["PRAGMA synchronous = NORMAL", "PRAGMA synchronous = FULL"]
    assert pragmas[0] < begin < commit < pragmas[1]
    assert _synchronous(store) == 2  # FULL again for whatever comes next
    assert [e.seq for e in store.read("s")] == [1, 2, 3]
    store.close()


def test_a_normal_sqlite_store_already_commits_that_way(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db", synchronous="NORMAL")
    store.create_session("s")
    sent = _traced(store)
    with asynchronous_commits():
        store.append("s", _users(1), expected_last_seq=0)
    assert not [s for s in sent if s.startswith("PRAGMA")]
    assert _synchronous(store) == 1
    store.close()


def test_a_refused_asynchronous_append_leaves_the_store_full(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    store.create_session("s")
    with asynchronous_commits(), pytest.raises(Exception, match="expected"):
        store.append("s", _users(1), expected_last_seq=5)
    assert _synchronous(store) == 2
    store.close()


# ---------------------------------------------------------------------------------------------- PostgreSQL


@pytest.fixture
def pg_store(pg_schema_dsn: str) -> Iterator[PostgresStore]:
    with PostgresStore(pg_schema_dsn) as opened:
        yield opened


class _Undo(Exception):
    """Rolls the inspected transaction back."""


def _commit_setting(pool: Any, write: Any) -> str:
    """``synchronous_commit`` as the commit of ``write()``'s statements would read it.

    The pool lends a thread the connection it already holds, so ``write`` runs inside the open
    transaction here, which is rolled back after the look.
    """
    with pool.connection() as conn:
        try:
            with conn.transaction():
                write()
                setting = str(conn.execute("SHOW synchronous_commit").fetchone()[0])
                raise _Undo
        except _Undo:
            pass
    return setting


@pytest.mark.postgres
@pytest.mark.parametrize("rows", [1, APPEND_AT_ONCE_ROWS + 1], ids=["one-statement", "transaction"])
def test_a_postgresql_append_commits_asynchronously_only_when_asked(pg_store: PostgresStore, rows: int) -> None:
    pg_store.create_session("s")

    def append() -> None:
        pg_store.append("s", _users(rows), expected_last_seq=0)

    def asynchronously() -> None:
        with asynchronous_commits():
            append()

    assert _commit_setting(pg_store._pool, append) == "on"
    assert _commit_setting(pg_store._pool, asynchronously) == "off"
    assert pg_store.get_session("s").last_seq == 0  # both looks were rolled back
    with asynchronous_commits():
        append()
    assert len(pg_store.read("s")) == rows  # committed, and visible at once
    with pg_store._pool.connection() as conn:  # the setting lasted only for its transaction
        assert conn.execute("SHOW synchronous_commit").fetchone()[0] == "on"


@pytest.mark.postgres
def test_the_proxys_session_index_remembers_asynchronously_when_asked(pg_schema_dsn: str) -> None:
    db = ProxyDB(pg_schema_dsn)
    index = SessionIndex(db, salt="s")
    identity = Identity(session_id="px-a", scope="a/", how="new")

    def remember() -> None:
        index.remember(identity, "d1", 2)

    def asynchronously() -> None:
        with asynchronous_commits():
            remember()

    assert db._pool is not None
    assert _commit_setting(db._pool, remember) == "on"
    assert _commit_setting(db._pool, asynchronously) == "off"
    with asynchronous_commits():
        remember()
    rows = db.execute("SELECT session_id, length FROM contextwarden_proxy_prefixes WHERE digest = ?", ("d1",))
    assert rows == [("px-a", 2)]
    db.close()


def test_only_a_statement_with_a_with_clause_and_a_condition_last_can_be_made_asynchronous() -> None:
    made = asynchronous_statement("WITH a AS (SELECT 1) UPDATE t SET x = 1 WHERE y = 2")
    assert made.startswith("WITH asynchronous AS (SELECT set_config('synchronous_commit', 'off', true)), a AS")
    assert made.endswith("WHERE y = 2 AND EXISTS (SELECT 1 FROM asynchronous)")
    with pytest.raises(ValueError, match="WITH clause"):
        asynchronous_statement("UPDATE t SET x = 1 WHERE y = 2")
