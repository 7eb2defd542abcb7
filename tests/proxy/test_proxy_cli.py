"""``contextwarden proxy`` as a user runs it: a real process on a real port, then ``proxy stats``."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import anthropic
import httpx

from contextwarden.proxy.scripted import ScriptedUpstream
from contextwarden.proxy.serve import BackgroundServer


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "contextwarden", *args], capture_output=True, text=True, env=env, timeout=60
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_proxy_serves_then_stats_reports_the_ledger(tmp_path: Path) -> None:
    store = str(tmp_path / "s.db")
    port = _free_port()
    with BackgroundServer(ScriptedUpstream().app) as up:
        env = {**os.environ, "CONTEXTWARDEN_ANTHROPIC_UPSTREAM": up.url}
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "contextwarden",
                "proxy",
                "--port",
                str(port),
                "--store",
                store,
                "--mode",
                "observe",
            ],
            env=env,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            for _ in range(200):
                try:
                    httpx.get(f"http://127.0.0.1:{port}/contextwarden/stats", timeout=1)
                    break
                except httpx.TransportError:
                    time.sleep(0.1)
            with anthropic.Anthropic(base_url=f"http://127.0.0.1:{port}", api_key="k", max_retries=0) as client:
                reply = client.messages.create(
                    model="claude-sonnet-4-5", max_tokens=8, messages=[{"role": "user", "content": "hi"}]
                )
            assert reply.content[0].text == "ok"
        finally:
            process.terminate()
            _, err = process.communicate(timeout=30)
    assert f"contextwarden proxy (observe) on http://127.0.0.1:{port}" in err
    assert "HTTP Request:" not in err  # no log line per upstream call
    result = _cli("proxy", "stats", "--json", "--store", store)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    (session,) = report["sessions"]
    assert session["requests"] == 1 and session["mode"] == "observe"
    table = _cli("proxy", "stats", "--store", store, env={**os.environ, "COLUMNS": "250"})
    assert "total" in table.stdout and session["session_id"][:12] in table.stdout


def test_binding_beyond_localhost_needs_the_flag(tmp_path: Path) -> None:
    result = _cli("proxy", "--host", "0.0.0.0", "--store", str(tmp_path / "s.db"))
    assert result.returncode != 0
    assert "--allow-remote" in result.stderr
