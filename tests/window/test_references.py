"""An output the window already shows is sent as a reference to its visible twin, at arrival."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from contextwarden import (
    AssistantMessage,
    ContextEditBatch,
    ContextManager,
    Session,
    ToolCall,
    ToolResult,
    UserMessage,
    open_store,
    render,
)
from contextwarden.assemble.retrieval import read_range
from contextwarden.governance.inspection import inspect_session
from contextwarden.plan.protection import Protection, protect
from contextwarden.window.checkpoint import dumps_projection
from contextwarden.window.checkpoint_read import loads_projection
from contextwarden.window.projection import Projection

SOURCE = "\n".join(f"def f{i}(x):\n    return x + {i}" for i in range(60))


def _turn(session: Session, call_id: str, name: str, output: str, exit_code: int | None = None, **args: Any) -> None:
    session.append(AssistantMessage(tool_calls=(ToolCall(id=call_id, name=name, arguments=dict(args)),)))
    session.append(ToolResult(call_id=call_id, tool_name=name, output=output, exit_code=exit_code))


def _tool_texts(body: dict[str, Any]) -> dict[str, str]:
    return {m["tool_call_id"]: m["content"] for m in body["messages"] if m["role"] == "tool"}


def _session(manager: ContextManager | None = None) -> tuple[ContextManager, Session]:
    manager = manager or ContextManager(open_store("memory://"))
    session = manager.session("s", model="gpt-4o", create=True)
    session.append(UserMessage(text="Fix app.py."))
    return manager, session


def test_an_identical_output_is_sent_as_a_reference_and_the_earlier_one_stays() -> None:
    _, session = _session()
    _turn(session, "call_1", "bash", SOURCE, command="cat app.py")
    first = render(session.build(), "openai_chat")
    _turn(session, "call_2", "bash", SOURCE, command="cat app.py")
    ctx = session.build()
    body = render(ctx, "openai_chat")
    texts = _tool_texts(body)
    assert texts["call_2"] == "[same output as call call_1 above]"
    assert texts["call_1"] == SOURCE
    # nothing cached changes: the earlier request is a prefix of this one
    assert body["messages"][: len(first["messages"])] == first["messages"]
    decision = next(d for d in ctx.decisions if d.action == "reference")
    assert "call_1" in decision.reason and decision.tokens_saved > 100
    # no lossless edit of the twin is proposed: it is what the model reads
    assert not session.manager.projection("s").candidates


def test_the_output_stays_recallable_by_its_own_id() -> None:
    manager, session = _session()
    _turn(session, "call_1", "bash", SOURCE, command="cat app.py")
    _turn(session, "call_2", "bash", SOURCE, command="cat app.py")
    session.build()
    events = manager.store.read("s")
    result = [e for e in events if isinstance(e, ToolResult)][-1]
    text = read_range(events, result.id, 1, 2, max_tokens=1_000, counter=manager.counter)
    assert "def f0(x):" in text and "return x + 0" in text


def test_a_different_outcome_or_a_short_output_is_shown_as_it_is() -> None:
    _, session = _session()
    _turn(session, "call_1", "bash", SOURCE, exit_code=0, command="python app.py")
    _turn(session, "call_2", "bash", SOURCE, exit_code=1, command="python app.py")
    _turn(session, "call_3", "bash", "ok", command="true")
    _turn(session, "call_4", "bash", "ok", command="true")
    texts = _tool_texts(render(session.build(), "openai_chat"))
    assert texts["call_2"] == SOURCE  # a failing run with the same text is a different fact
    assert texts["call_4"] == "ok"  # a reference would not be shorter


def test_a_partial_reread_of_an_unchanged_file_names_its_lines() -> None:
    _, session = _session()
    _turn(session, "call_1", "read_file", SOURCE, path="app.py")
    part = "\n".join(SOURCE.split("\n")[20:60])
    _turn(session, "call_2", "read_file", part, path="app.py", offset=21, limit=40)
    texts = _tool_texts(render(session.build(), "openai_chat"))
    assert texts["call_2"] == "[lines 21-60 of the output of call call_1 above]"
    assert "\n".join(SOURCE.split("\n")[20:60]) == part


def test_a_reread_after_an_edit_is_shown_whole() -> None:
    _, session = _session()
    _turn(session, "call_1", "read_file", SOURCE, path="app.py")
    _turn(session, "call_e", "edit_file", "ok", path="app.py", old_string="x + 1", new_string="x + 1")
    part = "\n".join(SOURCE.split("\n")[20:60])
    _turn(session, "call_2", "read_file", part, path="app.py", offset=21, limit=40)
    texts = _tool_texts(render(session.build(), "openai_chat"))
    assert texts["call_2"] == part


def test_a_twin_no_longer_shown_is_not_named() -> None:
    manager, session = _session()
    _turn(session, "call_1", "bash", SOURCE, command="cat app.py")
    _turn(session, "call_x", "bash", "\n".join(f"log line {i}" for i in range(300)), command="make")
    projection = manager.projection("s")
    edit = projection.mask_edit(projection.items[2].id, "older than the last 1 tool results")
    assert edit is not None
    session.append(ContextEditBatch(edits=(edit,)))
    _turn(session, "call_2", "bash", SOURCE, command="cat app.py")
    texts = _tool_texts(render(session.build(), "openai_chat"))
    assert texts["call_1"].startswith("[output of bash(command=")
    assert texts["call_2"] == SOURCE


def test_a_kept_reference_keeps_its_twin_from_masking() -> None:
    manager, session = _session()
    _turn(session, "call_1", "bash", SOURCE, command="cat app.py")
    _turn(session, "call_x", "bash", "\n".join(f"log line {i}" for i in range(300)), command="make")
    _turn(session, "call_2", "bash", SOURCE, command="cat app.py")
    session.build()
    projection = manager.projection("s")
    masked = {e.target_id for e in projection.mask_edits(1, frozenset())}
    twin = projection.items[2].id
    assert projection.twins.twin_of(projection.items[-1].id) == twin
    assert twin not in masked and projection.items[4].id in masked


def test_a_checkpoint_keeps_the_references() -> None:
    manager, session = _session()
    _turn(session, "call_1", "bash", SOURCE, command="cat app.py")
    session.build()
    projection = manager.projection("s")
    restored, _ = loads_projection(dumps_projection(projection), projection.config)
    result = ToolResult(call_id="call_2", tool_name="bash", output=SOURCE, seq=99, session_id="s", id="r2")
    call = ToolCall(id="call_2", name="bash", arguments={"command": "cat app.py"})
    restored.add(AssistantMessage(tool_calls=(call,), seq=98))
    restored.add(result)
    assert restored.items[-1].message.text == "[same output as call call_1 above]"


def test_a_reference_stands_for_the_files_latest_read_and_keeps_its_twin() -> None:
    manager, session = _session()
    _turn(session, "call_1", "read_file", SOURCE, path="app.py")
    _turn(session, "call_p", "read_file", "\n".join(f"other {i}" for i in range(80)), path="app.py", offset=200)
    _turn(session, "call_2", "read_file", SOURCE, path="app.py")
    _turn(session, "call_x", "bash", "\n".join(f"log line {i}" for i in range(300)), command="make")
    session.build()
    projection = manager.projection("s")
    ids = {item.message.tool_call_id: item.id for item in projection.items if item.message.role == "tool"}
    # the re-read replaces the partial read it covers, not the twin it names
    assert set(projection.candidates) == {ids["call_p"]}
    evidence = protect(projection, Protection(working_set_files=1)).evidence
    assert ids["call_2"] in evidence
    masked = {e.target_id for e in projection.mask_edits(0, evidence)}
    assert ids["call_1"] not in masked and ids["call_x"] in masked


def test_a_later_run_replaces_a_repeated_run_and_its_twin() -> None:
    manager, session = _session()
    failing = "\n".join(f"FAILED tests/test_a.py::test_{i} - assert 1 == 2" for i in range(30))
    _turn(session, "call_1", "bash", failing, exit_code=1, command="pytest tests/test_a.py")
    _turn(session, "call_2", "bash", failing, exit_code=1, command="pytest tests/test_a.py")
    _turn(session, "call_3", "bash", "30 passed in 0.1s", exit_code=0, command="pytest tests/test_a.py")
    texts = _tool_texts(render(session.build(), "openai_chat"))
    assert texts["call_2"] == "[same output as call call_1 above]"
    projection = manager.projection("s")
    twin = next(i.id for i in projection.items if i.message.tool_call_id == "call_1")
    assert projection.candidates[twin].action == "supersede"


def test_inspect_lists_the_reference_and_its_reason() -> None:
    manager, session = _session()
    _turn(session, "call_1", "bash", SOURCE, command="cat app.py")
    _turn(session, "call_2", "bash", SOURCE, command="cat app.py")
    found = inspect_session(manager.store, "s", model="gpt-4o")
    decision = next(d for d in found.standing if d.action == "reference")
    assert decision.reason == "bash output sent as a reference at arrival: the same output of call call_1, still shown"


def test_a_projection_without_references_shows_every_output() -> None:
    manager, session = _session()
    _turn(session, "call_1", "bash", SOURCE, command="cat app.py")
    _turn(session, "call_2", "bash", SOURCE, command="cat app.py")
    config = replace(manager.projection("s").config, references=False)
    plain = Projection(config)
    for event in manager.store.read("s"):
        plain.add(event)
    assert [i.message.text for i in plain.items if i.message.role == "tool"] == [SOURCE, SOURCE]
    assert not any(d.action == "reference" for d in plain.decisions)
