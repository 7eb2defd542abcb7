"""The proxy's store under faults: a PostgreSQL restart, a SQLite file another process has locked.

The agent keeps getting answers (falling back while the store cannot help), the ledger loses no row
(rows wait and are written once the store answers), and the stats never fail because of it.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from _paths import ROOT
from _proxy import Rig, rig
from contextwarden.errors import StoreError
from contextwarden.proxy._db import ProxyDB

SMALL = "claude-haiku-4-5"
PG_SH = ROOT / "scripts" / "pg.sh"
CLIENT_TIMEOUT = 10.0
"""A client that gives up after this long: a request the lock held for the driver's 30 s fails the test."""


OPERATOR = "operator-token"
"""The proxy's admin token in these tests: it reads every ledger row, the ones of no known session too."""


def _ask(r: Rig, history: list[dict[str, Any]], text: str) -> httpx.Response:
    history.append({"role": "user", "content": text})
    body = {"model": SMALL, "max_tokens": 16, "messages": history}
    response = httpx.post(r.url + "/v1/messages", json=body, headers={"x-api-key": "k"}, timeout=CLIENT_TIMEOUT)
    assert response.status_code == 200, response.text
    history.append({"role": "assistant", "content": response.json()["content"][0]["text"]})
    return response


# --------------------------------------------------------------------------- SQLite locked by another process

_HOLDER = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
sys.stdin.readline()
conn.execute("COMMIT")
"""


class _LockHolder:
    """Another process holding the SQLite file's write lock until :meth:`release`."""

    def __init__(self, path: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _HOLDER, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert self.proc.stdout is not None and self.proc.stdout.readline().strip() == "locked"

    def release(self) -> None:
        self.proc.communicate("\n", timeout=30)
        assert self.proc.returncode == 0


def test_a_locked_sqlite_store_makes_requests_fall_back_and_the_ledger_catches_up(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    with rig(str(db), admin_token=OPERATOR) as r:
        history: list[dict[str, Any]] = []
        _ask(r, history, "first")
        r.proxy.settle()
        holder = _LockHolder(db)
        try:
            for n in range(3):
                _ask(r, history, f"while locked {n}")  # within the client's patience, not after 30 s
            metrics = httpx.get(r.url + "/metrics", timeout=CLIENT_TIMEOUT)
            assert metrics.status_code == 200
            assert "contextwarden_proxy_fallbacks_total 3.0" in metrics.text
            assert r.proxy.pipeline.accountant.waiting >= 1  # the ledger could not take them yet
        finally:
            holder.release()
        _ask(r, history, "after")
        rows = r.rows()
        assert [row.outcome for row in rows] == ["projected", "fallback", "fallback", "fallback", "projected"]
        # the fall-backs came before their session was known: only the operator sees those rows
        stats = httpx.get(r.url + "/contextwarden/stats", headers={"x-api-key": OPERATOR}, timeout=CLIENT_TIMEOUT)
        assert stats.json()["total"]["requests"] == 5 and stats.json()["total"]["fallbacks"] == 3
        users = [e.text for e in r.proxy.store.read(rows[-1].session_id) if e.kind == "user"]
        assert users == ["first", "while locked 0", "while locked 1", "while locked 2", "after"]


def test_lock_wait_bounds_how_long_a_statement_waits_for_the_lock(tmp_path: Path) -> None:
    path = tmp_path / "p.db"
    ProxyDB(str(path)).close()
    holder = _LockHolder(path)
    try:
        db = ProxyDB(str(path), lock_wait=0.05)
        with pytest.raises(StoreError, match="locked"):
            db.execute("DELETE FROM contextwarden_proxy_lanes")
        assert db.execute("SELECT count(*) FROM contextwarden_proxy_lanes") == [(0,)]  # reads do not wait
        patient = ProxyDB(str(path), lock_wait=20)
        releaser = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.5)"])
        releaser.wait()
        holder.release()
        patient.execute("DELETE FROM contextwarden_proxy_lanes")  # it waited for the lock to go
    finally:
        if holder.proc.poll() is None:
            holder.release()
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT count(*) FROM contextwarden_proxy_ledger").fetchone() == (0,)


# --------------------------------------------------------------------------- PostgreSQL restarts


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def own_postgres() -> Iterator[tuple[str, Callable[..., str]]]:
    """A throwaway PostgreSQL cluster this test may restart; ``pg(cmd)`` runs ``pg.sh cmd`` on it."""
    pytest.importorskip("psycopg")
    if not glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"):
        pytest.skip("no PostgreSQL binaries under /usr/lib/postgresql (install Debian's postgresql)")
    folder = tempfile.mkdtemp(prefix="contextwarden-pg-restart-")
    env = {**os.environ, "CONTEXTWARDEN_PG_DIR": folder, "CONTEXTWARDEN_PG_PORT": str(_free_port())}

    def pg(*command: str) -> str:
        done = subprocess.run(["bash", str(PG_SH), *command], env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    try:
        yield pg("start"), pg
    finally:
        pg("stop")
        shutil.rmtree(folder, ignore_errors=True)


def test_the_proxy_survives_postgresql_restarts_and_outages(own_postgres: tuple[str, Callable[..., str]]) -> None:
    dsn, pg = own_postgres
    with rig(dsn, admin_token=OPERATOR) as r:
        history: list[dict[str, Any]] = []
        _ask(r, history, "before")
        for mode in ("fast", "immediate"):
            pg("restart", mode)
            for n in range(2):
                _ask(r, history, f"after a {mode} restart {n}")
            stats = httpx.get(r.url + "/contextwarden/stats", timeout=CLIENT_TIMEOUT)
            assert stats.status_code == 200, stats.text
        pg("stop")
        _ask(r, history, "while it is down")  # forwarded as sent
        stats = httpx.get(r.url + "/contextwarden/stats", timeout=CLIENT_TIMEOUT)
        assert stats.status_code == 503 and "store" in stats.json()["error"]["message"]
        pg("start")
        _ask(r, history, "back")
        rows = r.rows()
        assert len(rows) == 7  # no request's row was lost
        outcomes = [row.outcome for row in rows]
        assert outcomes[-1] == "projected" and outcomes[5] == "fallback"
        # a restart costs at most the one request that finds the store's connection broken
        assert outcomes[1:5].count("projected") >= 2
        stats = httpx.get(r.url + "/contextwarden/stats", headers={"x-api-key": OPERATOR}, timeout=CLIENT_TIMEOUT)
        assert stats.status_code == 200 and stats.json()["total"]["requests"] == 7


def test_a_restart_costs_one_statement_however_many_connections_were_pooled(
    own_postgres: tuple[str, Callable[..., str]],
) -> None:
    import threading

    from contextwarden.log.store import PostgresStore

    dsn, pg = own_postgres
    store = PostgresStore(dsn, connections=4)
    db = ProxyDB(dsn, connections=4)
    try:
        store.create_session("s")
        barrier = threading.Barrier(4)

        def busy() -> None:  # four threads hold a connection of each pool at once, then leave them idle
            with store._pool.connection(), db._pool.connection():  # type: ignore[union-attr]
                barrier.wait()

        threads = [threading.Thread(target=busy) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert store._pool.opened == 4 and db._pool is not None and db._pool.opened == 4
        pg("restart", "immediate")
        # the store reports the one statement that found its connection broken, the proxy's tables retry it
        failures = 0
        for _ in range(4):
            try:
                store.get_session("s")
            except StoreError:
                failures += 1
        assert failures == 1
        for _ in range(4):
            assert db.execute("SELECT count(*) FROM contextwarden_proxy_ledger") == [(0,)]
    finally:
        store.close()
        db.close()
