"""A proxied session is an ordinary session: ``inspect``, ``sessions export`` and the HTML report work on it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from _proxy import rig
from contextwarden.proxy.scripted import Reply

SONNET = "claude-sonnet-4-5"


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "contextwarden", *args, "--quiet"], capture_output=True, text=True, timeout=120
    )


def _proxied_session(store: str) -> str:
    """Three turns of a tool loop through the proxy; the session id it was filed under."""
    with rig(store) as r:
        client = r.anthropic()
        messages: list[dict[str, Any]] = [{"role": "user", "content": "list the files, then read one"}]
        for turn in range(3):
            r.upstream.push(Reply(text=f"step {turn}", tool_calls=((f"toolu_{turn}", "bash", {"command": "ls"}),)))
            reply = client.messages.create(model=SONNET, max_tokens=64, messages=messages)  # type: ignore[arg-type]
            messages.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in reply.content]})
            result = {"type": "tool_result", "tool_use_id": f"toolu_{turn}", "content": f"a.py\nb.py\nturn {turn}"}
            messages.append({"role": "user", "content": [result]})
        r.proxy.settle()
        (session,) = r.proxy.store.list_sessions()
        return session.id


def test_inspect_export_and_the_report_read_a_proxied_session(tmp_path: Path) -> None:
    store = str(tmp_path / "s.db")
    session = _proxied_session(store)

    inspected = _cli("inspect", session, "--json", "--store", store)
    assert inspected.returncode == 0, inspected.stderr
    assert "turn 1" in inspected.stdout  # the request it rebuilds holds the latest tool result the client sent

    exported = _cli("sessions", "export", session, "--store", store)
    assert exported.returncode == 0, exported.stderr
    lines = [json.loads(line) for line in exported.stdout.splitlines() if line.strip()]
    kinds = [line.get("kind") for line in lines[1:]]
    assert kinds.count("assistant") == 3 and kinds.count("tool_result") == 2 and "usage" in kinds

    report = tmp_path / "report.html"
    replayed = _cli("replay", session, "--store", store, "--no-optimum", "--report", str(report))
    assert replayed.returncode == 0, replayed.stderr
    assert report.read_text(encoding="utf-8").lstrip().lower().startswith("<!doctype html")
