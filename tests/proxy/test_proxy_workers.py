"""``contextwarden proxy --workers N``: several processes on one port and one store serve sessions as one."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from contextwarden.log.store import open_store
from contextwarden.proxy._db import ProxyDB
from contextwarden.proxy.ledger import Ledger
from contextwarden.proxy.scripted import ScriptedUpstream
from contextwarden.proxy.serve import BackgroundServer, worker_settings
from contextwarden.proxy.settings import ProxySettings

SMALL = "claude-haiku-4-5"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry))
    return found


def _serve_sessions(store: str) -> None:
    port = _free_port()
    with BackgroundServer(ScriptedUpstream().app) as up:
        env = {**os.environ, "CONTEXTWARDEN_ANTHROPIC_UPSTREAM": up.url}
        cmd = [sys.executable, "-m", "contextwarden", "proxy", "--port", str(port), "--store", store, "--workers", "2"]
        process = subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE, text=True)
        url = f"http://127.0.0.1:{port}"
        try:
            for _ in range(300):
                try:
                    httpx.get(url + "/metrics", timeout=1)
                    break
                except httpx.TransportError:
                    time.sleep(0.1)
            assert len(_children(process.pid)) >= 2  # the workers (and multiprocessing's resource tracker)
            histories: dict[str, list[dict[str, Any]]] = {key: [] for key in ("k1", "k2", "k3")}
            with httpx.Client(timeout=60) as client:  # a fresh connection per call: any worker may answer
                for turn in range(4):
                    for key, history in histories.items():
                        history.append({"role": "user", "content": f"{key} turn {turn}"})
                        body = {"model": SMALL, "max_tokens": 16, "messages": history}
                        reply = client.post(
                            url + "/v1/messages", json=body, headers={"x-api-key": key, "connection": "close"}
                        )
                        assert reply.status_code == 200, reply.text
                        history.append({"role": "assistant", "content": reply.json()["content"][0]["text"]})
        finally:
            process.send_signal(signal.SIGINT)
            _, err = process.communicate(timeout=60)
    assert "2 workers" in err
    sessions = open_store(store)
    try:
        infos = sessions.list_sessions()
        assert len(infos) == 3  # one session per conversation, whichever worker served each call
        for info in infos:
            users = [e.text for e in sessions.read(info.id) if e.kind == "user"]
            key = users[0].split()[0]
            assert users == [f"{key} turn {t}" for t in range(4)]
    finally:
        sessions.close()
    db = ProxyDB(store)
    try:
        rows = Ledger(db).rows()
    finally:
        db.close()
    assert len(rows) == 12 and {row.outcome for row in rows} == {"projected"}


def test_two_workers_on_sqlite_serve_each_session_as_one(tmp_path: Path) -> None:
    _serve_sessions(str(tmp_path / "s.db"))


def test_two_workers_on_postgresql_serve_each_session_as_one(pg_schema_dsn: str) -> None:
    _serve_sessions(pg_schema_dsn)


def test_workers_need_a_shared_store() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "contextwarden", "proxy", "--workers", "2", "--store", "memory:"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "--workers needs a store" in done.stderr


def test_workers_split_the_database_connections() -> None:
    settings = ProxySettings(db_connections=16)
    assert worker_settings(settings, 1).db_connections == 16
    assert worker_settings(settings, 2).db_connections == 8
    assert worker_settings(settings, 3).db_connections == 6  # rounded up: every worker gets its share
    assert worker_settings(ProxySettings(db_connections=2), 4).db_connections == 1
