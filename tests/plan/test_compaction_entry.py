"""Every compaction path goes through one entry point, which records who decided and why on the event."""

from __future__ import annotations

import pytest

from _agentlog import COUNTER, Agent, profile
from contextwarden.assemble.manager import ContextManager, ContextPolicy
from contextwarden.budget import BudgetPolicy
from contextwarden.errors import UsageError
from contextwarden.governance.inspection import inspect_session
from contextwarden.governance.session import replay_session
from contextwarden.log.events import Compaction
from contextwarden.log.store.memory import MemoryStore
from contextwarden.models import ModelProfile
from contextwarden.plan.compaction import (
    PLANNER_TRIGGER,
    CompactionHook,
    CompactionSettings,
    TriggerSettings,
    Turn,
    WindowCompactor,
    compact,
    compaction_decision,
)
from contextwarden.plan.planner import PlannerSettings
from contextwarden.window.projection import Projection

WINDOW = profile(60_000)
TIGHT = ContextPolicy(budget=BudgetPolicy(trigger_tokens=6_000), planner=PlannerSettings(mask=False))


def explored(store: MemoryStore) -> Agent:
    """A session of 30 reads of different files: nothing supersedes, so only compaction makes room."""
    agent = Agent(store).start()
    for i in range(30):
        agent.read(f"src/r{i}.py", 800)
    return agent


def compactions(store: MemoryStore) -> list[Compaction]:
    return [e for e in store.read("s") if isinstance(e, Compaction)]


def test_a_build_compacts_through_the_entry_point_sized_by_its_own_policy() -> None:
    store = MemoryStore()
    explored(store)
    # a compactor given to the manager, with no budget of its own: the build's policy sizes it
    manager = ContextManager(store, counter=COUNTER, policy=TIGHT, compactor=WindowCompactor(store, counter=COUNTER))
    ctx = manager.build("s", model=WINDOW)
    (event,) = compactions(store)
    assert event.details["trigger"] == PLANNER_TRIGGER
    assert event.details["keep_recent_tokens"] == int(6_000 * CompactionSettings().keep_recent_max_share)
    (decision,) = [d for d in ctx.decisions if d.action == "compact"]
    plan = next(d for d in ctx.decisions if d.action == "plan")
    assert event.details["reason"] == plan.reason != ""
    assert decision == compaction_decision(event)
    assert ctx.window_event_ids == (event.id,)


def test_the_hook_records_its_trigger_and_inspect_lists_it() -> None:
    store = MemoryStore()
    agent = Agent(store).start()
    agent.work(12)
    manager = ContextManager(store, counter=COUNTER, compactor=WindowCompactor(store, counter=COUNTER))
    hook = CompactionHook(manager, settings=TriggerSettings(max_steps=10))
    stored = hook.on_before_turn("s", Turn(model=profile(16_000)))
    assert stored is not None
    (event,) = compactions(store)
    assert (event.details["trigger"], event.details["reason"]) == ("steps", "36 model calls in this window (limit 10)")
    agent.work(1)
    view = inspect_session(store, "s", counter=COUNTER)
    listed = [d for d in view.standing if d.action == "compact"]
    assert [d.reason for d in listed] == ["as recorded: 36 model calls in this window (limit 10)"]
    assert listed[0].target == event.id
    # the replay that lint, inspect and the taxonomy read copies it: only the log knows why it ran
    turns = list(replay_session(store, "s", counter=COUNTER, final=True))
    assert [t.window_events for t in turns if "compaction" in t.window_events] == [("compaction",)]


def test_an_explicit_compaction_runs_under_the_policy_it_names() -> None:
    store = MemoryStore()
    explored(store)
    manager = ContextManager(store, counter=COUNTER, compactor=WindowCompactor(store, counter=COUNTER))
    event = compact(manager, "s", model=WINDOW, policy=TIGHT, reason="before a long subtask")
    assert event is not None and event.details["trigger"] == "explicit"
    assert event.details["reason"] == "before a long subtask"
    assert event.details["keep_recent_tokens"] == int(6_000 * CompactionSettings().keep_recent_max_share)


class OneLineCompactor:
    """A compactor of the seam's own shape: everything before the last 10 events becomes one line."""

    def compact_window(
        self, session_id: str, projection: Projection, *, profile: ModelProfile, reason: str
    ) -> Compaction | None:
        first = projection.last_seq - 9
        return Compaction(summary=f"earlier work ({reason})", first_kept_seq=first, covered_to_seq=first - 1)


def test_a_compactor_of_the_seam_gets_its_decision_recorded_too() -> None:
    store = MemoryStore()
    explored(store)
    manager = ContextManager(store, counter=COUNTER, policy=TIGHT, compactor=OneLineCompactor())
    ctx = manager.build("s", model=WINDOW)
    (event,) = compactions(store)
    plan = next(d for d in ctx.decisions if d.action == "plan")
    assert event.summary == f"earlier work ({plan.reason})"
    assert event.details == {"trigger": PLANNER_TRIGGER, "reason": plan.reason}
    assert compaction_decision(event) in ctx.decisions
    with pytest.raises(UsageError, match="focus and reground need a WindowCompactor"):
        compact(manager, "s", model=WINDOW, focus="the parser")
    off = ContextManager(store, counter=COUNTER, compactor=None)
    with pytest.raises(UsageError, match="compaction is off"):
        compact(off, "s", model=WINDOW)
