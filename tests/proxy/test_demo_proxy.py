"""``contextwarden demo --proxy``: a real transcript through the proxy with the Anthropic SDK, offline."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from contextwarden.cli.demo import DEFAULT_TRAJECTORY, bundled_trajectories
from contextwarden.proxy.demo import DEMO_KEY, requests_in

pytest.importorskip("anthropic", reason="demo --proxy drives the proxy with the Anthropic SDK")


def _demo(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "120", "PYTHONPATH": os.pathsep.join(sys.path)}
    env.pop("CONTEXTWARDEN_STORE", None)
    command = [sys.executable, "-m", "contextwarden", "demo", "--proxy", *args]
    return subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300)


def test_the_default_session_through_the_proxy_costs_less_than_direct(tmp_path: Path) -> None:
    done = _demo(tmp_path, "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    total = doc["stats"]["total"]
    (session,) = doc["stats"]["sessions"]
    assert session["session_id"] == doc["session"] and total["fallbacks"] == 0
    assert total["requests"] == requests_in(bundled_trajectories()[DEFAULT_TRAJECTORY])  # one per model call
    assert total["forwarded_tokens"] < total["client_tokens"]
    assert total["effective_cost_usd"] < total["client_cost_usd"]  # billed through the proxy against direct
    assert doc["live_page"].startswith("http://127.0.0.1:") and doc["live_page"].endswith("/contextwarden/")
    assert doc["key"] == DEMO_KEY
    # a second run on the same store is a session of its own, not a continuation of the first
    again = json.loads(_demo(tmp_path, "--json").stdout)
    assert again["session"] != doc["session"] and again["stats"]["total"]["requests"] == total["requests"]


def test_the_text_run_ends_with_the_ledger_and_the_live_page(tmp_path: Path) -> None:
    done = _demo(tmp_path, "--trajectory", "gpt4__pydicom-1458", "--store", str(tmp_path / "s.db"))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert "contextwarden proxy ledger" in done.stdout and "Through the proxy" in done.stdout
    assert lines[-2].startswith("live page: http://127.0.0.1:") and DEMO_KEY in lines[-2]
    assert "--serve" in lines[-1]
    assert (tmp_path / "s.db").is_file()


def test_serve_needs_proxy(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-m", "contextwarden", "demo", "--serve"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
    )
    assert done.returncode == 2 and "--serve goes with --proxy" in done.stderr
