"""Derived task state: the error line an unresolved failure is remembered by."""

from __future__ import annotations

from contextwarden.log.events import AssistantMessage, ToolCall, ToolResult, UserMessage
from contextwarden.window.policies.presets import CODING_TOOL_POLICIES
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
