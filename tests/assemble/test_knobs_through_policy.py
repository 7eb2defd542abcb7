"""Knobs whose only tests set them on a helper function: each changes the output through its own policy."""

from __future__ import annotations

import dataclasses

from contextwarden.budget import BudgetPolicy
from contextwarden.log.events import AssistantMessage, Event, ToolCall, ToolResult, UserMessage
from contextwarden.log.store.memory import MemoryStore
from contextwarden.models import get_profile
from contextwarden.plan.planner import PlannerSettings, plan
from contextwarden.tokens import HeuristicCounter
from contextwarden.window.policies.presets import CODING_TOOL_POLICIES, SHELL_POLICY, apply_policy
from contextwarden.window.projection import Projection, ProjectionConfig

COUNTER = HeuristicCounter()
PROFILE = get_profile("gpt-4o")


def _projection(outputs: int, lines: int) -> Projection:
    store = MemoryStore()
    store.create_session("k")
    events: list[Event] = [UserMessage(text="fix the build")]
    for n in range(outputs):
        log = "\n".join(f"log{n} line {i}: value = compute({i})" for i in range(lines))
        events += [
            AssistantMessage(tool_calls=(ToolCall(id=f"c{n}", name="bash", arguments={"command": f"make {n}"}),)),
            ToolResult(call_id=f"c{n}", tool_name="bash", output=log),
        ]
    p = Projection(ProjectionConfig(counter=COUNTER, tool_policies=CODING_TOOL_POLICIES))
    for event in store.append("k", events, expected_last_seq=0):
        p.add(event)
    return p


def test_expected_turns_alone_decides_whether_a_voluntary_batch_pays_back() -> None:
    p = _projection(8, 80)
    base = PlannerSettings(keep_recent_tool_results=3, min_batch_share=0.0, min_batch_tokens=0)

    def edits(expected: int | None) -> int:
        settings = dataclasses.replace(base, expected_turns=expected)
        return len(plan(p, total=p.total, trigger=10**6, profile=PROFILE, turns_so_far=10, settings=settings).edits)

    assert edits(0) == 0  # no turn left to pay a rewritten cache back
    assert edits(1_000) == 5  # every result but the 3 newest


def test_pressure_target_decides_how_far_under_the_trigger_masking_goes() -> None:
    p = _projection(10, 60)
    trigger = p.total - 1  # just over: some masking is forced

    def masked(target: float) -> int:
        settings = PlannerSettings(keep_recent_tool_results=3, pressure_target=target)
        return len(plan(p, total=p.total, trigger=trigger, profile=PROFILE, turns_so_far=10, settings=settings).edits)

    assert masked(1.0) < masked(0.6) < masked(0.2)


def test_head_fraction_and_keep_error_lines_shape_a_cut_through_the_tool_policy() -> None:
    lines = [f"step {n}: ok" for n in range(2000)]
    lines[1000] = "error: the linker failed on libfoo.so"
    text = "\n".join(lines)

    def cut(**changes: object) -> str:
        policy = dataclasses.replace(SHELL_POLICY, max_tokens=800, **changes)  # type: ignore[arg-type]
        result = apply_policy(text, policy, counter=COUNTER, artifact_id="a")
        assert result.truncated
        return result.text

    def first_half(shown: str) -> int:
        return sum(1 for line in shown.splitlines() if line.startswith("step ") and int(line.split()[1][:-1]) < 1000)

    assert first_half(cut(head_fraction=0.9)) > first_half(cut(head_fraction=0.1))
    # odd_lines off: the error line is also the one odd line of this output, which that knob keeps
    assert "linker failed" in cut(keep_error_lines=True, odd_lines=0)
    assert "linker failed" not in cut(keep_error_lines=False, odd_lines=0)


def test_reserved_output_and_safety_margin_size_the_hard_input_limit() -> None:
    default = BudgetPolicy().usable_input(PROFILE)
    assert BudgetPolicy(reserved_output=1_000).usable_input(PROFILE) > default
    assert BudgetPolicy(safety_margin=50_000).usable_input(PROFILE) < default
