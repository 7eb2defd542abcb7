"""The working set holds the file of a failing test, even before the agent opens it."""

from __future__ import annotations

from contextwarden import AssistantMessage, ContextManager, ToolCall, ToolResult, UserMessage, open_store

FAILING = (
    "============================= test session starts ==============================\n"
    "collected 3 items\n\n"
    "tests/test_calc.py .F.                                                   [100%]\n\n"
    "=========================== short test summary info ============================\n"
    "FAILED tests/test_calc.py::test_negative - assert -1 == 1\n"
    "========================= 1 failed, 2 passed in 0.05s ==========================\n"
)


def test_a_failing_tests_file_joins_the_working_set() -> None:
    manager = ContextManager(open_store("memory://"))
    session = manager.session("s", model="gpt-4o", create=True)
    session.append(UserMessage(text="Make the tests pass."))
    for call_id, name, args, output, code in (
        ("c1", "read_file", {"path": "src/calc.py"}, "def add(a, b):\n    return a - b\n", None),
        ("c2", "bash", {"command": "pytest -q"}, FAILING, 1),
    ):
        session.append(AssistantMessage(tool_calls=(ToolCall(id=call_id, name=name, arguments=args),)))
        session.append(ToolResult(call_id=call_id, tool_name=name, output=output, exit_code=code))
    session.build()
    working = manager.projection("s").state.working_set
    assert "tests/test_calc.py" in working and "src/calc.py" in working
    assert working.index("tests/test_calc.py") < working.index("src/calc.py")  # the failure ranks first
