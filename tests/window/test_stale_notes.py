"""What the model sees never presents stale content as current, and notes name what it can see."""

from __future__ import annotations

from typing import Any

from contextwarden import (
    AssistantMessage,
    ContextManager,
    Session,
    ToolCall,
    ToolResult,
    UserMessage,
    open_store,
    render,
)


def _turn(session: Session, call_id: str, name: str, output: str, exit_code: int | None = None, **args: Any) -> None:
    session.append(AssistantMessage(tool_calls=(ToolCall(id=call_id, name=name, arguments=dict(args)),)))
    session.append(ToolResult(call_id=call_id, tool_name=name, output=output, exit_code=exit_code))


def _tool_texts(body: dict[str, Any]) -> dict[str, str]:
    return {m["tool_call_id"]: m["content"] for m in body["messages"] if m["role"] == "tool"}


def test_an_edit_says_the_earlier_reads_of_its_file_are_out_of_date() -> None:
    session = ContextManager(open_store("memory://")).session("s", model="gpt-4o", create=True)
    session.append(UserMessage(text="Fix a.py."))
    _turn(session, "call_read", "read_file", "\n".join(f"line {i}" for i in range(40)), path="a.py")
    _turn(session, "call_edit", "edit_file", "ok", path="a.py", old_string="line 1", new_string="LINE 1")
    body = render(session.build(), "openai_chat")
    note = _tool_texts(body)["call_edit"]
    assert note == "ok\n[note: earlier reads of this file are out of date]"  # the edit's call names a.py


def test_a_passing_run_says_the_earlier_failing_output_is_no_longer_current() -> None:
    session = ContextManager(open_store("memory://")).session("s", model="gpt-4o", create=True)
    session.append(UserMessage(text="Make the tests pass."))
    failing = "FAILED tests/test_a.py::test_x - assert 1 == 2\n1 failed in 0.1s"
    _turn(session, "call_run1", "bash", failing, exit_code=1, command="pytest tests/test_a.py")
    _turn(session, "call_run2", "bash", "1 passed in 0.1s", exit_code=0, command="pytest tests/test_a.py")
    texts = _tool_texts(render(session.build(), "openai_chat"))
    assert texts["call_run2"] == (
        "1 passed in 0.1s\n[note: this run replaces the earlier bash output of call call_run1: no longer current]"
    )
    # a first run has no earlier one to flag
    assert texts["call_run1"] == failing


def test_a_failing_run_after_a_failing_run_carries_no_note() -> None:
    """After a failure the newest failure is the current state: a note would ride on every later request."""
    session = ContextManager(open_store("memory://")).session("s", model="gpt-4o", create=True)
    session.append(UserMessage(text="Make the tests pass."))
    failing = "FAILED tests/test_a.py::test_x - assert 1 == 2\n1 failed in 0.1s"
    _turn(session, "call_run1", "bash", failing, exit_code=1, command="pytest tests/test_a.py")
    _turn(session, "call_run2", "bash", failing.replace("2", "3"), exit_code=1, command="pytest tests/test_a.py")
    texts = _tool_texts(render(session.build(), "openai_chat"))
    assert "[note:" not in texts["call_run2"]
