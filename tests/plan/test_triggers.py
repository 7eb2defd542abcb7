"""Triggers: the side-effect-free estimate and every reason to compact before a turn."""

from __future__ import annotations

import pytest

from _agentlog import COUNTER, Agent, manager, profile
from contextwarden.budget import BudgetPolicy
from contextwarden.context import ToolDefinition
from contextwarden.log.events import Compaction, UsageReport
from contextwarden.log.store.memory import MemoryStore
from contextwarden.plan.compaction import CompactionHook, TriggerSettings, Turn, compact, estimate_request
from contextwarden.plan.compaction.triggers import fixed_tokens, threshold_for

TOOLS = (
    ToolDefinition(
        name="read_file",
        description="Read a file from the workspace. " * 20,
        parameters={"type": "object", "properties": {"path": {"type": "string"}}},
    ),
)
BIG = profile(200_000)


def setup(rounds: int = 4, **kw: object) -> tuple[MemoryStore, Agent, CompactionHook]:
    store = MemoryStore()
    agent = Agent(store).start()
    agent.work(rounds)
    mgr = manager(store)
    return store, agent, CompactionHook(mgr, settings=TriggerSettings(**kw))  # type: ignore[arg-type]


def test_estimate_counts_system_and_tool_schemas_and_changes_nothing() -> None:
    store, _, hook = setup()
    last = store.get_session("s").last_seq
    projection = hook.manager.projection("s")
    bare = estimate_request(projection, (), COUNTER)
    with_tools = estimate_request(projection, TOOLS, COUNTER)
    assert with_tools.tokens - bare.tokens == fixed_tokens("", TOOLS, COUNTER) > 100
    assert bare.tokens == projection.total + COUNTER.count(projection.system)
    assert bare.source == "counter"
    hook.check("s", Turn(model=BIG, tools=TOOLS))
    assert store.get_session("s").last_seq == last, "checking triggers appends nothing"


def test_estimate_is_anchored_on_usage_and_ignores_reports_from_before_a_compaction() -> None:
    _store, agent, hook = setup()
    projection = hook.manager.projection("s")
    agent.add(UsageReport(input_tokens=9_000, output_tokens=100))
    agent.work(1)
    projection = hook.manager.projection("s")
    grown = projection.total - projection.tokens_at_last_usage
    est = estimate_request(projection, (), COUNTER)
    assert est.source == "usage" and est.anchored == 9_000 + 100 + grown
    agent.work(8)
    assert compact(hook.manager, "s", model=profile(40_000)) is not None
    after = estimate_request(hook.manager.projection("s"), (), COUNTER)
    assert after.source == "counter", "a report describing the pre-compaction context is no anchor"


def test_token_threshold_is_strict_and_comes_from_the_budget_policy() -> None:
    store, _, hook = setup()
    est = hook.check("s", Turn(model=BIG)).estimate.tokens
    blind = TriggerSettings(consult_planner=False)
    exact = CompactionHook(manager(store, budget=BudgetPolicy(trigger_tokens=est)), settings=blind)
    assert not exact.check("s", Turn(model=BIG)).fire, "equal to the threshold does not trigger"
    over = CompactionHook(manager(store, budget=BudgetPolicy(trigger_tokens=est - 1)), settings=blind)
    decision = over.check("s", Turn(model=BIG))
    assert decision.fire and decision.trigger == "tokens"
    budget = hook.manager.policy.budget
    assert threshold_for(BIG, TriggerSettings(), budget) == budget.compaction_threshold(BIG)
    assert budget.compaction_threshold(BIG) == min(budget.trigger_for(BIG), budget.usable_input(BIG))


def test_the_old_size_settings_warn_and_map_onto_the_budget_policy() -> None:
    budget = BudgetPolicy()
    with pytest.warns(DeprecationWarning, match=r"TriggerSettings\(trigger_ratio\) is deprecated.*BudgetPolicy"):
        ratio = TriggerSettings(trigger_ratio=0.5)
    assert ratio.budget_for(BIG, budget) == BudgetPolicy(trigger_tokens=100_000)
    assert threshold_for(BIG, ratio, budget) == 100_000
    with pytest.warns(DeprecationWarning):
        assert threshold_for(BIG, TriggerSettings(trigger_tokens=1234), budget) == 1234
    with pytest.warns(DeprecationWarning, match="trigger_tokens, per_model"):
        per_model = TriggerSettings(trigger_tokens=1234, per_model={"test-model": 0.25})
    assert threshold_for(BIG, per_model, budget) == 50_000
    assert threshold_for(profile(200_000, name="other"), per_model, budget) == 1234
    with pytest.warns(DeprecationWarning):
        assert threshold_for(BIG, TriggerSettings(per_model={"test-model": 7_000}), budget) == 7_000


def test_token_trigger_leaves_it_to_the_planner_when_masking_suffices() -> None:
    store = MemoryStore()
    agent = Agent(store).start()
    for r in range(30):
        agent.read(f"src/big{r}.py", size=2_000)  # large, maskable tool outputs
    est = CompactionHook(manager(store)).check("s", Turn(model=BIG)).estimate.tokens
    mgr = manager(store, budget=BudgetPolicy(trigger_tokens=est - 500))
    assert not CompactionHook(mgr).check("s", Turn(model=BIG)).fire
    blind = CompactionHook(mgr, settings=TriggerSettings(consult_planner=False))
    assert blind.check("s", Turn(model=BIG)).fire


def test_hook_compacts_when_a_trigger_fires() -> None:
    store, _agent, hook = setup(rounds=8, max_steps=10)
    made = hook.on_before_turn("s", Turn(model=profile(40_000)))
    assert isinstance(made, Compaction) and made.details["trigger"] == "steps"
    assert [e for e in store.read("s") if isinstance(e, Compaction)] == [made]


def test_steps_and_age_triggers() -> None:
    _, _, hook = setup(max_steps=12)
    assert hook.check("s", Turn(model=BIG)).trigger == "steps"
    _, _, hook = setup(max_steps=1_000)
    assert not hook.check("s", Turn(model=BIG)).fire
    store, _, hook = setup(max_age_seconds=3600)
    created = store.get_session("s").created_at
    hook.clock = lambda: created + 10
    assert not hook.check("s", Turn(model=BIG)).fire
    hook.clock = lambda: created + 7200
    decision = hook.check("s", Turn(model=BIG))
    assert decision.trigger == "age" and "7200" in decision.reason


def test_explicit_request_passes_its_focus_once() -> None:
    _store, _, hook = setup(rounds=8)
    hook.request("s", focus="the failing parser test")
    decision = hook.check("s", Turn(model=BIG))
    assert decision.trigger == "explicit" and decision.focus == "the failing parser test"
    made = hook.on_before_turn("s", Turn(model=profile(40_000)))
    assert isinstance(made, Compaction) and made.details["focus"] == "the failing parser test"
    assert "the failing parser test" in made.summary
    assert not hook.check("s", Turn(model=BIG)).fire, "the request is consumed"


def test_subtask_switch_and_phase_boundaries() -> None:
    _, _, hook = setup(phase_boundaries=("implement",))
    assert not hook.check("s", Turn(model=BIG, subtask="explore")).fire
    hook.on_before_turn("s", Turn(model=BIG, subtask="explore", phase="explore"))
    assert not hook.check("s", Turn(model=BIG, subtask="explore", phase="explore")).fire
    assert hook.check("s", Turn(model=BIG, subtask="fix parser")).trigger == "subtask"
    assert hook.check("s", Turn(model=BIG, subtask="explore", phase="implement")).trigger == "phase"
    assert not hook.check("s", Turn(model=BIG, subtask="explore", phase="review")).fire


def test_switching_to_a_smaller_window_compacts_first() -> None:
    _, _, hook = setup(rounds=8)
    hook.on_before_turn("s", Turn(model=BIG))
    small = profile(40_000, name="small-model")
    est = hook.check("s", Turn(model=small)).estimate.tokens
    threshold = threshold_for(small, hook.settings, hook.manager.policy.budget)
    assert est > 0.5 * threshold
    decision = hook.check("s", Turn(model=small))
    assert decision.trigger == "model_switch" and "small-model" in decision.reason
    roomy = profile(400_000, name="roomy")
    assert not hook.check("s", Turn(model=roomy)).fire
