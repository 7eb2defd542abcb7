"""Every framework example in examples/ (the files docs/integrations.md names) run as-is against the local model server.

The same files as tests/integrations/test_integrations_examples.py, with ``CONTEXTWARDEN_LLM_URL`` set, so the code
a user reads is the code that runs. SmolLM2-135M may or may not call the tool; when it does, every call it
made has its result logged (the round trip). Skipped, saying why, when the server is not configured or not
answering.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_integrations_examples import CASES, EXAMPLES

from _localmodel import local_llm_url_or_skip
from contextwarden.log.store import SQLiteStore

pytestmark = pytest.mark.localmodel


@pytest.mark.parametrize(("example", "framework", "session_id"), CASES)
def test_example_runs_against_the_local_server(example: str, framework: str, session_id: str, tmp_path: Path) -> None:
    pytest.importorskip(framework, reason=f"{example} needs its framework: pip install 'contextwarden[integrations]'")
    url = local_llm_url_or_skip()
    env = {**os.environ, "CONTEXTWARDEN_LLM_URL": url, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / example)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-2000:]
    store = SQLiteStore(tmp_path / "example-sessions.db")
    events = store.read(session_id)
    store.close()
    kinds = [e.kind for e in events]
    assert kinds.count("user") == 1 and kinds.count("assistant") >= 1  # the real answer was mirrored
    called = {c.id for e in events if e.kind == "assistant" for c in getattr(e, "tool_calls", ())}
    answered = {getattr(e, "call_id", None) for e in events if e.kind == "tool_result"}
    assert called <= answered  # each tool call the model made came back with its result
