"""Session-tree token budget: weighted usage over a root and its subagents, reminders, exhaustion."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from contextwarden.assemble.manager import ContextManager
from contextwarden.context import ToolDefinition
from contextwarden.errors import SpendLimitReached, UsageError
from contextwarden.fragments import find_fragment
from contextwarden.log.events import Compaction, Event, Instruction, ToolCall, UsageReport, UserMessage
from contextwarden.log.store import SQLiteStore
from contextwarden.loop import AgentTool, run_agent_loop
from contextwarden.plan.spend import NOTICE_SOURCE, SpendLimit, SpendLimitHook, SpendTracker
from contextwarden.testing import ScriptedProvider, make_response
from contextwarden.tokens import HeuristicCounter


def _spend(store: Any, sid: str, *, inp: int = 0, cached: int = 0, out: int = 0) -> None:
    last = store.get_session(sid).last_seq
    store.append(
        sid, [UsageReport(input_tokens=inp, cache_read_tokens=cached, output_tokens=out)], expected_last_seq=last
    )


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    s = SQLiteStore(str(tmp_path / "tree.db"))
    yield s
    s.close()


def test_weights_count_output_and_uncached_input_only() -> None:
    policy = SpendLimit(limit=1_000, sampling_weight=2.0, prefill_weight=0.5)
    assert policy.weigh(UsageReport(input_tokens=1_000, cache_read_tokens=800, output_tokens=10)) == 10 * 2 + 200 * 0.5
    assert policy.levels == (500, 250, 100)
    assert SpendLimit(limit=100, reminders=(10, 60, 30)).levels == (60, 30, 10)
    for bad in ({"limit": 0}, {"limit": 10, "prefill_weight": -1}, {"limit": 10, "reminders": (10,)}):
        with pytest.raises(UsageError):
            SpendLimit(**bad)


def test_usage_sums_the_whole_tree_and_nothing_else(store: SQLiteStore) -> None:
    root = store.create_session().id
    child = store.create_session(parent_session_id=root).id
    grandchild = store.create_session(parent_session_id=child).id
    other = store.create_session().id
    _spend(store, root, inp=1_000, out=100)
    _spend(store, child, inp=400, cached=400, out=50)
    _spend(store, grandchild, out=10)
    _spend(store, other, out=10_000)
    budget = SpendTracker(SpendLimit(limit=10_000))
    for member in (root, child, grandchild):
        usage = budget.usage(store, member)
        assert usage.root_session_id == root
        assert set(usage.sessions) == {root, child, grandchild}
        assert usage.spent == pytest.approx(100 + 250 + 50 + 10)
    assert budget.usage(store, other).spent == 10_000


def test_a_fork_counts_only_what_it_spent_after_the_fork(store: SQLiteStore) -> None:
    root = store.create_session().id
    _spend(store, root, out=300)
    fork = store.fork(root, at_seq=1)
    _spend(store, fork.id, out=20)
    usage = SpendTracker(SpendLimit(limit=10_000)).usage(store, fork.id)
    assert usage.root_session_id == root and usage.spent == 320


def test_exhaustion_stops_every_session_of_the_tree_and_stays(store: SQLiteStore) -> None:
    root = store.create_session().id
    child = store.create_session(parent_session_id=root).id
    budget = SpendTracker(SpendLimit(limit=1_000))
    budget.check(store, child)
    _spend(store, child, out=1_000)
    for sid in (root, child):
        with pytest.raises(SpendLimitReached, match="1,000 of its 1,000 weighted tokens"):
            budget.check(store, sid)
    late = store.create_session(parent_session_id=root).id  # a subagent started afterwards
    with pytest.raises(SpendLimitReached):
        budget.check(store, late)
    store.delete_session(child)  # even if the spending record goes away, the tree stays stopped
    with pytest.raises(SpendLimitReached):
        budget.check(store, root)


class _CountingStore:
    """Wraps a store and records the ``since_seq`` of every read."""

    def __init__(self, inner: SQLiteStore) -> None:
        self.inner = inner
        self.reads: list[tuple[str, int]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def read(self, session_id: str, *, since_seq: int = 0) -> list[Event]:
        self.reads.append((session_id, since_seq))
        return self.inner.read(session_id, since_seq=since_seq)


def test_checks_read_only_new_events(store: SQLiteStore) -> None:
    root = store.create_session().id
    for _ in range(5):
        _spend(store, root, out=1)
    counting = _CountingStore(store)
    budget = SpendTracker(SpendLimit(limit=1_000))
    budget.check(counting, root)  # type: ignore[arg-type]
    budget.check(counting, root)  # type: ignore[arg-type]
    _spend(store, root, out=1)
    assert budget.check(counting, root).spent == 6  # type: ignore[arg-type]
    assert counting.reads == [(root, 0), (root, 5)]


def test_reminders_are_registered_fragments_delivered_once_and_again_after_compaction(store: SQLiteStore) -> None:
    root = store.create_session().id
    store.append(root, [UserMessage(text="Do the task.")], expected_last_seq=0)
    budget = SpendTracker(SpendLimit(limit=10_000, reminders=(5_000, 1_000)), counter=HeuristicCounter())
    assert budget.notice(store, root) is None
    _spend(store, root, out=5_500)
    text = budget.notice(store, root)
    assert text is not None and "Less than 5,000 weighted tokens remain" in text
    ftype = find_fragment(text)
    assert ftype is not None and ftype.name == "budget_notice"
    assert HeuristicCounter().count(text) <= 200
    delivered = budget.deliver(store, root)
    assert isinstance(delivered, Instruction) and delivered.source == NOTICE_SOURCE and delivered.role == "developer"
    assert budget.notice(store, root) is None and budget.deliver(store, root) is None
    _spend(store, root, out=3_600)
    assert "Less than 1,000" in (budget.notice(store, root) or "")
    budget.deliver(store, root)
    assert budget.notice(store, root) is None
    last = store.get_session(root).last_seq
    store.append(
        root,
        [Compaction(summary="Earlier work summarized.", first_kept_seq=last + 1, covered_to_seq=last)],
        expected_last_seq=last,
    )
    again = budget.notice(store, root)
    assert again is not None and "Less than 1,000" in again


def test_the_loop_hook_stops_a_subagent_when_the_tree_is_spent(store: SQLiteStore) -> None:
    root = store.create_session().id
    store.append(root, [UserMessage(text="Big task.")], expected_last_seq=0)
    _spend(store, root, inp=4_000, out=500)  # the parent has already spent 1,500 of 2,000
    child = store.create_session(parent_session_id=root).id
    store.append(child, [UserMessage(text="Subtask.")], expected_last_seq=0)
    tool = AgentTool(
        definition=ToolDefinition(name="look", description="Look.", parameters={"type": "object"}),
        run=lambda args: "seen",
    )
    answers = [
        make_response(
            tool_calls=[ToolCall(id=f"t{i}", name="look", arguments={})],
            usage=UsageReport(input_tokens=800, output_tokens=100),
        )
        for i in range(5)
    ]
    provider = ScriptedProvider(answers)
    manager = ContextManager(store, counter=HeuristicCounter())
    hook = SpendLimitHook(SpendTracker(SpendLimit(limit=2_000, reminders=(400,)), counter=HeuristicCounter()), store)
    with pytest.raises(SpendLimitReached):
        run_agent_loop(provider, [tool], manager, child, model="gpt-4o", max_turns=10, on_before_turn=hook)
    # 1,500 + 300 per call: after the 1st call 200 remain (< 400: reminded before the 2nd call);
    # after the 2nd the tree is spent and the 3rd call is refused.
    assert len(provider.requests) == 2
    notices = [e for e in store.read(child) if isinstance(e, Instruction) and e.source == NOTICE_SOURCE]
    assert len(notices) == 1 and "Less than 400" in notices[0].text
    assert not any("Less than 400" in m.text for m in provider.requests[0].messages)
    assert any("Less than 400" in m.text for m in provider.requests[1].messages)
