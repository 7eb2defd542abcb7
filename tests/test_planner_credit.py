"""The loss bound: a voluntary batch may risk only what the window has saved against raw so far."""

from __future__ import annotations

import dataclasses
import math

import pytest

from contextwarden.context import Decision
from contextwarden.log.events import AssistantMessage, Event, ToolCall, ToolResult, UserMessage, with_position
from contextwarden.log.store.memory import MemoryStore
from contextwarden.models import get_profile
from contextwarden.plan.credit import Credit
from contextwarden.plan.planner import PlannerSettings, plan
from contextwarden.replay.engine import replay
from contextwarden.replay.inputs import ReplayInput
from contextwarden.replay.settings import ReplaySettings
from contextwarden.tokens import HeuristicCounter
from contextwarden.window.policies.presets import CODING_TOOL_POLICIES
from contextwarden.window.projection import Projection, ProjectionConfig

COUNTER = HeuristicCounter()
GPT5 = get_profile("gpt-5")  # automatic cache: a miss at the input price, a read at 0.1
UNBOUNDED = "contextwarden:loss-bound=inf"
BOUNDED = "contextwarden:loss-bound=0.01"


def log(k: int, lines: int = 40) -> str:
    return "\n".join(f"log {k} line {i}: value = compute({i}, {k})" for i in range(lines))


def session(turns: int) -> list[Event]:
    events: list[Event] = [UserMessage(text="fix the build")]
    for k in range(turns):
        call = ToolCall(id=f"c{k}", name="bash", arguments={"command": f"make step{k}"})
        events += [AssistantMessage(tool_calls=(call,)), ToolResult(call_id=f"c{k}", tool_name="bash", output=log(k))]
    return [*events, AssistantMessage(text="done")]


def projection(turns: int) -> Projection:
    store = MemoryStore()
    store.create_session("p")
    p = Projection(ProjectionConfig(counter=COUNTER, tool_policies=CODING_TOOL_POLICIES))
    for event in store.append("p", session(turns), expected_last_seq=0):
        p.add(event)
    return p


def test_an_output_cut_at_arrival_saves_at_the_write_price_once_then_at_the_read_price() -> None:
    credit = Credit()
    cut = Decision(action="truncate", target="t1", reason="cut at ingestion", tokens_saved=1_000)
    decisions: list[Decision] = []
    assert credit.observe(decisions, 5_000, GPT5, share=0.0) == 0.0
    decisions.append(cut)
    assert credit.observe(decisions, 6_000, GPT5, share=0.0) == pytest.approx(1_000)  # raw wrote them
    assert credit.observe(decisions, 6_000, GPT5, share=0.0) == pytest.approx(1_100)  # raw read them
    # Raw's cost so far: 5,000 new, then 2,000 new on 5,000 read, then 7,000 read.
    assert credit.raw_cost == pytest.approx(5_000 + 2_000 + 500 + 700)
    assert credit.observe(decisions, 6_000, GPT5, share=0.01) == pytest.approx(1_200 + 0.01 * (8_200 + 700))


def test_a_batch_saves_at_the_read_price_from_the_next_request_and_pays_its_loss_once() -> None:
    credit = Credit()
    decisions: list[Decision] = []
    credit.observe(decisions, 10_000, GPT5, share=0.0)
    credit.spend(2_000.0)  # the batch recorded on this request
    decisions.append(Decision(action="mask", target="t1", reason="old", tokens_saved=4_000))
    assert credit.observe(decisions, 6_000, GPT5, share=0.0) == pytest.approx(-2_000 + 400)
    assert credit.raw_tokens == 10_000  # the window's 6,000 and the 4,000 the batch took out


def test_a_reopened_window_counts_its_standing_reductions_as_in_effect_not_as_new() -> None:
    credit = Credit()
    credit.observe([], 5_000, GPT5, share=0.0)
    reopened = [Decision(action="truncate", target="t1", reason="cut", tokens_saved=1_000)]
    assert credit.observe(reopened, 5_000, GPT5, share=0.0) == pytest.approx(100)


def test_the_credit_holds_back_a_voluntary_batch_whose_loss_it_cannot_cover() -> None:
    p = projection(8)
    settings = PlannerSettings(min_batch_share=0.0, min_batch_tokens=0)
    free = plan(p, total=p.total, trigger=10**6, profile=GPT5, turns_so_far=40, settings=settings)
    assert free.edits and free.loss > 0  # a batch rewrites more than one request's saving covers
    held = plan(p, total=p.total, trigger=10**6, profile=GPT5, turns_so_far=40, settings=settings, credit=free.loss - 1)
    assert not held.edits and "credit" in held.reason
    covered = plan(p, total=p.total, trigger=10**6, profile=GPT5, turns_so_far=40, settings=settings, credit=free.loss)
    assert covered.edits == free.edits
    # Pressure is never held back.
    pressed = plan(p, total=p.total, trigger=p.total - 1, profile=GPT5, turns_so_far=40, settings=settings, credit=0)
    assert pressed.edits


@pytest.mark.parametrize("model", ["gpt-5", "claude-sonnet-4-5"])
def test_a_session_ending_right_after_a_batch_stays_within_the_bound_of_raw(model: str) -> None:
    events = tuple(with_position(e, session_id="s", seq=n) for n, e in enumerate(session(14), start=1))
    results = replay(
        [ReplayInput(name="t", source="t", events=events)],
        ["raw", UNBOUNDED, BOUNDED],
        settings=ReplaySettings(model=model, optimum=False),
        counter=COUNTER,
    )

    def so_far(strategy: str) -> list[float]:
        requests = results.strategy(strategy).per_file[0].requests
        return [sum(r.cost_usd for r in requests[: n + 1]) for n in range(len(requests))]

    raw = so_far("raw")
    unbounded = results.strategy(UNBOUNDED).per_file[0].requests
    first = next(n for n, r in enumerate(unbounded) if r.window_event)
    # Without the bound the first batch pays back later, but a session ending right after it costs more than raw.
    assert so_far(UNBOUNDED)[first] > 1.01 * raw[first]
    bounded = so_far(BOUNDED)
    assert not results.strategy(BOUNDED).per_file[0].requests[first].window_event
    assert all(cost <= 1.01 * r for cost, r in zip(bounded, raw, strict=True))


def test_the_default_is_no_bound() -> None:
    assert PlannerSettings().loss_bound == math.inf
    assert dataclasses.replace(PlannerSettings(), loss_bound=0.01).loss_bound == 0.01
