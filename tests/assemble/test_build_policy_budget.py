"""The budget of the policy a build passes sizes its compaction too, not only its trigger.

A manager made with one policy may build with another (``build(policy=...)``, ``session(policy=...)``);
the structured compactor it made then keeps the tail and sizes the summary for the build's budget.
"""

from __future__ import annotations

import dataclasses
import random

from contextwarden import BudgetPolicy, ContextManager, ContextPolicy, open_store
from contextwarden.context import ToolDefinition
from contextwarden.log.events import AssistantMessage, Compaction, Event, ToolCall, ToolResult, UserMessage
from contextwarden.log.store._protocol import SessionStore
from contextwarden.models import get_profile
from contextwarden.tokens import HeuristicCounter

COUNTER = HeuristicCounter()
PROFILE = dataclasses.replace(get_profile("gpt-4o"), name="test-60k", context_window=60_000, max_output_tokens=2_000)
TOOLS = (ToolDefinition(name="bash", description="Run a shell command", parameters={"type": "object"}),)
WORDS = ["def", "return", "self", "value", "error", "test", "file", "path", "import", "class"]


def _turn(rng: random.Random, n: int) -> list[Event]:
    call = ToolCall(id=f"c{n}", name="bash", arguments={"command": f"pytest tests/test_{n}.py"})
    body = "\n".join(" ".join(rng.choice(WORDS) for _ in range(12)) for _ in range(60))
    # Fixed event ids: placeholders name the event they replace, so random ids would make two runs'
    # token counts differ by a few tokens (and this test compares them exactly).
    return [
        AssistantMessage(id=f"{n:032x}", text=f"Turn {n}.", tool_calls=(call,)),
        ToolResult(id=f"{n + 10_000:032x}", call_id=call.id, tool_name="bash", output=body),
    ]


def _kept_tokens(store: SessionStore, policy: ContextPolicy, *, on_build: bool) -> int:
    """Tokens the first compaction kept verbatim, with ``policy`` on the manager or on each build."""
    store.create_session("s")
    manager = ContextManager(store, counter=COUNTER, policy=None if on_build else policy)
    rng = random.Random(7)
    store.append("s", [UserMessage(text="Make the tests pass.")], expected_last_seq=0)
    n = 0
    while not any(isinstance(e, Compaction) for e in store.read("s")):
        n += 1
        store.append("s", _turn(rng, n), expected_last_seq=store.get_session("s").last_seq)
        manager.build("s", model=PROFILE, tools=TOOLS, policy=policy if on_build else None)
    compaction = next(e for e in store.read("s") if isinstance(e, Compaction))
    return compaction.tokens_after


def test_a_builds_own_budget_sizes_its_compaction() -> None:
    tight = ContextPolicy(budget=BudgetPolicy(trigger_tokens=8_000))
    on_manager = _kept_tokens(open_store("memory:"), tight, on_build=False)
    on_build = _kept_tokens(open_store("memory:"), tight, on_build=True)
    assert on_build == on_manager
    assert on_build < 8_000
