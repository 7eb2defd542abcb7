"""``contextwarden inspect``: composition, cached prefix and decision log of a session's turn."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from contextwarden.cli.inspect import command as inspect_command
from contextwarden.errors import UsageError
from contextwarden.governance.inspection import inspect_session
from contextwarden.log.events import AssistantMessage, Instruction, Steering, ToolCall, ToolResult, UserMessage
from contextwarden.log.store import MemoryStore, SQLiteStore
from contextwarden.models import ModelProfile, register_profile


def _coding_events(reads: int) -> list[Any]:
    events: list[Any] = [
        Instruction(text="You are a careful coding agent."),
        UserMessage(text="Fix the parser bug in src/parse.py."),
    ]
    for i in range(reads):
        path = "src/parse.py" if i % 4 == 0 else f"src/m{i}.py"
        body = "\n".join(f"line {j} of {path} version {i}" for j in range(300))
        events += [
            AssistantMessage(tool_calls=(ToolCall(id=f"c{i}", name="read_file", arguments={"path": path}),)),
            ToolResult(call_id=f"c{i}", tool_name="read_file", output=body),
        ]
    events += [
        AssistantMessage(
            tool_calls=(
                ToolCall(
                    id="e", name="edit_file", arguments={"path": "src/parse.py", "old_string": "a", "new_string": "b"}
                ),
            )
        ),
        ToolResult(call_id="e", tool_name="edit_file", output="The file src/parse.py has been updated."),
    ]
    return events


@pytest.fixture
def db(tmp_path: Path) -> str:
    path = str(tmp_path / "s.db")
    store = SQLiteStore(path)
    store.create_session("demo")
    store.append("demo", _coding_events(13), expected_last_seq=0)
    store.close()
    return path


def _json(args: list[str]) -> dict[str, Any]:
    result = CliRunner().invoke(inspect_command, args)
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.output)
    return data


def test_next_request_shows_composition_prefix_and_decisions(db: str) -> None:
    data = _json(["demo", "--store", db, "--model", "gpt-4o", "--json"])
    assert data["turn"] == data["turns"] == 15
    total = data["total_tokens"]
    assert sum(s["tokens"] for s in data["sections"].values()) == total
    assert sum(t["tokens"] for t in data["tiers"].values()) == total
    assert data["sections"]["tool_output"]["percent_of_window"] == pytest.approx(
        100 * data["sections"]["tool_output"]["tokens"] / data["window"], abs=0.01
    )
    actions = {d["action"] for d in data["decisions"]}
    assert {"supersede", "stale"} <= actions
    stale = next(d for d in data["decisions"] if d["action"] == "stale")
    assert "src/parse.py" in stale["reason"] and stale["tokens_saved"] > 0
    states = {i["state"] for i in data["items"]}
    assert "stale" in states or "superseded" in states
    assert data["cached_prefix"]["shared_tokens"] > 0


def test_turns_extend_each_other_between_window_events(db: str) -> None:
    first = _json(["demo", "--store", db, "--model", "gpt-4o", "--turn", "1", "--json"])
    assert first["cached_prefix"] == {"shared_tokens": 0, "cacheable_tokens": 0, "break": None}
    second = _json(["demo", "--store", db, "--model", "gpt-4o", "--turn", "2", "--json"])
    third = _json(["demo", "--store", db, "--model", "gpt-4o", "--turn", "3", "--json"])
    assert third["cached_prefix"]["break"] is None and third["window_events"] == []
    assert third["cached_prefix"]["shared_tokens"] >= second["total_tokens"] - second["sections"]["tools"]["tokens"]
    assert third["cached_prefix"]["cacheable_tokens"] % 128 == 0  # gpt-4o caches in 128-token steps


def test_rich_output_names_each_part(db: str) -> None:
    result = CliRunner().invoke(inspect_command, ["demo", "--store", db, "--model", "gpt-4o"], env={"COLUMNS": "160"})
    assert result.exit_code == 0, result.output
    for words in (
        "request 15 of 15 (the next one)",
        "section",
        "tier",
        "cached prefix",
        "decision log",
        "items",
        "staled by edit_file",
    ):
        assert words in result.output


def test_bad_turns_and_sessions_are_clear_errors(db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runner = CliRunner()
    for turn in ("0", "16"):
        result = runner.invoke(inspect_command, ["demo", "--store", db, "--turn", turn])
        assert result.exit_code == 2 and "there is no turn" in result.output
    missing = runner.invoke(inspect_command, ["nope", "--store", db])
    assert missing.exit_code == 2 and "no session 'nope'" in missing.output
    monkeypatch.chdir(tmp_path)
    nowhere = runner.invoke(inspect_command, ["demo"], env={"CONTEXTWARDEN_STORE": None})
    assert nowhere.exit_code == 2 and "no session store" in nowhere.output


def test_compacted_session_shows_pinned_and_summary() -> None:
    register_profile(
        ModelProfile(name="cw-inspect-tiny", context_window=16_384, max_output_tokens=2_048, tokenizer="o200k_base")
    )
    store = MemoryStore()
    sid = store.create_session().id
    events = [*_coding_events(0)[:2], Steering(text="Do not change the public API.")]
    for i in range(30):  # the agent's own long notes: masking cannot shrink them, only compaction can
        notes = "\n".join(f"note {i}.{j}: value {j * 3}" for j in range(150))
        events += [
            AssistantMessage(
                text=notes, tool_calls=(ToolCall(id=f"b{i}", name="bash", arguments={"command": f"ls {i}"}),)
            ),
            ToolResult(call_id=f"b{i}", tool_name="bash", output=f"listing {i}"),
        ]
    store.append(sid, events, expected_last_seq=0)
    view = inspect_session(store, sid, model="cw-inspect-tiny")
    assert view.sections["summary"] > 0 and view.sections["pinned"] > 0
    assert view.tiers["1 goal"] > 0
    assert view.context.total_tokens <= view.context.budget
    pinned = next(i for i in view.items if i.section == "pinned")
    assert pinned.tier == "1 goal"
    with pytest.raises(UsageError, match="there is no turn 99"):
        inspect_session(store, sid, model="cw-inspect-tiny", turn=99)
