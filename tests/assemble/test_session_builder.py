"""``contextwarden.testing.SessionBuilder``: a session appended the way an agent appends it."""

from __future__ import annotations

import pytest

from contextwarden import (
    AssistantMessage,
    ContextManager,
    Instruction,
    SessionNotFound,
    ToolCall,
    ToolResult,
    UserMessage,
)
from contextwarden.log.store import MemoryStore
from contextwarden.testing import SessionBuilder


def test_start_and_calls_append_an_agents_events_in_order() -> None:
    session = SessionBuilder(MemoryStore(), "task").start("Fix the failing test.", system="You are a coding agent.")
    first = session.call("read_file", "def f(): ...", path="f.py")
    second = session.call("bash", "1 failed", exit_code=1, text="Running the tests.", command="pytest -q")
    session.reply("Found it.")
    events = session.store.read("task")
    assert [type(e) for e in events] == [
        Instruction,
        UserMessage,
        AssistantMessage,
        ToolResult,
        AssistantMessage,
        ToolResult,
        AssistantMessage,
    ]
    assert [e.seq for e in events] == list(range(1, 8))
    calls = [e.tool_calls[0] for e in events if isinstance(e, AssistantMessage) and e.tool_calls]
    assert [(c.id, c.name, c.arguments) for c in calls] == [
        ("c1", "read_file", {"path": "f.py"}),
        ("c2", "bash", {"command": "pytest -q"}),
    ]
    assert (first.call_id, second.call_id, second.exit_code, session.calls) == ("c1", "c2", 1, 2)
    assert events[3].id == first.id and events[4].text == "Running the tests."


def test_without_a_system_instruction_the_task_comes_first() -> None:
    session = SessionBuilder(MemoryStore()).start("Only the task.")
    assert [type(e) for e in session.store.read(session.session_id)] == [UserMessage]


def test_a_builder_continues_an_existing_session_and_a_missing_one_is_an_error() -> None:
    store = MemoryStore()
    SessionBuilder(store, "s").start("first")
    later = SessionBuilder(store, "s", create=False)
    later.user("second")
    assert [e.seq for e in store.read("s")] == [1, 2]
    with pytest.raises(SessionNotFound):
        SessionBuilder(store, "nope", create=False).user("lost")


def test_a_built_session_builds_a_request_with_the_result_readable_by_its_id() -> None:
    session = SessionBuilder(MemoryStore()).start("Summarize the data.")
    result = session.call("bash", "\n".join(f"row {i}" for i in range(50)), command="cat data.csv")
    manager = ContextManager(session.store)
    context = manager.build(session.session_id, model="gpt-4o")
    assert "row 49" in str(context.messages[-1])
    read = ToolCall(id="r1", name="read_range", arguments={"artifact_id": result.id, "start_line": 2, "end_line": 2})
    assert "row 1" in manager.retrieve(session.session_id, read).output
