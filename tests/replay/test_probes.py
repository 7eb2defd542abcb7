from __future__ import annotations

from typing import Any

import pytest

from contextwarden.log.events import AssistantMessage, Event, Steering, ToolCall, ToolResult, UserMessage, with_position
from contextwarden.replay.probes import ProbeTracker, request_texts

TASK = "Fix the crash in parser.py. Do not modify the tests."


def feed(events: list[Event]) -> ProbeTracker:
    tracker = ProbeTracker()
    for seq, event in enumerate(events, start=1):
        tracker.add(with_position(event, session_id="s", seq=seq))
    return tracker


def call(call_id: str, name: str, **arguments: Any) -> AssistantMessage:
    return AssistantMessage(tool_calls=(ToolCall(id=call_id, name=name, arguments=arguments),))


def body(*messages: dict[str, Any]) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": TASK}, *messages]}


def tool(call_id: str, content: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def assistant(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}],
    }


def test_only_applicable_probes_are_checked() -> None:
    tracker = feed([UserMessage(text="Hello there.")])
    outcome = tracker.check({"messages": [{"role": "user", "content": "Hello there."}]})
    assert outcome.results == {"task": True}


def test_task_and_constraints_must_be_visible_verbatim() -> None:
    tracker = feed([UserMessage(text=TASK), Steering(text="Never push to main.")])
    ok = tracker.check(body({"role": "user", "content": "<steering>\nNever   push to main.\n</steering>"}))
    assert ok.results == {"task": True, "constraints": True}
    lost = tracker.check({"messages": [{"role": "user", "content": "Fix the crash in parser.py."}]})
    assert lost.results == {"task": False, "constraints": False}
    assert "Never push to main." in lost.missing["constraints"]


def test_latest_tool_result_must_be_shown_up_to_its_truncation_marker() -> None:
    output = "\n".join(f"line {n} of the listing" for n in range(200))
    tracker = feed(
        [
            UserMessage(text=TASK),
            call("c1", "bash", command="ls"),
            ToolResult(call_id="c1", tool_name="bash", output=output),
        ]
    )
    head = "\n".join(f"line {n} of the listing" for n in range(20))
    cut = f"{head}\n[... output truncated: the full output is 2,000 tokens ...]\nline 199 of the listing"
    assert tracker.check(body(tool("c1", output))).results["latest_tool_result"]
    assert tracker.check(body(tool("c1", cut))).results["latest_tool_result"]
    wrong = cut.replace("line 3 of", "line three of")
    assert not tracker.check(body(tool("c1", wrong))).results["latest_tool_result"]
    masked = tracker.check(body(tool("c1", "Old environment output: (200 lines omitted)")))
    assert not masked.results["latest_tool_result"]
    assert not tracker.check(body()).results["latest_tool_result"]


def test_failing_evidence_is_required_until_a_later_run_passes() -> None:
    failing = "collected 3 items\n\nFAILED tests/test_a.py::test_x - AssertionError\n=== 1 failed, 2 passed ==="
    events: list[Event] = [
        UserMessage(text=TASK),
        call("c1", "bash", command="python -m pytest tests/test_a.py"),
        ToolResult(call_id="c1", tool_name="bash", output=failing, exit_code=1),
        call("c2", "bash", command="cat src/a.py"),
        ToolResult(call_id="c2", tool_name="bash", output="print('a')"),
    ]
    tracker = feed(events)
    kept = body(tool("c1", failing), tool("c2", "print('a')"))
    assert tracker.check(kept).results["failing_evidence"]
    lost = body(tool("c1", "[masked]"), tool("c2", "print('a')"))
    outcome = tracker.check(lost)
    assert outcome.results["failing_evidence"] is False
    assert outcome.results["latest_tool_result"] is True
    passing = "collected 3 items\n\n=== 3 passed ==="
    tracker.add(with_position(call("c3", "bash", command="python -m pytest tests/test_a.py"), session_id="s", seq=6))
    tracker.add(
        with_position(ToolResult(call_id="c3", tool_name="bash", output=passing, exit_code=0), session_id="s", seq=7)
    )
    assert "failing_evidence" not in tracker.check(body(tool("c3", passing))).results


def test_modified_files_must_be_named() -> None:
    events: list[Event] = [
        UserMessage(text=TASK),
        call("c1", "str_replace_editor", command="str_replace", path="/repo/src/lexer.py", old_str="a", new_str="b"),
        ToolResult(call_id="c1", tool_name="str_replace_editor", output="The file has been edited."),
    ]
    tracker = feed(events)
    args = '{"command": "str_replace", "path": "/repo/src/lexer.py"}'
    named = body(assistant("c1", "str_replace_editor", args), tool("c1", "The file has been edited."))
    assert tracker.check(named).results["files_modified"]
    unnamed = body({"role": "user", "content": "summary: edited one file"}, tool("c1", "The file has been edited."))
    outcome = tracker.check(unnamed)
    assert not outcome.results["files_modified"]
    assert "lexer.py" in outcome.missing["files_modified"]
    assert tracker.protected_ids() == frozenset({events[2].id})


def test_request_texts_reads_content_parts_and_tool_calls() -> None:
    text, tools = request_texts(
        {
            "messages": [
                {
                    "role": "user",
                    "content": [{"type": "text", "text": "look  at"}, {"type": "image_url", "image_url": {}}],
                },
                assistant("c9", "view", '{"path": "x.py"}'),
                tool("c9", "contents"),
            ]
        }
    )
    assert "look at" in text and 'view {"path": "x.py"}' in text
    assert tools == {"c9": "contents"}


SCRIPT = "import parser\nprint(parser.parse('1 + 2'))\nassert parser.parse('') == []\n"


def script_session() -> list[Event]:
    return [
        UserMessage(text=TASK),
        call("c1", "bash", command="cat repro.py"),
        ToolResult(call_id="c1", tool_name="bash", output=SCRIPT, exit_code=0),
        call("c2", "bash", command="pip install -r requirements.txt"),
        ToolResult(call_id="c2", tool_name="bash", output="Collecting attrs\n" * 50, exit_code=0),
    ]


def test_next_action_evidence_is_the_latest_read_of_what_the_action_runs() -> None:
    tracker = feed(script_session())
    run = call("c3", "bash", command="python repro.py")
    read_shown = body(assistant("c1", "bash", '{"command": "cat repro.py"}'), tool("c1", SCRIPT))
    assert tracker.check(read_shown, upcoming=run).results["next_action_evidence"]
    masked = body(assistant("c1", "bash", '{"command": "cat repro.py"}'), tool("c1", "[masked: 3 lines]"))
    outcome = tracker.check(masked, upcoming=run)
    assert not outcome.results["next_action_evidence"]
    [miss] = outcome.evidence_misses
    assert (miss.path, miss.seq, miss.shown) == ("repro.py", 3, "'[masked: 3 lines]'")
    assert "repro.py (read at seq 3) shown as '[masked: 3 lines]'" in miss.describe(7)
    # An action that touches no file read before has nothing to check.
    assert "next_action_evidence" not in tracker.check(masked, upcoming=call("c4", "bash", command="ls")).results
    assert "next_action_evidence" not in tracker.check(masked).results


def test_a_file_written_since_its_read_has_no_current_read_to_keep() -> None:
    events = [
        *script_session(),
        call("c3", "bash", command="sed -i 's/1 + 2/3/' repro.py"),
        ToolResult(call_id="c3", tool_name="bash", output="", exit_code=0),
    ]
    tracker = feed(events)
    outcome = tracker.check(body(), upcoming=call("c4", "bash", command="python repro.py"))
    assert "next_action_evidence" not in outcome.results


def test_a_swe_agent_edit_writes_the_open_file() -> None:
    # SWE-agent's ``edit`` names no file: it edits the one ``open`` made current (bundled humanevalfix).
    events = [
        UserMessage(text=TASK),
        call("c1", "open", command="open main.py"),
        ToolResult(call_id="c1", tool_name="open", output="[File: /repo/main.py (3 lines total)]\n1:x = 1"),
        call("c2", "edit", command="edit 1:1\nx = 2\nend_of_edit"),
        ToolResult(call_id="c2", tool_name="edit", output="[File: /repo/main.py (3 lines total)]\n1:x = 2"),
    ]
    tracker = feed(events)
    assert tracker.state.files_modified == ("main.py",)
    outcome = tracker.check(body(), upcoming=call("c3", "python", command="python main.py"))
    assert "next_action_evidence" not in outcome.results  # the read before the edit is not current
    before_edit = feed(events[:3]).check(body(), upcoming=call("c3", "python", command="python main.py"))
    assert before_edit.results["next_action_evidence"] is False


def test_rereads_count_reads_of_a_current_file_whose_read_was_not_shown() -> None:
    tracker = feed(script_session())
    again = call("c3", "bash", command="cat repro.py")
    shown = tracker.check(body(tool("c1", SCRIPT)), upcoming=again)
    assert (shown.reads, shown.rereads) == (1, 0)
    hidden = tracker.check(body(tool("c1", "Old environment output: (3 lines omitted)")), upcoming=again)
    assert (hidden.reads, hidden.rereads) == (1, 1)
    run_only = tracker.check(body(), upcoming=call("c4", "bash", command="python repro.py"))
    assert (run_only.reads, run_only.rereads) == (0, 0)  # running it is not reading it again


def test_whitespace_collapse_of_a_large_request_matches_split_join_across_chunks() -> None:
    from contextwarden.replay.probes import _CHUNK, _ws

    word = "abc\t "
    text = word * (3 * _CHUNK // len(word))
    for cut in (_CHUNK - 1, _CHUNK, _CHUNK + 1, 2 * _CHUNK):
        edited = text[:cut] + "XY" + text[cut:]  # a word that may straddle a chunk boundary
        assert _ws(edited) == " ".join(edited.split())
    assert _ws("  \n" * _CHUNK) == ""


def test_needles_are_found_across_pieces_as_in_the_whole_collapsed_text(monkeypatch: pytest.MonkeyPatch) -> None:
    import random

    from contextwarden.replay import probes

    monkeypatch.setattr(probes, "_CHUNK", 7)  # pieces of a few characters: every needle straddles some
    rng = random.Random(15)
    alphabet = "ab \n\t"
    for _ in range(300):
        parts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30))) for _ in range(rng.randint(0, 5))]
        whole = probes._ws("\n".join(parts))
        needles = [whole[i : i + rng.randint(0, 12)] for i in (rng.randint(0, len(whole)) for _ in range(3))]
        needles += ["".join(rng.choice("ab ") for _ in range(rng.randint(1, 9))), "a b"]
        assert probes._found_in(parts, needles) == {n for n in needles if n in whole}


def test_a_result_sent_as_a_reference_is_visible_where_its_twin_shows() -> None:
    output = "\n".join(f"line {n} of the listing" for n in range(200))
    tracker = feed(
        [
            UserMessage(text=TASK),
            call("c1", "bash", command="ls"),
            ToolResult(call_id="c1", tool_name="bash", output=output),
            call("c2", "bash", command="ls"),
            ToolResult(call_id="c2", tool_name="bash", output=output),
        ]
    )
    reference = tool("c2", "[same output as call c1 above]")
    shown = tracker.check(
        body(assistant("c1", "bash", "{}"), tool("c1", output), assistant("c2", "bash", "{}"), reference)
    )
    assert shown.results["latest_tool_result"] is True
    masked = tool("c1", '[output of bash(command="ls") masked: 2,000 tokens, 200 lines.]')
    lost = tracker.check(body(assistant("c1", "bash", "{}"), masked, assistant("c2", "bash", "{}"), reference))
    assert lost.results["latest_tool_result"] is False
