"""A result that arrives after the agent's next call: moved up at import, never silently lost in a view."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contextwarden.cli import main
from contextwarden.importers import load_transcript
from contextwarden.log.events import AssistantMessage, ToolCall, ToolResult, UserMessage
from contextwarden.log.store import SQLiteStore

CHAT = {
    "model": "gpt-4o",
    "messages": [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function",
            "function": {"name": "bash", "arguments": "{\"cmd\": \"ls\"}"}}]},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c2", "type": "function",
            "function": {"name": "bash", "arguments": "{\"cmd\": \"pwd\"}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "a.py b.py"},
        {"role": "tool", "tool_call_id": "c2", "content": "/work"},
        {"role": "assistant", "content": "done"},
    ],
}  # fmt: skip


def test_an_import_moves_a_late_result_up_to_its_call_and_says_so(tmp_path: Path) -> None:
    path = tmp_path / "late.json"
    path.write_text(json.dumps(CHAT))
    transcript = load_transcript(path)
    kinds = [(e.kind, getattr(e, "call_id", "")) for e in transcript.events]
    assert kinds == [
        ("user", ""),
        ("assistant", ""),
        ("tool_result", "c1"),
        ("assistant", ""),
        ("tool_result", "c2"),
        ("assistant", ""),
    ]
    assert any("moved 1 tool result" in w for w in transcript.warnings)


def test_inspect_lists_the_pairing_repairs_of_a_late_result_appended_live(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "s.db"
    store = SQLiteStore(db)
    store.create_session("s")
    events = [
        UserMessage(text="go"),
        AssistantMessage(tool_calls=(ToolCall(id="c1", name="bash", arguments={"cmd": "ls"}),)),
        AssistantMessage(tool_calls=(ToolCall(id="c2", name="bash", arguments={"cmd": "pwd"}),)),
        ToolResult(call_id="c1", tool_name="bash", output="a.py b.py"),
        ToolResult(call_id="c2", tool_name="bash", output="/work"),
    ]
    store.append("s", events, expected_last_seq=0)
    store.close()
    monkeypatch.setenv("COLUMNS", "200")
    try:
        main(["inspect", "--store", str(db), "s"])
    except SystemExit as done:
        assert not done.code
    out = " ".join(capsys.readouterr().out.split())
    assert "orphan tool result for call 'c1' dropped" in out
    assert "call 'c1' to 'bash' had no result" in out
