"""Summaries stay true: progress, test status and next step follow the latest events."""

from __future__ import annotations

import re

from _agentlog import COUNTER, GOAL, Agent, answer, manager, profile
from contextwarden.log.events import Compaction
from contextwarden.log.store.memory import MemoryStore
from contextwarden.plan.compaction import LLMSummarizer, compact
from contextwarden.plan.compaction.truth import clean_text, current_failing, failure_lines
from contextwarden.testing import ScriptedProvider
from contextwarden.window.policies.presets import CODING_TOOL_POLICIES
from contextwarden.window.references import referenced_call
from contextwarden.window.state import derive_state

MODEL = profile(40_000)
PYTEST_FAILURE = """\x1b[1m============================= test session starts ==============================\x1b[0m
platform linux -- Python 3.11.2, pytest-8.3.3
collected 3 items

tests/test_calc.py F..                                                   [100%]

=================================== FAILURES ===================================
_________________________________ test_negative ________________________________

    def test_negative():
>       assert sum(-2, 3) == 1
E       assert -23 == 1

tests/test_calc.py:9: AssertionError
=========================== short test summary info ============================
FAILED tests/test_calc.py::test_negative - assert -23 == 1
\x1b[31m========================= 1 failed, 2 passed in 0.05s =========================\x1b[0m"""
WHOLE_SUITE = "Now the whole suite."


def section(summary: str, title: str) -> str:
    m = re.search(rf"^#+ {re.escape(title)}\n(.*?)(?=^#+ |\Z)", summary, re.MULTILINE | re.DOTALL)
    return m.group(1) if m else ""


def seven_compactions(store: MemoryStore, mgr_summarizer: LLMSummarizer | None = None) -> list[Compaction]:
    """The scripted session of the issue: failures early, the whole suite passing late, seven compactions."""
    agent = Agent(store).start()
    mgr = manager(store, summarizer=mgr_summarizer)
    events: list[Compaction] = []
    for phase in range(7):
        agent.work(6, prefix=f"src/p{phase}_")
        if phase < 5:
            agent.call(
                "bash", PYTEST_FAILURE, exit_code=1, text="Run the calc tests.", command="pytest tests/test_calc.py"
            )
        if phase == 5:
            agent.write("src/calc.py")
            agent.call("bash", "3 passed in 0.04s", exit_code=0, text=WHOLE_SUITE, command="pytest -q")
        event = compact(mgr, "s", model=MODEL)
        assert event is not None, f"phase {phase}: nothing to compact"
        events.append(event)
    return events


def test_seven_compactions_then_a_passing_suite_leave_a_true_summary() -> None:
    store = MemoryStore()
    events = seven_compactions(store)
    last = events[-1].summary
    assert WHOLE_SUITE not in section(last, "In Progress") and WHOLE_SUITE not in section(last, "Next Steps")
    assert "FAILED" not in section(last, "Test Status"), "the whole suite passing closed the calc failure"
    assert "Failing test" not in section(last, "Blocked")
    failed = section(last, "Failed Attempts")
    assert "assert -23 == 1" in failed, "a failed attempt quotes the assertion line"
    for event in events:
        assert "\x1b" not in event.summary and "[1m" not in event.summary and "[0m" not in event.summary
        assert "test session starts" not in event.summary and "=====" not in event.summary
        assert event.verification["ok"] is True, event.verification  # the structured summary needs no correction
    built = manager(store).build("s", model=MODEL)
    request = "\n".join(m.text for m in built.messages)
    assert request.count(GOAL) == 1, "the goal appears once, in the pinned block"
    shown = {m.tool_call_id for m in built.messages if m.tool_call_id}
    named = {referenced_call(m.text) for m in built.messages if m.role == "tool"} - {None}
    assert named <= shown, "a repeated output names only a call the request still shows"


def test_a_model_summary_that_is_no_longer_true_is_corrected_before_it_is_stored() -> None:
    stale = "\n".join(
        [
            "## Goal",
            f"{GOAL} Do not change the public interface of sum.",
            "## Constraints & Preferences",
            "- Do not change the public interface of sum.",
            "## Progress",
            "### Done",
            "- [x] read src/calc.py",
            "### In Progress",
            f"- {WHOLE_SUITE}",
            "### Blocked",
            "- Failing test: pytest:tests/test_calc.py",
            "## Next Steps",
            f"1. Continue from the last step: {WHOLE_SUITE}",
            "2. Check src/calc.py again",
            "## Test Status",
            "- `pytest:tests/test_calc.py` FAILED",
            "## Failed Attempts",
            "- `bash pytest tests/test_calc.py` failed: \x1b[1m===== test session starts =====",
        ]
    )
    store = MemoryStore()
    provider = ScriptedProvider([answer(stale)] * 7)
    summarizer = LLMSummarizer(provider, model=profile(100_000, name="cheap"), counter=COUNTER)
    event = seven_compactions(store, summarizer)[-1]
    assert event.summarizer.startswith("llm:"), event.details["fallback"]
    repaired = set(event.verification["repaired"])  # type: ignore[arg-type]
    assert {"escapes", "finished_in_progress", "closed_failures", "banner_failures", "repeated_anchors"} <= repaired
    text = event.summary
    assert "\x1b" not in text and "test session starts" not in text and GOAL not in text
    assert WHOLE_SUITE not in section(text, "In Progress") + section(text, "Next Steps")
    assert "Check src/calc.py again" in section(text, "Next Steps"), "only the stale step goes"
    assert "FAILED" not in section(text, "Test Status") and "Failing test" not in section(text, "Blocked")
    assert "`bash pytest tests/test_calc.py` failed" in section(text, "Failed Attempts")


def test_failure_lines_quote_the_assertion_not_the_banner() -> None:
    lines = failure_lines(PYTEST_FAILURE)
    assert lines and all("=====" not in ln and "\x1b" not in ln for ln in lines)
    assert any("assert -23 == 1" in ln for ln in lines)
    assert failure_lines("\x1b[31m===== 2 failed, 1 passed in 0.3s =====\x1b[0m") == ["2 failed, 1 passed in 0.3s"]
    assert clean_text("\x1b[1mbold\x1b[0m and [1mremnant[0m") == "bold and remnant"


def test_a_narrower_pass_does_not_close_a_wider_failure() -> None:
    store = MemoryStore()
    agent = Agent(store).start()
    agent.call("bash", PYTEST_FAILURE, exit_code=1, command="pytest -q")
    agent.call("bash", "1 passed", exit_code=0, command="pytest tests/test_other.py")
    assert current_failing(derive_state(store.read("s"), policies=CODING_TOOL_POLICIES)) == (
        "tests/test_calc.py::test_negative",
    )
    agent.call("bash", "3 passed", exit_code=0, command="pytest -q")
    assert current_failing(derive_state(store.read("s"), policies=CODING_TOOL_POLICIES)) == ()


def test_finished_steps_leave_out_the_step_still_running() -> None:
    from contextwarden.plan.compaction.serialize import Entry
    from contextwarden.plan.compaction.truth import finished_steps

    run = "Run the whole suite now."
    entries = [
        Entry(seq=1, label="assistant", text=run),
        Entry(seq=1, label="tool call", text="{}", name="bash"),
        Entry(seq=2, label="tool result", text="ok", name="bash"),
        Entry(seq=3, label="assistant", text="Read the config file first."),
        Entry(seq=3, label="tool call", text="{}", name="read_file"),
        Entry(seq=4, label="tool result", text="x", name="read_file"),
    ]
    assert finished_steps(entries) == [run, "Read the config file first."]
    running = [
        *entries,
        Entry(seq=5, label="assistant", text=run),
        Entry(seq=5, label="tool call", text="{}", name="bash"),
    ]
    assert finished_steps(running) == ["Read the config file first."]


def test_a_summary_repeating_the_start_of_the_pinned_goal_refers_to_it_instead() -> None:
    from contextwarden.plan.compaction import verify_summary
    from contextwarden.window.state import TaskState

    goal = "We're currently solving the following issue within our repository. " * 40
    anchors = TaskState(goal=goal)
    summary = "\n".join(
        [
            "## Goal",
            "(the original task, pinned verbatim above)",
            "## Progress",
            "### Done",
            "- [x] ran it",
            "## Next Steps",
            f"1. Serve the latest request: {goal[:300]}…",
            "2. Open src/a.py",
            "## Latest User Intent",
            f"{goal[:2000]}",
        ]
    )
    text, check = verify_summary(summary, state=anchors, anchors=anchors, kept_text="")
    assert "repeated_anchors" in check.repaired
    assert goal[:60] not in text, "neither cut copy of the goal stays"
    assert "1. Serve the latest request: (the original task, pinned verbatim above)" in text
    assert "2. Open src/a.py" in text
    short = "\n".join(["## Goal", "(pinned)", "## Next Steps", "1. We're currently"])
    assert verify_summary(short, state=anchors, anchors=anchors, kept_text="")[0] == short, "a short prefix is no copy"
