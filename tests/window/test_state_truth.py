"""The derived state tells the truth: calls pair with results by id, tests that never ran are not
verdicts, an empty non-zero answer is not an error, and constraints are the user's own words."""

from __future__ import annotations

from contextwarden.log.events import AssistantMessage, Event, Instruction, ToolCall, ToolResult, UserMessage
from contextwarden.plan.compaction import StructuredSummarizer, SummaryInput, SummaryOptions
from contextwarden.plan.compaction.serialize import entries_from_events
from contextwarden.window.policies.presets import CODING_TOOL_POLICIES
from contextwarden.window.state import TaskState, derive_state


def _mini(code: int, body: str) -> str:
    """A tool output the way mini-swe-agent wraps it."""
    return f"<returncode>{code}</returncode>\n<output>\n{body}</output>"


def _session(*steps: tuple[str | tuple[str, ...], int | None, str]) -> list[Event]:
    """A session: the task, then per step the command(s) of one reply and the one result it got."""
    events: list[Event] = [UserMessage(text="Fix the parser.", seq=1)]
    for n, (commands, code, output) in enumerate(steps, 1):
        cmds = (commands,) if isinstance(commands, str) else commands
        calls = tuple(
            ToolCall(id=f"call-{n}" + (f"-{k}" if k else ""), name="bash", arguments={"command": c})
            for k, c in enumerate(cmds)
        )
        seq = len(events) + 1
        events.append(AssistantMessage(text=f"step {n}", tool_calls=calls, seq=seq))
        if code is not None:
            events.append(
                ToolResult(
                    call_id=calls[0].id, tool_name="bash", output=_mini(code, output), exit_code=code, seq=seq + 1
                )
            )
    return events


def _state(events: list[Event]) -> TaskState:
    return derive_state(events, policies=CODING_TOOL_POLICIES)


def _summary(events: list[Event]) -> str:
    data = SummaryInput(entries=tuple(entries_from_events(events)), state=_state(events))
    return StructuredSummarizer().summarize(data, options=SummaryOptions()).text


def test_a_reply_with_several_actions_does_not_shift_every_later_label() -> None:
    events = _session(
        (("rm reproduce_issue.py", "ls"), 2, "Please always provide EXACTLY ONE action"),
        ("./tests/runtests.py model_forms", 1, "django.core.exceptions.ValidationError: bad choice\n"),
    )
    text = _summary(events)
    assert "`bash ./tests/runtests.py model_forms` failed at #5" in text, text
    assert "`bash rm reproduce_issue.py` failed at #3" in text
    assert "`bash ls`" not in text, "a call that never got a result is not an action"


def test_a_missing_runner_is_not_a_failed_test_run() -> None:
    state = _state(
        _session(("python -m pytest sympy/core/tests/test_assumptions.py", 1, "python: No module named pytest\n"))
    )
    assert state.tests == ()
    (error,) = state.unresolved_errors
    assert "No module named pytest" in error


def test_help_is_not_a_test_run() -> None:
    state = _state(_session(("pytest --help | grep norecursedirs", 0, "  norecursedirs (args): ...\n")))
    assert state.tests == () and state.unresolved_errors == ()


def test_no_tests_collected_is_neither_a_failure_nor_an_error() -> None:
    state = _state(_session(("python -m pytest reproduce_issue/testing", 5, "collected 0 items\n\nno tests ran\n")))
    assert state.tests == () and state.failing_tests == () and state.unresolved_errors == ()


def test_a_later_run_that_does_not_run_leaves_the_earlier_verdict() -> None:
    state = _state(
        _session(
            ("pytest tests/test_a.py", 1, "FAILED tests/test_a.py::test_x - assert 1 == 2\n1 failed in 0.1s\n"),
            ("pytest tests/test_a.py --help", 0, "usage: pytest\n"),
        )
    )
    assert state.failing_tests == ("tests/test_a.py::test_x",)


def test_unittest_tally_is_not_a_test_name() -> None:
    out = "FAIL: test_basics (model_forms.test_modelchoicefield.ModelChoiceFieldTests)\n-----\nFAILED (failures=4)\n"
    state = _state(_session(("./tests/runtests.py model_forms", 1, out)))
    (test,) = state.tests
    assert test.failing == ("model_forms.test_modelchoicefield.ModelChoiceFieldTests.test_basics",)


def test_an_empty_result_with_exit_1_is_an_answer_not_an_error() -> None:
    events = _session(
        ("grep -r follow_symlinks=False src", 1, ""),
        ("test -f setup.cfg", 1, ""),
        ("cat missing.txt", 1, "cat: missing.txt: No such file or directory\n"),
    )
    state = _state(events)
    (error,) = state.unresolved_errors
    assert "No such file" in error and "</output>" not in error
    text = _summary(events)
    assert "grep -r follow_symlinks" not in text.split("## Failed Attempts")[1]
    assert "</output>" not in text


def test_an_empty_result_with_another_exit_code_is_still_a_failure() -> None:
    state = _state(_session(("make check", 2, "")))
    (error,) = state.unresolved_errors
    assert "</output>" not in error and "<returncode>" not in error


SYSTEM = "You are a coding agent. Always use non-interactive flags. Each response should include a THOUGHT."
TASK = """Please fix the parser. Don't touch the public API.
<pr_description>
I would expect that a number should be finite before it can be even.
</pr_description>
<instructions>
Each response should include:
- Your response MUST include EXACTLY ONE bash code block
</instructions>
> You should never see this warning.
```bash
# Replace only first occurrence
sed -i 's/a/b/' f.py
```
Always use non-interactive flags."""


def test_constraints_are_the_users_own_words() -> None:
    state = _state([Instruction(text=SYSTEM, seq=1), UserMessage(text=TASK, seq=2)])
    assert state.constraints == ("Don't touch the public API.",)


def test_an_unclosed_angle_bracket_quotes_nothing() -> None:
    text = "Keep List<String> as the return type. Never touch setup.cfg."
    state = _state([UserMessage(text=text, seq=1)])
    assert state.constraints == ("Keep List<String> as the return type.", "Never touch setup.cfg.")
