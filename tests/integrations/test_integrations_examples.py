"""Every framework example in examples/ runs offline, as a user would run it, and records a session."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from _paths import ROOT
from contextwarden.log.store import SQLiteStore

EXAMPLES = ROOT / "examples"
CASES = [
    ("langchain_agent.py", "langchain", "langchain-demo"),
    ("openai_agents_session.py", "agents", "agents-demo"),
    ("pydantic_ai_agent.py", "pydantic_ai", "pydantic-ai-demo"),
    ("google_adk_agent.py", "google.adk", "adk-demo"),
]


@pytest.mark.parametrize(("example", "framework", "session_id"), CASES)
def test_example_runs_offline(example: str, framework: str, session_id: str, tmp_path: Path) -> None:
    pytest.importorskip(framework, reason=f"{example} needs its framework: pip install 'contextwarden[integrations]'")
    # each example stays short: under 40 lines
    assert len((EXAMPLES / example).read_text(encoding="utf-8").splitlines()) < 40
    env = {k: v for k, v in os.environ.items() if k != "CONTEXTWARDEN_LLM_URL"}
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / example)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Done." in done.stdout
    store = SQLiteStore(tmp_path / "example-sessions.db")
    kinds = [e.kind for e in store.read(session_id)]
    assert kinds.count("tool_result") == 8 and kinds.count("assistant") == 9
    store.close()
