"""The derived state's working set is ranked when read: reading it late must change nothing."""

from __future__ import annotations

import dataclasses

from hypothesis import given, settings
from hypothesis import strategies as st

from contextwarden.log.events import AssistantMessage, Event, Steering, ToolCall, ToolResult, UserMessage
from contextwarden.window.policies.presets import CODING_TOOL_POLICIES
from contextwarden.window.state import StateBuilder

step = st.one_of(
    st.tuples(st.just("read"), st.integers(0, 5), st.booleans()),
    st.tuples(st.just("edit"), st.integers(0, 5), st.booleans()),
    st.tuples(st.just("test"), st.integers(0, 5), st.booleans()),
    st.tuples(st.just("user"), st.integers(0, 5), st.booleans()),
    st.tuples(st.just("steer"), st.integers(0, 5), st.booleans()),
)


def _events(steps: list[tuple[str, int, bool]]) -> list[Event]:
    out: list[Event] = [UserMessage(text="Fix src/f0.py and keep the API.")]
    for n, (kind, k, fail) in enumerate(steps):
        path = f"src/f{k}.py"
        if kind == "user":
            out.append(UserMessage(text=f"Also look at {path}."))
            continue
        if kind == "steer":
            out.append(Steering(text=f"Do not edit {path}."))
            continue
        name, args = {
            "read": ("read_file", {"path": path}),
            "edit": ("edit_file", {"path": path, "old_string": "a", "new_string": "b"}),
            "test": ("bash", {"command": f"pytest tests/test_f{k}.py"}),
        }[kind]
        output = f"FAILED tests/test_f{k}.py::t - {path}:3 AssertionError\n1 failed" if fail else "ok\n1 passed"
        call = ToolCall(id=f"c{n}", name=name, arguments=args)
        out.append(AssistantMessage(text="", tool_calls=(call,)))
        out.append(ToolResult(call_id=call.id, tool_name=name, output=output, exit_code=1 if fail else 0))
    return [dataclasses.replace(e, seq=i + 1) for i, e in enumerate(out)]


@settings(max_examples=60, deadline=None)
@given(steps=st.lists(step, min_size=1, max_size=30))
def test_state_read_at_the_end_equals_state_read_after_every_event(steps: list[tuple[str, int, bool]]) -> None:
    events = _events(steps)
    eager, late = StateBuilder(policies=CODING_TOOL_POLICIES), StateBuilder(policies=CODING_TOOL_POLICIES)
    for event in events:
        eager.apply(event)
        _ = eager.state, eager.task_files  # the ranking as every event arrives
        late.apply(event)
    assert late.state == eager.state
    assert late.task_files == eager.task_files


def test_a_steering_after_the_last_result_does_not_rerank_it() -> None:
    # The ranking belongs to the latest tool result: text that names a file later waits for the next one.
    events = _events([("read", 1, False), ("read", 2, False), ("steer", 1, False)])
    builder = StateBuilder(policies=CODING_TOOL_POLICIES)
    for event in events:
        builder.apply(event)
    assert "src/f1.py" not in builder.task_files
    builder.apply(dataclasses.replace(_events([("read", 3, False)])[-1], seq=99, call_id="c0"))
    assert "src/f1.py" in builder.task_files
