"""``contextwarden sessions``: ls, show, export, import, rm against a real SQLite store."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from contextwarden.cli import main
from contextwarden.log.events import AssistantMessage, Compaction, ToolCall, ToolResult, UsageReport, UserMessage
from contextwarden.log.store import SQLiteStore


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CONTEXTWARDEN_STORE", raising=False)
    path = tmp_path / ".contextwarden" / "sessions.db"
    with SQLiteStore(path) as store:
        store.create_session("demo", metadata={"title": "bug \udcff hunt"})
        store.append(
            "demo",
            [
                UserMessage(text="fix it\x00 please"),
                AssistantMessage(tool_calls=(ToolCall(id="c1", name="read"),)),
                ToolResult(call_id="c1", tool_name="read", output="x = 1\n" * 40),
                UsageReport(input_tokens=1200, output_tokens=30),
                Compaction(summary="read a file", first_kept_seq=3),
            ],
            expected_last_seq=0,
        )
        store.fork("demo", at_seq=3, new_session_id="branch")
    return path


def test_ls_table_and_json(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "sessions", "ls")
    assert code == 0
    assert "demo" in out and "branch" in out and "demo@3" in out and "bug � hunt" in out
    code, out, _ = run(capsys, "sessions", "ls", "--json")
    rows = json.loads(out)
    assert [r["id"] for r in rows] == ["demo", "branch"]
    assert rows[0]["last_seq"] == 5 and rows[0]["window_start_seq"] == 3
    assert rows[1]["parent_session_id"] == "demo" and rows[1]["fork_seq"] == 3


def test_ls_empty_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "sessions", "ls", "--store", str(tmp_path / "empty.db"))
    assert (code, out.strip()) == (0, "no sessions")


def test_show_reports_kinds_and_last_events(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "sessions", "show", "demo")
    assert code == 0
    for fragment in ("window from seq", "tool_result", "calls read", "in 1200, out 30", "fix it  please"):
        assert fragment in out
    code, out, _ = run(capsys, "sessions", "show", "branch", "--json", "--last", "2")
    report = json.loads(out)
    assert report["session"]["fork_seq"] == 3
    assert report["kinds"] == {"assistant": 1, "fork": 1, "tool_result": 1, "user": 1}
    assert [(e["seq"], e["kind"], e["session_id"]) for e in report["last_events"]] == [
        (3, "tool_result", "demo"),
        (4, "fork", "branch"),
    ]


def test_export_import_round_trip(db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, stdout_copy, _ = run(capsys, "sessions", "export", "demo")
    assert code == 0 and len(stdout_copy.splitlines()) == 6
    out_file = tmp_path / "demo.jsonl"
    code, _, err = run(capsys, "sessions", "export", "demo", "-o", str(out_file))
    assert code == 0 and "exported 5 events" in err
    assert out_file.read_text() == stdout_copy
    other = tmp_path / "other.db"
    code, out, _ = run(capsys, "sessions", "import", str(out_file), "--store", str(other), "--json")
    assert code == 0 and json.loads(out)["last_seq"] == 5
    code, out, _ = run(capsys, "sessions", "export", "demo", "--store", str(other))
    assert out == stdout_copy
    with SQLiteStore(other) as copy, SQLiteStore(db) as original:
        assert copy.read("demo") == original.read("demo")


def test_import_errors_are_one_line(db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"kind":"user","text":"ok"}\n{"kind":"user"}\n')
    code, out, err = run(capsys, "sessions", "import", str(bad), "--session", "new")
    assert code == 1 and out == ""
    assert err.strip().splitlines() == ["error: line 2: user event: missing field(s) ['text']"]
    code, _, err = run(capsys, "sessions", "show", "new")
    assert code == 1 and err.strip() == "error: no session 'new'"
    code, _, err = run(capsys, "sessions", "import", str(tmp_path / "missing.jsonl"))
    assert code == 2 and "No such file or directory" in err


def test_rm_asks_unless_yes(db: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    code, _, err = run(capsys, "sessions", "rm", "demo", "--yes")
    assert code == 1 and "forks that share its events" in err and "branch" in err
    monkeypatch.setattr("sys.stdin", io.StringIO("n\n"))
    code, _, err = run(capsys, "sessions", "rm", "branch")
    assert code == 130 and "delete session branch" in err
    monkeypatch.setattr("sys.stdin", io.StringIO("y\n"))
    code, out, _ = run(capsys, "sessions", "rm", "branch")
    assert code == 0 and out.strip() == "deleted session branch"
    code, out, _ = run(capsys, "sessions", "rm", "demo", "--yes")
    assert code == 0
    code, out, _ = run(capsys, "sessions", "ls", "--json")
    assert json.loads(out) == []
