"""The credit: a voluntary batch may risk what the window has saved against raw so far, or must pay back soon."""

from __future__ import annotations

import dataclasses

import pytest

from contextwarden.context import Decision
from contextwarden.log.events import AssistantMessage, Event, ToolCall, ToolResult, UserMessage, with_position
from contextwarden.log.store.memory import MemoryStore
from contextwarden.models import get_profile
from contextwarden.plan.credit import RAW_MARGIN, Credit
from contextwarden.plan.planner import PlannerSettings, plan
from contextwarden.replay.engine import replay
from contextwarden.replay.inputs import ReplayInput
from contextwarden.replay.results import ReplayResults
from contextwarden.replay.settings import ReplaySettings
from contextwarden.tokens import HeuristicCounter
from contextwarden.window.policies.presets import CODING_TOOL_POLICIES
from contextwarden.window.projection import Projection, ProjectionConfig

COUNTER = HeuristicCounter()
GPT5 = get_profile("gpt-5")  # automatic cache: a miss at the input price, a read at 0.1
BOUNDED = "contextwarden:uncovered-payback-turns=8"
UNBOUNDED = "contextwarden:uncovered-payback-turns=inf"
STRICT = "contextwarden:uncovered-payback-turns=0"


def log(k: int, lines: int) -> str:
    return "\n".join(f"log {k} line {i}: value = compute({i}, {k})" for i in range(lines))


def session(turns: int, *, lines: int = 40, spec: int = 0) -> list[Event]:
    goal = "\n".join(["fix the build", *(f"spec {i}: the parser must accept form {i}" for i in range(spec))])
    events: list[Event] = [UserMessage(text=goal)]
    for k in range(turns):
        call = ToolCall(id=f"c{k}", name="bash", arguments={"command": f"make step{k}"})
        events += [
            AssistantMessage(tool_calls=(call,)),
            ToolResult(call_id=f"c{k}", tool_name="bash", output=log(k, lines)),
        ]
    return [*events, AssistantMessage(text="done")]


def projection(turns: int) -> Projection:
    store = MemoryStore()
    store.create_session("p")
    p = Projection(ProjectionConfig(counter=COUNTER, tool_policies=CODING_TOOL_POLICIES))
    for event in store.append("p", session(turns), expected_last_seq=0):
        p.add(event)
    return p


def replayed(events: list[Event], model: str, strategies: list[str]) -> ReplayResults:
    positioned = tuple(with_position(e, session_id="s", seq=n) for n, e in enumerate(events, start=1))
    return replay(
        [ReplayInput(name="t", source="t", events=positioned)],
        ["raw", *strategies],
        settings=ReplaySettings(model=model, optimum=False),
        counter=COUNTER,
    )


def ended_after(results: ReplayResults, strategy: str) -> list[float]:
    """Per request, the strategy's cost over raw's had the session ended right after it."""
    ratios, cost, raw = [], 0.0, 0.0
    own, base = (results.strategy(s).per_file[0].requests for s in (strategy, "raw"))
    for mine, theirs in zip(own, base, strict=True):
        cost, raw = cost + mine.cost_usd, raw + theirs.cost_usd
        ratios.append(cost / raw)
    return ratios


def batches(results: ReplayResults, strategy: str) -> list[int]:
    return [n for n, r in enumerate(results.strategy(strategy).per_file[0].requests) if r.window_event]


def test_an_output_cut_at_arrival_saves_at_the_write_price_once_then_at_the_read_price() -> None:
    credit = Credit()
    decisions: list[Decision] = []
    assert credit.observe(decisions, 5_000, GPT5) == pytest.approx(RAW_MARGIN * 5_000)
    decisions.append(Decision(action="truncate", target="t1", reason="cut at ingestion", tokens_saved=1_000))
    credit.observe(decisions, 6_000, GPT5)
    assert credit.saved == pytest.approx(1_000)  # raw wrote them
    credit.observe(decisions, 6_000, GPT5)
    assert credit.saved == pytest.approx(1_100)  # raw read them from the cache
    # Raw's cost so far: 5,000 new, then 2,000 new on 5,000 read, then 7,000 read.
    assert credit.raw_cost == pytest.approx(5_000 + 2_000 + 500 + 700)
    assert credit.observe(decisions, 6_000, GPT5) == pytest.approx(1_200 + RAW_MARGIN * (8_200 + 700))


@pytest.mark.parametrize("action", ["truncate", "reference"])
def test_a_reduction_at_arrival_is_saved_at_the_write_price_on_its_first_request(action: str) -> None:
    credit = Credit()
    decisions: list[Decision] = []
    credit.observe(decisions, 5_000, GPT5)
    decisions.append(Decision(action=action, target="t1", reason="at arrival", tokens_saved=1_000))
    credit.observe(decisions, 6_000, GPT5)
    assert credit.saved == pytest.approx(1_000)  # raw would have written them, uncached


def test_a_batch_saves_at_the_read_price_from_the_next_request_and_pays_its_loss_once() -> None:
    credit = Credit()
    decisions: list[Decision] = []
    credit.observe(decisions, 10_000, GPT5)
    credit.spend(2_000.0)  # the batch recorded on this request
    decisions.append(Decision(action="mask", target="t1", reason="old", tokens_saved=4_000))
    credit.observe(decisions, 6_000, GPT5)
    assert credit.saved == pytest.approx(-2_000 + 400)
    assert credit.raw_tokens == 10_000  # the window's 6,000 and the 4,000 the batch took out


def test_a_reopened_window_counts_its_standing_reductions_as_in_effect_not_as_new() -> None:
    credit = Credit()
    credit.observe([], 5_000, GPT5)
    credit.observe([Decision(action="truncate", target="t1", reason="cut", tokens_saved=1_000)], 5_000, GPT5)
    assert credit.saved == pytest.approx(100)


def test_a_batch_the_credit_does_not_cover_must_pay_back_within_uncovered_payback_turns() -> None:
    p = projection(8)
    settings = PlannerSettings(min_batch_share=0.0, min_batch_tokens=0)

    def decide(credit: float | None, turns: float) -> tuple[int, float]:
        chosen = dataclasses.replace(settings, uncovered_payback_turns=turns)
        made = plan(p, total=p.total, trigger=10**6, profile=GPT5, turns_so_far=40, settings=chosen, credit=credit)
        return len(made.edits), made.loss

    edits, loss = decide(None, 0.0)  # no credit kept: the expected remaining turns alone decide
    assert edits and loss > 0  # it rewrites more than one request's saving pays for
    assert decide(loss, 0.0)[0] == edits  # covered
    assert decide(loss - 1, 0.0)[0] == 0  # not covered, and must pay back at once
    assert decide(loss - 1, float("inf"))[0] == edits
    # Pressure is never held back.
    pressed = plan(p, total=p.total, trigger=p.total - 1, profile=GPT5, turns_so_far=40, settings=settings, credit=0)
    assert pressed.edits


@pytest.mark.parametrize("model", ["gpt-5", "claude-sonnet-4-5"])
def test_a_late_batch_that_pays_back_slowly_waits_for_the_credit(model: str) -> None:
    # A long task statement and small outputs: the batch pays only late, and slowly (as on real SWE-bench runs).
    results = replayed(session(40, lines=12, spec=200), model, [UNBOUNDED, BOUNDED, "contextwarden"])
    (late, *_) = batches(results, UNBOUNDED)
    assert late >= 25 and ended_after(results, UNBOUNDED)[late] > 1.01  # ended right after: dearer than raw
    assert not batches(results, BOUNDED) and not batches(results, "contextwarden")  # 8 turns is the default
    assert max(ended_after(results, BOUNDED)) <= 1.01


@pytest.mark.parametrize("model", ["gpt-5", "claude-sonnet-4-5"])
def test_a_batch_that_pays_back_fast_is_still_taken_and_zero_turns_is_the_strict_bound(model: str) -> None:
    results = replayed(session(30), model, [BOUNDED, STRICT])
    (first, *_) = batches(results, BOUNDED)
    assert ended_after(results, BOUNDED)[first] > 1.01  # the bet a limit of 8 turns still makes
    assert ended_after(results, BOUNDED)[-1] < 0.8
    assert not batches(results, STRICT) and max(ended_after(results, STRICT)) <= 1.01


def test_without_a_limit_no_batch_is_held_back_for_want_of_credit() -> None:
    p = projection(8)
    settings = PlannerSettings(min_batch_share=0.0, min_batch_tokens=0, uncovered_payback_turns=float("inf"))
    free = plan(p, total=p.total, trigger=10**6, profile=GPT5, turns_so_far=40, settings=settings)
    with_credit = plan(p, total=p.total, trigger=10**6, profile=GPT5, turns_so_far=40, settings=settings, credit=0)
    assert free.edits and with_credit.edits == free.edits and free.loss > 0


def test_the_proxy_preset_gives_an_uncovered_batch_four_turns_to_pay_back() -> None:
    # behind the proxy a batch adds no tool list, so it looks cheaper and comes earlier: the preset asks more
    proxy, eight = "contextwarden:task=proxy", "contextwarden:task=proxy,uncovered-payback-turns=8"
    results = replayed(session(30, lines=12, spec=200), "claude-sonnet-4-5", [proxy, eight])
    (taken, *_) = batches(results, eight)
    assert ended_after(results, eight)[taken] > 1.05  # the bet 8 turns makes here
    assert not batches(results, proxy) and max(ended_after(results, proxy)) <= 1.01
