"""``PlannerSettings.drop_old_thinking`` decides whether a build drops the reasoning of earlier turns."""

from __future__ import annotations

from contextwarden import ContextManager, ContextPolicy, PlannerSettings, open_store
from contextwarden.log.events import AssistantMessage, ThinkingBlock, UserMessage
from contextwarden.tokens import HeuristicCounter

REASONING = "Let me think about the parser step by step. " * 60


def _build(drop_old_thinking: bool) -> tuple[set[str], list[bool]]:
    store = open_store("memory:")
    store.create_session("s")
    events = []
    for n in range(4):
        events.append(UserMessage(text=f"Question {n}: what does the parser do?"))
        events.append(AssistantMessage(text=f"Answer {n}.", thinking=(ThinkingBlock(text=REASONING, signature="sig"),)))
    events.append(UserMessage(text="And now?"))
    store.append("s", events, expected_last_seq=0)
    # Batch whenever anything is reducible, so only the knob decides what the batch holds.
    planner = PlannerSettings(
        cache_aware=False, min_batch_tokens=0, min_batch_share=0.0, drop_old_thinking=drop_old_thinking
    )
    manager = ContextManager(store, counter=HeuristicCounter(), policy=ContextPolicy(planner=planner))
    ctx = manager.build("s", model="gpt-4o")
    actions = {d.action for d in ctx.decisions}
    return actions, [bool(m.thinking) for m in ctx.messages if m.role == "assistant"]


def test_old_thinking_is_dropped_only_when_the_policy_says_so() -> None:
    dropped_actions, dropped = _build(True)
    kept_actions, kept = _build(False)
    assert "drop_thinking" in dropped_actions and dropped == [False] * 4
    assert "drop_thinking" not in kept_actions and kept == [True] * 4
