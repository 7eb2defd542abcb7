"""Subagent projection: a scoped child session, and its bounded result back into the parent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from contextwarden.assemble.manager import ContextManager
from contextwarden.assemble.subagents import project_for_subtask, return_to_parent
from contextwarden.errors import UsageError
from contextwarden.fragments import UNTRUSTED_LABEL, find_fragment
from contextwarden.log.events import (
    AssistantMessage,
    Instruction,
    Pin,
    Steering,
    ToolCall,
    ToolResult,
    UserMessage,
)
from contextwarden.log.store import SQLiteStore
from contextwarden.tokens import HeuristicCounter

SECRET = "UNRELATED-HISTORY-MARKER"


def _parent(store: SQLiteStore) -> str:
    sid = store.create_session().id
    events: list[Any] = [
        Instruction(text="You are a careful coding agent."),
        UserMessage(text="Make the parser accept unicode identifiers. Never edit generated files."),
        UserMessage(text=f"Also, some chatter: {SECRET}"),
    ]
    for i in range(12):
        path = ["src/parse.py", "src/lex.py", "docs/notes.md"][i % 3] if i < 9 else f"src/old{i}.py"
        events += [
            AssistantMessage(
                text=f"step {i} {SECRET}",
                tool_calls=(ToolCall(id=f"c{i}", name="read_file", arguments={"path": path}),),
            ),
            ToolResult(
                call_id=f"c{i}",
                tool_name="read_file",
                output="\n".join(f"{path} line {j} (read {i})" for j in range(100)),
            ),
        ]
    events += [
        Steering(text="Keep the public API unchanged."),
        AssistantMessage(
            text="Delegating.", tool_calls=(ToolCall(id="task1", name="task", arguments={"prompt": "lexer"}),)
        ),
    ]
    store.append(sid, events, expected_last_seq=0)
    return sid


@pytest.fixture
def env(tmp_path: Path) -> tuple[SQLiteStore, ContextManager, str]:
    store = SQLiteStore(str(tmp_path / "s.db"))
    manager = ContextManager(store, counter=HeuristicCounter())
    return store, manager, _parent(store)


def test_child_gets_task_constraints_and_working_set_not_the_history(env: Any) -> None:
    store, manager, parent = env
    sub = project_for_subtask(manager, parent, "Check that lex() handles emoji identifiers.", model="gpt-4o")
    info = store.get_session(sub.session_id)
    assert info.parent_session_id == parent and info.metadata["task"].startswith("Check that lex()")
    events = store.read(sub.session_id)
    pins = [e.text for e in events if isinstance(e, Pin)]
    assert "Never edit generated files." in pins and "Keep the public API unchanged." in pins
    ctx = sub.context
    assert ctx is not None
    text = "\n".join(m.text for m in ctx.messages)
    assert SECRET not in text, "the parent's unrelated history must not leak into the child"
    assert "Make the parser accept unicode identifiers" in text  # the larger task, for orientation
    assert ctx.system == "You are a careful coding agent."
    # The latest reads of the working-set files come along as call/result pairs: files read more than
    # once recently, and the file touched last (src/old9.py and src/old10.py were read once and left).
    carried = [m for m in ctx.messages if m.role == "tool"]
    assert [m.text.split(" line ")[0] for m in carried] == [
        "src/old11.py",
        "docs/notes.md",
        "src/lex.py",
        "src/parse.py",
    ]
    assert "(read 7)" in carried[2].text  # the newest read of src/lex.py, not the older ones
    assert manager.projection(sub.session_id).state.files_read == (
        "src/old11.py",
        "docs/notes.md",
        "src/lex.py",
        "src/parse.py",
    )
    history = sum(manager.counter.count(e.output) for e in store.read(parent) if isinstance(e, ToolResult))
    assert sub.tokens <= 8_000 and ctx.total_tokens < history * 0.6
    assert len(sub.items) == 4 and sub.skipped == ()


def test_selection_by_id_and_path_with_bounds(env: Any) -> None:
    store, manager, parent = env
    items = manager.projection(parent).items
    first_parse_read = next(i for i in items if i.message.role == "tool" and "(read 0)" in i.message.text)
    sub = project_for_subtask(
        manager,
        parent,
        "Review the lexer.",
        select=("src/lex.py", first_parse_read.id, "no/such/file.py"),
        max_item_tokens=300,
        max_context_tokens=100_000,
    )
    reasons = dict(sub.skipped)
    assert "not found" in reasons["no/such/file.py"]
    assert "superseded" in reasons[first_parse_read.id]  # a newer read of src/parse.py exists
    results = [e for e in store.read(sub.session_id) if isinstance(e, ToolResult)]
    assert len(results) == 1 and results[0].output.startswith("src/lex.py")
    assert HeuristicCounter().count(results[0].output) <= 300
    assert sub.context is None  # no model: no request built

    tight = project_for_subtask(manager, parent, "Review.", max_item_tokens=2_000, max_context_tokens=2_000)
    assert len(tight.items) == 1 and tight.tokens <= 2_000
    assert all("budget" in why for _, why in tight.skipped)


def test_result_returns_bounded_with_a_link_to_the_transcript(env: Any) -> None:
    store, manager, parent = env
    sub = project_for_subtask(manager, parent, "Check the lexer.")
    last = store.get_session(sub.session_id).last_seq
    store.append(sub.session_id, [AssistantMessage(text="Found it: " + "detail " * 6_000)], expected_last_seq=last)
    event = return_to_parent(manager, sub.session_id, call_id="task1", tool_name="task")
    assert isinstance(event, ToolResult) and event.call_id == "task1"
    assert f"session {sub.session_id}" in event.output
    assert UNTRUSTED_LABEL in event.output
    ftype = find_fragment(event.output)
    assert ftype is not None and ftype.name == "subagent_result"
    assert manager.counter.count(event.output) <= 2_000
    assert "cut from the middle" in event.output
    ctx = manager.build(parent, model="gpt-4o")
    answered = [m for m in ctx.messages if m.role == "tool" and m.tool_call_id == "task1"]
    assert len(answered) == 1 and "Found it" in answered[0].text


def test_result_without_a_call_is_a_user_item(env: Any) -> None:
    store, manager, parent = env
    sub = project_for_subtask(manager, parent, "Summarize the docs.", select=("docs/notes.md",))
    event = return_to_parent(manager, sub.session_id, result="The docs say nothing about unicode.")
    assert isinstance(event, UserMessage) and "nothing about unicode" in event.text
    assert store.read(parent)[-1].id == event.id


def test_misuse_is_refused(env: Any) -> None:
    _, manager, parent = env
    with pytest.raises(UsageError, match="task definition"):
        project_for_subtask(manager, parent, "  ")
    with pytest.raises(UsageError, match="no parent"):
        return_to_parent(manager, parent, result="x")
