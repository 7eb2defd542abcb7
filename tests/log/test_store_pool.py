"""PostgreSQL connection pools: concurrent statements run side by side, up to the pool's size.

A statement held up on the server (a row lock, an advisory lock) must not hold up another
thread's statement while the pool has a connection to spare; with one connection it does.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from contextwarden.errors import UsageError
from contextwarden.log.events import UserMessage
from contextwarden.log.store import PostgresStore
from contextwarden.log.store._pgpool import ConnectionPool
from contextwarden.proxy.app import Proxy
from contextwarden.proxy.settings import ProxySettings

pytestmark = pytest.mark.postgres

LOCK_KEY = 4242
PATIENCE = 30.0
"""How long a statement that should finish is given: only a wait for the lock holder exceeds it."""


@pytest.fixture
def holder(pg_schema_dsn: str) -> Iterator[Any]:
    """A connection of the test's own, outside every pool, to hold locks with."""
    import psycopg

    with psycopg.connect(pg_schema_dsn, autocommit=True) as conn:
        yield conn


def _in_thread(work: Callable[[], object]) -> tuple[threading.Thread, list[object]]:
    done: list[object] = []
    thread = threading.Thread(target=lambda: done.append(work()), daemon=True)
    thread.start()
    return thread, done


def _wait_until_blocked(dsn: str, what: str) -> None:
    """Wait until a server session waits for a lock (``what`` says whose); asked on a connection of its own."""
    import psycopg

    deadline = time.monotonic() + PATIENCE
    with psycopg.connect(dsn, autocommit=True) as conn:
        while time.monotonic() < deadline:
            row = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'").fetchone()
            if row is not None and row[0] >= 1:
                return
            time.sleep(0.02)
    raise AssertionError(f"{what} never waited for the lock")


@pytest.mark.parametrize("connections", [1, 2])
def test_the_proxy_tables_run_a_statement_while_another_waits_on_the_server(
    pg_schema_dsn: str, holder: Any, connections: int
) -> None:
    proxy = Proxy(ProxySettings(store_url=pg_schema_dsn, db_connections=connections))
    try:
        holder.execute("SELECT pg_advisory_lock(%s)", (LOCK_KEY,))
        waiting, _ = _in_thread(lambda: proxy.db.execute("SELECT pg_advisory_xact_lock(?)", (LOCK_KEY,)))
        _wait_until_blocked(pg_schema_dsn, "the proxy's statement")
        other, rows = _in_thread(lambda: proxy.db.execute("SELECT count(*) FROM contextwarden_proxy_ledger"))
        other.join(timeout=PATIENCE if connections > 1 else 0.5)
        # one connection: the second statement queues behind the first; two: it runs beside it
        assert other.is_alive() is (connections == 1)
        holder.execute("SELECT pg_advisory_unlock(%s)", (LOCK_KEY,))
        for thread in (waiting, other):
            thread.join(timeout=PATIENCE)
            assert not thread.is_alive()
        assert rows == [[(0,)]]
    finally:
        proxy.close()


@pytest.mark.parametrize("connections", [1, 2])
def test_the_session_store_reads_while_an_append_waits_for_its_row_lock(
    pg_schema_dsn: str, holder: Any, connections: int
) -> None:
    proxy = Proxy(ProxySettings(store_url=pg_schema_dsn, db_connections=connections))
    store = proxy.store
    try:
        store.create_session("busy")
        store.create_session("quiet")
        store.append("quiet", [UserMessage(text="hello")], expected_last_seq=0)
        holder.execute("BEGIN")
        holder.execute("SELECT id FROM contextwarden_sessions WHERE id = 'busy' FOR UPDATE")
        appending, _ = _in_thread(lambda: store.append("busy", [UserMessage(text="x")], expected_last_seq=0))
        _wait_until_blocked(pg_schema_dsn, "the append")
        reader, read = _in_thread(lambda: [e.text for e in store.read("quiet")])
        reader.join(timeout=PATIENCE if connections > 1 else 0.5)
        assert reader.is_alive() is (connections == 1)
        holder.execute("COMMIT")
        for thread in (appending, reader):
            thread.join(timeout=PATIENCE)
            assert not thread.is_alive()
        assert read == [["hello"]]
        assert [e.text for e in store.read("busy")] == ["x"]  # the append went through after the lock
    finally:
        proxy.close()


def test_a_pool_lends_no_more_than_its_size(pg_schema_dsn: str, holder: Any) -> None:
    store = PostgresStore(pg_schema_dsn, connections=3)
    try:
        holder.execute("SELECT pg_advisory_lock(%s)", (LOCK_KEY,))
        barrier = threading.Barrier(6)

        def wait_for_lock() -> None:
            barrier.wait()
            with store._transaction(write=False) as cur:
                cur.execute("SELECT pg_advisory_xact_lock(%s)", (LOCK_KEY,))

        threads = [threading.Thread(target=wait_for_lock, daemon=True) for _ in range(6)]
        for thread in threads:
            thread.start()
        _wait_until_blocked(pg_schema_dsn, "the store's transactions")
        assert store._pool.opened <= 3
        holder.execute("SELECT pg_advisory_unlock(%s)", (LOCK_KEY,))
        for thread in threads:
            thread.join(timeout=PATIENCE)
            assert not thread.is_alive()
        assert store._pool.opened == 3  # all six ran, three at a time, on the same three connections
    finally:
        store.close()


def test_a_pool_needs_a_size_of_at_least_one() -> None:
    with pytest.raises(UsageError, match="at least one connection"):
        ConnectionPool(lambda: None, size=0)
