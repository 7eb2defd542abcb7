"""The six-rule linter over foreign JSONL logs and our own sessions, its CLI and its assertions."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from contextwarden.cli.lint import command as lint_command
from contextwarden.fragments import default_registry
from contextwarden.governance import (
    LintOptions,
    assert_bounded,
    assert_prefix_stable,
    lint_file,
    lint_requests,
    lint_session,
    read_requests,
)
from contextwarden.governance.requests import BadLine, Request
from contextwarden.log.events import AssistantMessage, Instruction, ToolCall, ToolResult, UserMessage
from contextwarden.log.store import SQLiteStore
from contextwarden.tokens import HeuristicCounter

SYSTEM = "You are a careful coding agent."
TOOLS = [
    {"type": "function", "function": {"name": "bash", "description": "run", "parameters": {"type": "object"}}},
    {"type": "function", "function": {"name": "read", "description": "read", "parameters": {"type": "object"}}},
]


def chat_log(turns: int, *, system: Any = None, tools: Any = None, output: Any = None) -> list[dict[str, Any]]:
    """A growing OpenAI Chat session: request t+1 extends request t unless a hook changes something."""
    payloads = []
    messages: list[dict[str, Any]] = []
    for t in range(turns):
        sys_text = system(t) if system else SYSTEM
        messages = [{"role": "system", "content": sys_text}, *messages[1:]]
        messages.append({"role": "user", "content": f"step {t}"})
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": f"call_{t}", "type": "function", "function": {"name": "bash", "arguments": '{"cmd":"ls"}'}}
                ],
            }
        )
        messages.append({"role": "tool", "tool_call_id": f"call_{t}", "content": output(t) if output else f"out {t}"})
        payloads.append({"model": "gpt-4o", "messages": list(messages), "tools": tools(t) if tools else TOOLS})
    return payloads


def write_jsonl(path: Path, payloads: list[Any], *, raw_lines: dict[int, str] | None = None) -> Path:
    lines = [json.dumps(p) for p in payloads]
    for index, text in sorted((raw_lines or {}).items()):
        lines.insert(index, text)
    path.write_text("\n".join(lines) + "\n")
    return path


def findings(report: Any, rule: str) -> list[Any]:
    return [f for f in report.findings if f.rule == rule]


# --------------------------------------------------------------------------- R1 / R2


def test_a_log_that_only_grows_is_clean(tmp_path: Path) -> None:
    report = lint_file(write_jsonl(tmp_path / "log.jsonl", chat_log(12)))
    assert report.requests == 12
    assert report.breaks == 0
    assert report.ok, report.findings


def test_timestamp_in_system_prompt_is_a_history_rewrite_and_named(tmp_path: Path) -> None:
    log = chat_log(4, system=lambda t: f"{SYSTEM}\nCurrent time: 2025-03-0{t + 1} 10:00:00")
    report = lint_file(write_jsonl(tmp_path / "log.jsonl", log))
    r1 = findings(report, "R1")
    assert [f.request for f in r1] == [2, 3, 4]
    assert r1[0].item == "messages[0] (system)"
    assert r1[0].details["cause"] == "system_dynamic"
    assert "2025-03-02 10:00:00" in r1[0].message
    assert r1[0].details["shared_tokens"] == 0
    r2 = findings(report, "R2")
    assert len(r2) == 1 and len(r2[0].details["breaks"]) == 3
    assert not report.ok


def test_reordered_and_changed_tools_are_told_apart(tmp_path: Path) -> None:
    extra = {"type": "function", "function": {"name": "deploy", "parameters": {}}}
    log = chat_log(3, tools=lambda t: [TOOLS, TOOLS[::-1], [*TOOLS[::-1], extra]][t])
    report = lint_file(write_jsonl(tmp_path / "log.jsonl", log))
    causes = [(f.request, f.details["cause"], f.item) for f in findings(report, "R1")]
    assert causes == [(2, "tools_reordered", "tools[0] (read)"), (3, "tools_changed", "tools[2] (deploy)")]
    assert "added: deploy" in findings(report, "R1")[1].message


def test_edited_and_removed_earlier_messages(tmp_path: Path) -> None:
    log = chat_log(4)
    edited = json.loads(json.dumps(log[2]))
    edited["messages"][3]["content"] = "out 0 (edited)"
    log[2] = edited
    dropped = json.loads(json.dumps(log[3]))
    del dropped["messages"][1:4]
    log[3] = dropped
    report = lint_file(write_jsonl(tmp_path / "log.jsonl", log))
    r1 = {f.request: f for f in findings(report, "R1")}
    assert r1[3].details["cause"] == "message_edited" and r1[3].item == "messages[3] (tool result of bash, call_0)"
    assert r1[4].details["cause"] == "messages_removed"
    assert r1[4].details["shared_tokens"] > 0


def test_churn_threshold_is_per_ten_requests(tmp_path: Path) -> None:
    log = chat_log(10, system=lambda t: SYSTEM + (" v2" if t >= 3 else "") + (" v3" if t >= 6 else ""))
    path = write_jsonl(tmp_path / "log.jsonl", log)
    assert len(findings(lint_file(path), "R2")) == 1
    assert findings(lint_file(path, options=LintOptions(max_breaks_per_10=2)), "R2") == []


def test_anthropic_cache_breakpoints_moving_is_not_a_break(tmp_path: Path) -> None:
    payloads = []
    messages: list[dict[str, Any]] = []
    for t in range(4):
        for m in messages:
            for block in m["content"]:
                block.pop("cache_control", None)
        messages.append({"role": "user", "content": [{"type": "text", "text": f"q{t}"}]})
        messages.append({"role": "assistant", "content": [{"type": "text", "text": f"a{t}"}]})
        messages[-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
        payloads.append(
            {
                "model": "claude-sonnet-4-5",
                "system": [{"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral"}}],
                "messages": json.loads(json.dumps(messages)),
            }
        )
    report = lint_file(write_jsonl(tmp_path / "a.jsonl", payloads))
    assert report.breaks == 0 and report.ok


def test_stateful_responses_requests_are_counted_not_compared(tmp_path: Path) -> None:
    payloads = [
        {"model": "gpt-5", "input": "hello"},
        {"model": "gpt-5", "previous_response_id": "resp_1", "input": [{"role": "user", "content": "more"}]},
    ]
    report = lint_file(write_jsonl(tmp_path / "r.jsonl", payloads))
    assert report.unchecked_pairs == 1 and report.breaks == 0 and report.ok


# --------------------------------------------------------------------------- R3-R6


def test_oversized_items_are_reported_once_not_every_request(tmp_path: Path) -> None:
    huge = "word " * 12_000
    report = lint_file(write_jsonl(tmp_path / "log.jsonl", chat_log(5, output=lambda t: huge if t == 1 else "ok")))
    r4 = findings(report, "R4")
    assert len(r4) == 1 and r4[0].request == 2 and r4[0].details["tokens"] > 10_000
    assert "tool result of bash, call_1" in r4[0].item
    r3 = findings(report, "R3")
    assert len(r3) == 1 and "looks uncapped" in r3[0].message
    r5 = findings(report, "R5")
    assert len(r5) == 1 and r5[0].details["kind"] == "tool_output:bash"


def test_truncation_marker_means_capped_and_known_kinds_need_no_review(tmp_path: Path) -> None:
    capped = "line\n" * 3_000 + "[... 9000 lines truncated ...]\n" + "tail\n" * 10
    log = chat_log(3, output=lambda t: capped)
    path = write_jsonl(tmp_path / "log.jsonl", log)
    report = lint_file(path)
    assert findings(report, "R3") == []
    r5 = findings(report, "R5")
    assert len(r5) == 1 and r5[0].occurrences == 3  # one finding per kind, every item counted
    assert findings(lint_file(path, options=LintOptions(known_kinds=frozenset({"tool_output:bash"}))), "R5") == []


def test_changing_fragment_like_blocks_are_reported_stable_ones_are_not(tmp_path: Path) -> None:
    payloads = []
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}]
    for t in range(5):
        messages.append(
            {
                "role": "user",
                "content": f"<env>\ncwd: /repo\ngit status: {t} changed\n</env>\n"
                f"<reminder>run the tests</reminder>\nstep {t}",
            }
        )
        messages.append({"role": "assistant", "content": "ok"})
        messages.append({"role": "tool", "tool_call_id": "x", "content": f"<result>{t}</result>"})
        payloads.append({"model": "gpt-4o", "messages": list(messages)})
    report = lint_file(write_jsonl(tmp_path / "log.jsonl", payloads))
    r6 = findings(report, "R6")
    assert [f.details["tag"] for f in r6] == ["env"]
    assert r6[0].request == 2 and r6[0].occurrences == 4


# --------------------------------------------------------------------------- bad input


def test_mixed_formats_are_detected_per_line(tmp_path: Path) -> None:
    payloads = [
        {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]},
        {
            "model": "gpt-5",
            "instructions": SYSTEM,
            "input": [
                {"role": "user", "content": "hi"},
                {"type": "function_call", "call_id": "c", "name": "read", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c", "output": "text"},
            ],
        },
        {
            "model": "claude-sonnet-4-5",
            "system": SYSTEM,
            "messages": [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "read", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "text"}]},
            ],
        },
        {
            "request": {"model": "gpt-4o", "messages": [{"role": "user", "content": "wrapped"}]},
            "response": {
                "usage": {"prompt_tokens": 12, "completion_tokens": 3, "prompt_tokens_details": {"cached_tokens": 8}}
            },
        },
    ]
    parsed = [r for r in read_requests(write_jsonl(tmp_path / "mixed.jsonl", payloads)) if isinstance(r, Request)]
    assert [r.format for r in parsed] == ["openai_chat", "openai_responses", "anthropic", "openai_chat"]
    assert parsed[1].messages[-1].kind == "tool_output:read"
    assert parsed[2].messages[-1].kind == "tool_output:read"
    assert parsed[3].usage is not None and parsed[3].usage.cache_read_tokens == 8


def test_truncated_and_foreign_lines_are_reported_not_fatal(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "log.jsonl",
        chat_log(3),
        raw_lines={1: '{"model": "gpt-4o", "messages": [{"role": "us', 2: "[1, 2, 3]", 3: '{"event": "not a request"}'},
    )
    path.write_bytes(path.read_bytes() + b'{"model": "gpt-4o", "mess\xff')  # cut mid-write, invalid UTF-8
    report = lint_file(path)
    assert report.requests == 3 and report.ok
    assert [b.line for b in report.bad_lines] == [2, 3, 4, 7]
    assert "truncated or invalid JSON" in report.bad_lines[0].error
    assert "not a JSON object" in report.bad_lines[1].error
    assert "not a request payload" in report.bad_lines[2].error


def test_one_hundred_thousand_requests_stream_in_bounded_memory(tmp_path: Path) -> None:
    big = tmp_path / "big.jsonl"
    lines = [
        '{"model":"m","messages":[{"role":"user","content":"q%d"}]}',
        '{"model":"m","input":"q%d"}',
        '{"model":"m","system":"s","messages":[{"role":"user","content":"q%d"}]}',
    ]
    with big.open("w") as handle:
        for i in range(100_000):
            handle.write(lines[i % 3] % (i % 5) + "\n")
    script = textwrap.dedent("""
        import resource, sys
        from contextwarden.governance.lint import lint_file
        report = lint_file(sys.argv[1])
        print(report.requests, report.counts["R1"], len(report.findings),
              resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
    """)
    small = tmp_path / "small.jsonl"
    small.write_text("".join(lines[i % 3] % i + "\n" for i in range(300)))
    runs = [
        subprocess.run([sys.executable, "-c", script, str(p)], capture_output=True, text=True, check=True)
        for p in (small, big)
    ]
    (_, _, _, base_kb), (requests, r1, kept, big_kb) = ([int(x) for x in r.stdout.split()] for r in runs)
    assert requests == 100_000 and r1 == 99_999
    assert kept <= 2 * LintOptions().max_findings_per_rule
    # Holding the requests would take hundreds of MB; streaming stays near the small run's footprint.
    assert big_kb - base_kb < 40_000, (base_kb, big_kb)


# --------------------------------------------------------------------------- our sessions


def _session(store: SQLiteStore, extra: list[Any]) -> str:
    info = store.create_session()
    events: list[Any] = [Instruction(text=SYSTEM), UserMessage(text="Fix the bug in src/a.py.")]
    for i in range(6):
        events.append(AssistantMessage(tool_calls=(ToolCall(id=f"c{i}", name="bash", arguments={"command": "ls"}),)))
        events.append(ToolResult(call_id=f"c{i}", tool_name="bash", output=f"file{i}.py"))
        if i == 3:
            events.extend(extra)
    events.append(AssistantMessage(text="done"))
    store.append(info.id, events, expected_last_seq=0)
    return info.id


def test_session_lint_checks_injected_text_against_the_registry(tmp_path: Path) -> None:
    store = SQLiteStore(str(tmp_path / "s.db"))
    counter = HeuristicCounter()
    registered = default_registry().render("reminder", "Run the tests before you finish.", counter).text
    clean = _session(store, [Instruction(text=registered, role="developer", source="hook")])
    report = lint_session(store, clean, model="gpt-4o", counter=counter)
    assert report.requests == 7 and report.ok, report.findings
    rogue = _session(store, [Instruction(text="<git_status>\nM src/a.py\n</git_status>", role="developer")])
    report = lint_session(store, rogue, model="gpt-4o", counter=counter)
    r6 = findings(report, "R6")
    assert len(r6) == 1 and r6[0].request == 5 and "event" in r6[0].item
    store.close()


def test_session_lint_accepts_prefix_changes_made_by_window_events(tmp_path: Path) -> None:
    store = SQLiteStore(str(tmp_path / "s.db"))
    info = store.create_session()
    events: list[Any] = [Instruction(text=SYSTEM), UserMessage(text="Read the files.")]
    for i in range(24):
        path = f"src/f{i % 3}.py"
        events.append(AssistantMessage(tool_calls=(ToolCall(id=f"c{i}", name="read_file", arguments={"path": path}),)))
        events.append(ToolResult(call_id=f"c{i}", tool_name="read_file", output=f"# {path} v{i}\n" * 400))
    events.append(AssistantMessage(text="done"))
    store.append(info.id, events, expected_last_seq=0)
    report = lint_session(store, info.id, model="gpt-4o", options=LintOptions(max_breaks_per_10=10))
    assert report.breaks > 0, "re-reads supersede older reads: the planner must have recorded edits"
    assert findings(report, "R1") == []
    assert report.ok, report.findings
    store.close()


# --------------------------------------------------------------------------- CLI and assertions


def test_cli_exit_status_and_json(tmp_path: Path) -> None:
    runner = CliRunner()
    clean = write_jsonl(tmp_path / "clean.jsonl", chat_log(3))
    dirty = write_jsonl(tmp_path / "dirty.jsonl", chat_log(3, system=lambda t: f"{SYSTEM} id={t:032x}"))
    assert runner.invoke(lint_command, [str(clean)]).exit_code == 0
    result = runner.invoke(lint_command, [str(dirty), "--json"])
    assert result.exit_code == 1
    data = json.loads(result.output)
    assert data["counts"]["R1"] == 2 and data["findings"][0]["item"] == "messages[0] (system)"
    text = runner.invoke(lint_command, [str(dirty)], env={"COLUMNS": "160"})
    assert text.exit_code == 1 and "history rewrite" in text.output
    missing = runner.invoke(lint_command, ["no-such-thing", "--store", str(tmp_path / "none.db")])
    assert missing.exit_code == 2 and "no session" in missing.output
    empty = tmp_path / "empty.jsonl"
    empty.write_text("not json\n")
    assert runner.invoke(lint_command, [str(empty)]).exit_code == 2


def test_cli_lints_a_stored_session(tmp_path: Path) -> None:
    store = SQLiteStore(str(tmp_path / "s.db"))
    sid = _session(store, [])
    store.close()
    result = CliRunner().invoke(lint_command, [sid, "--store", str(tmp_path / "s.db"), "--model", "gpt-4o", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["requests"] == 7


def test_assertions_for_users_ci(tmp_path: Path) -> None:
    assert_prefix_stable(chat_log(5))
    assert_bounded(chat_log(5), max_tokens=1_000, max_request_tokens=5_000)
    with pytest.raises(AssertionError, match=r"request 3: first differing item messages\[0\] \(system\)"):
        assert_prefix_stable(chat_log(3, system=lambda t: SYSTEM if t < 2 else SYSTEM + " 2025-01-01"))
    with pytest.raises(AssertionError, match="call_2"):
        assert_bounded(chat_log(3, output=lambda t: "x " * 3_000 if t == 2 else "ok"), max_tokens=1_000)
    bad = write_jsonl(tmp_path / "bad.jsonl", chat_log(2), raw_lines={1: "{oops"})
    with pytest.raises(AssertionError, match="line 2 is not a readable request"):
        assert_prefix_stable(bad)


def test_lint_requests_accepts_parsed_requests_and_bad_lines() -> None:
    requests = list(read_requests([json.dumps(p).encode() for p in chat_log(2)] + [b"{"]))
    assert isinstance(requests[-1], BadLine)
    report = lint_requests(requests, source="memory")
    assert report.requests == 2 and report.bad_line_count == 1 and report.ok


def test_hostile_lines_give_defined_results(tmp_path: Path) -> None:
    path = tmp_path / "hostile.jsonl"
    nested = "[" * 100_000 + "]" * 100_000
    huge_user = json.dumps({"model": "gpt-4o", "messages": [{"role": "user", "content": "word " * 60_000}]})
    path.write_bytes(
        b"\x00\x01\x02binary\xfe\xff\n"
        + nested.encode()
        + b"\n\n   \n"
        + json.dumps({"messages": "not a list", "input": 5}).encode()
        + b"\n"
        + json.dumps({"model": "gpt-4o", "messages": [None, 3, {"role": 7, "content": {"x": 1}}]}).encode()
        + b"\n"
        + huge_user.encode()
        + b"\n"
    )
    report = lint_file(path)
    assert [b.line for b in report.bad_lines] == [1, 2, 5]
    assert report.requests == 2  # malformed messages are read as far as they go, never a crash
    r4 = findings(report, "R4")
    assert len(r4) == 1 and r4[0].request == 2 and r4[0].item == "messages[0] (user)"
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    assert lint_file(empty).requests == 0
    result = CliRunner().invoke(lint_command, [str(empty)])
    assert result.exit_code == 2 and "holds no request payloads" in result.output


@pytest.mark.parametrize("render", ["openai_chat", "anthropic", "openai_responses"])
def test_our_rendered_requests_break_only_at_window_events(tmp_path: Path, render: str) -> None:
    from contextwarden import render as render_request
    from contextwarden.governance import replay_session

    store = SQLiteStore(str(tmp_path / "s.db"))
    info = store.create_session()
    events: list[Any] = [Instruction(text=SYSTEM), UserMessage(text="Read the files.")]
    for i in range(16):
        path = f"src/f{i % 3}.py"
        events += [
            AssistantMessage(tool_calls=(ToolCall(id=f"c{i}", name="read_file", arguments={"path": path}),)),
            ToolResult(call_id=f"c{i}", tool_name="read_file", output=f"# {path} v{i}\n" * 400),
        ]
    events.append(AssistantMessage(text="done"))
    store.append(info.id, events, expected_last_seq=0)
    turns = list(replay_session(store, info.id, model="claude-sonnet-4-5"))
    planned = {t.turn for t in turns if t.window_events}
    assert planned, "supersession should have produced window events"

    def function(ctx: Any) -> Any:
        return render_request(ctx, render)

    path = write_jsonl(tmp_path / "rendered.jsonl", [function(t.context) for t in turns if t.context is not None])
    report = lint_file(path, options=LintOptions(max_breaks_per_10=10))
    assert {f.request for f in findings(report, "R1")} == planned
    store.close()


def test_every_rule_id_has_a_name() -> None:
    from typing import get_args

    from contextwarden.governance.findings import RULES, RuleId

    assert list(RULES) == list(get_args(RuleId))
