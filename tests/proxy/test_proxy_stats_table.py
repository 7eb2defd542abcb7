"""``contextwarden proxy stats`` fits its terminal: ids wrap, columns go, a figure is never cut."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from _proxy import rig


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = str(tmp_path_factory.mktemp("ledger") / "s.db")
    with rig(path) as r:
        for key in ("key-a", "key-b"):
            client = r.anthropic(key)
            for n in range(3):
                client.messages.create(
                    model="claude-sonnet-4-5", max_tokens=8, messages=[{"role": "user", "content": f"{key} {n} " * 400}]
                )
        r.rows()
    return path


def _stats(store: str, *args: str, columns: int) -> str:
    env = {**os.environ, "COLUMNS": str(columns)}
    command = [sys.executable, "-m", "contextwarden", "proxy", "stats", "--store", store, *args]
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.parametrize("columns", [250, 80, 60, 44])
def test_the_table_fits_and_keeps_every_figure_it_shows_whole(store: str, columns: int) -> None:
    report: dict[str, Any] = json.loads(_stats(store, "--json", columns=columns))
    text = _stats(store, columns=columns)
    assert max(len(line) for line in text.splitlines()) <= columns
    assert "…" not in text
    flat = " ".join(text.split())
    total = report["total"]
    # the figures a table always keeps, whole, for every session and the total
    for s in [*report["sessions"], total]:
        assert f"{s['client_tokens']:,}" in flat
        assert f"{s['effective_cost_usd']:.4f}" in flat and f"{s['client_cost_usd']:.4f}" in flat
    # an id may wrap inside its cell, but all of it is there
    joined = "".join(line.strip("│┃ ") for line in text.splitlines())
    for s in report["sessions"]:
        assert all(part in joined for part in (s["session_id"][:10], s["session_id"][-10:]))
    if columns >= 120:
        assert "left out" not in text and f"{total['cache_read_tokens']:,}" in flat
    else:
        assert "left out to fit" in flat and "--json has every figure" in flat
