"""The retrieval tools an output cut at ingestion needs join the tool list only when that rewrite pays."""

from __future__ import annotations

import dataclasses

from contextwarden.assemble.manager import ContextManager, ContextPolicy
from contextwarden.context import ToolDefinition
from contextwarden.log.events import ContextEditBatch, ToolCall, UserMessage
from contextwarden.log.store.memory import MemoryStore
from contextwarden.models import get_profile
from contextwarden.plan.planner import PlannerSettings
from contextwarden.testing import SessionBuilder
from contextwarden.tokens import HeuristicCounter
from contextwarden.window.checkpoint import dumps_projection
from contextwarden.window.checkpoint_read import loads_projection

GPT5 = get_profile("gpt-5")  # automatic cache: a rewrite costs the input price, a read 0.1 of it
BASH = (ToolDefinition(name="bash", description="Run a command", parameters={"type": "object"}),)
CAP = 2_000
"""The item cap of these sessions: a larger output is cut at ingestion."""


def rows(n: int, tag: str = "row") -> str:
    return "\n".join(f"{tag} {i}: value = compute({i})" for i in range(n))


def built(turns: int, *, big_at: int, big_rows: int, mask: bool = False) -> tuple[ContextManager, MemoryStore, list]:
    """A session built request by request; output ``big_at`` is over the cap. Returns the contexts."""
    store = MemoryStore()
    policy = ContextPolicy(max_item_tokens=CAP, planner=PlannerSettings(mask=mask))
    manager = ContextManager(store, counter=HeuristicCounter(), policy=policy, compactor=None)
    s = SessionBuilder(store)
    s.add(UserMessage(text="fix the build"))
    contexts = [manager.build("s", model=GPT5, tools=BASH)]
    for k in range(turns):
        s.call("bash", rows(big_rows if k == big_at else 25, tag=f"step{k}"), command=f"make step{k}")
        contexts.append(manager.build("s", model=GPT5, tools=BASH))
    return manager, store, contexts


def names(context: object) -> list[str]:
    return [t.name for t in context.tools]  # type: ignore[attr-defined]


def test_a_late_cut_that_would_rewrite_the_whole_request_does_not_bring_the_tools() -> None:
    manager, store, contexts = built(30, big_at=25, big_rows=300)
    cut = contexts[26]
    assert any(d.action == "truncate" for d in cut.decisions), "the output is cut at ingestion"
    # The tools open the cached prefix: joining now would rewrite ~the whole request to save what the cut saved.
    assert names(cut) == ["bash"] and not cut.window_event_ids
    assert all(names(c) == ["bash"] and not c.window_event_ids for c in contexts)
    assert not any(isinstance(e, ContextEditBatch) for e in store.read("s"))
    # The cut's marker still says how to read it back, and the manager serves that call.
    artifact = store.read("s")[-1 - 2 * 4].id  # the 26th result: four turns after it
    assert f'read_range(artifact_id="{artifact}"' in " ".join(m.text for m in cut.messages)
    call = ToolCall(id="r", name="read_range", arguments={"artifact_id": artifact, "start_line": 150, "end_line": 151})
    assert "step25 150: value" in manager.retrieve("s", call).output


def test_an_early_cut_the_credit_covers_brings_the_tools_at_once() -> None:
    _, store, contexts = built(3, big_at=0, big_rows=1_000)
    first = contexts[1]
    assert names(first) == ["bash", "read_range", "recall"] and len(first.window_event_ids) == 1
    (offer,) = [e for e in store.read("s") if isinstance(e, ContextEditBatch)]
    assert offer.edits == () and "truncated at ingestion" in offer.reason
    assert all(names(c) == names(first) and not c.window_event_ids for c in contexts[2:])


def test_a_pending_cut_brings_the_tools_with_the_next_window_event_and_survives_a_checkpoint() -> None:
    manager, store, _ = built(30, big_at=25, big_rows=300)
    projection = manager.projection("s")
    config = dataclasses.replace(projection.config)
    restored, _ = loads_projection(dumps_projection(projection), config)
    assert not restored.cuts_offered
    s = SessionBuilder(store, create=False)
    s.add(ContextEditBatch(edits=(), reason="a batch"))
    manager.forget("s")
    assert names(manager.build("s", model=GPT5, tools=BASH)) == ["bash", "read_range", "recall"]
    again = manager.projection("s")
    assert again.cuts_offered and loads_projection(dumps_projection(again), config)[0].cuts_offered
