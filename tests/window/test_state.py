"""Derived task state: the error line an unresolved failure is remembered by."""

from __future__ import annotations

import dataclasses

from contextwarden.log.events import AssistantMessage, OpaquePart, ThinkingBlock, ToolCall, ToolResult, UserMessage
from contextwarden.log.store.memory import MemoryStore
from contextwarden.tokens import HeuristicCounter
from contextwarden.window.policies.presets import CODING_TOOL_POLICIES
from contextwarden.window.projection import Projection, ProjectionConfig
from contextwarden.window.state import derive_state

PYTEST_FAILURE = """\
============================= test session starts ==============================
platform linux -- Python 3.12.3, pytest-8.3.4
collected 3 items

tests/test_calc.py .F.                                                   [100%]

=================================== FAILURES ===================================
________________________________ test_divide ___________________________________
E       ZeroDivisionError: division by zero
=========================== short test summary info ============================
FAILED tests/test_calc.py::test_divide - ZeroDivisionError: division by zero
========================= 1 failed, 2 passed in 0.05s ==========================
"""


def _errors_after(output: str, exit_code: int = 1) -> tuple[str, ...]:
    call = ToolCall(id="c1", name="bash", arguments={"command": "make check"})
    events = [
        UserMessage(text="fix the build", seq=1),
        AssistantMessage(text="", tool_calls=(call,), seq=2),
        ToolResult(call_id="c1", tool_name="bash", output=output, exit_code=exit_code, seq=3),
    ]
    return derive_state(events, policies=CODING_TOOL_POLICIES).unresolved_errors


def test_an_error_is_remembered_by_its_line_not_the_runners_banner() -> None:
    (error,) = _errors_after(PYTEST_FAILURE)
    assert error.endswith("E       ZeroDivisionError: division by zero"), error
    assert "=====" not in error


def test_output_with_no_error_line_is_remembered_by_its_last_line_that_is_not_a_banner() -> None:
    out = "============================= test session starts ==============================\nmake: *** [check] 2\n"
    (error,) = _errors_after(out)
    assert error.endswith("make: *** [check] 2")
    (only_banner,) = _errors_after("==================== test session starts ====================\n", exit_code=2)
    assert only_banner.endswith("exit code 2")


def test_a_provider_item_on_the_users_side_is_not_the_user_speaking() -> None:
    """A tool search's output (Codex sends it as an input item of its own) has no words: the goal and the
    latest request stay the user's, and the turn's thinking is not yet old."""
    search = OpaquePart(
        format="openai_responses", raw_json='{"type":"tool_search_output"}', position=0, kind="tool_search_output"
    )
    events = [
        UserMessage(text="fix the build", seq=1),
        AssistantMessage(text="", thinking=(ThinkingBlock(text="plan " * 400),), seq=2),
        UserMessage(text="", opaque=(search,), seq=3),
    ]
    assert not events[2].speaks and events[0].speaks
    state = derive_state(events, policies=CODING_TOOL_POLICIES)
    assert (state.goal, state.latest_user_intent) == ("fix the build", "fix the build")

    projection = Projection(ProjectionConfig(counter=HeuristicCounter(), tool_policies=CODING_TOOL_POLICIES))
    store = MemoryStore()
    store.create_session("s")
    for event in store.append("s", [dataclasses.replace(e, seq=0) for e in events], expected_last_seq=0):
        projection.add(event)
    assert projection.queue.thinking_edits() == []
