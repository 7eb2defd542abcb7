"""``ContextPolicy.retrieval_max_tokens`` bounds what ``ContextManager.retrieve`` reads back."""

from __future__ import annotations

from contextwarden import ContextManager, ContextPolicy, SessionStore, open_store
from contextwarden.log.events import AssistantMessage, ToolCall, ToolResult, UserMessage
from contextwarden.tokens import HeuristicCounter

COUNTER = HeuristicCounter()


def _session() -> tuple[SessionStore, str]:
    store = open_store("memory:")
    store.create_session("s")
    call = ToolCall(id="c1", name="bash", arguments={"command": "cat big.csv"})
    output = "\n".join(f"row {i} " + "value " * 8 for i in range(1, 5_001))
    events = [
        UserMessage(text="look at the data"),
        AssistantMessage(text="Reading it.", tool_calls=(call,)),
        ToolResult(call_id="c1", tool_name="bash", output=output),
    ]
    stored = store.append("s", events, expected_last_seq=0)
    return store, stored[-1].id


def _read_back(store: SessionStore, artifact: str, limit: int) -> str:
    manager = ContextManager(store, counter=COUNTER, policy=ContextPolicy(retrieval_max_tokens=limit))
    read = ToolCall(id="r1", name="read_range", arguments={"artifact_id": artifact, "start_line": 1, "end_line": 5_000})
    return manager.retrieve("s", read).output


def test_the_retrieval_bound_of_the_policy_caps_a_read_back() -> None:
    store, artifact = _session()
    small, large = _read_back(store, artifact, 300), _read_back(store, artifact, 6_000)
    assert COUNTER.count(small) <= 300 + 50 < COUNTER.count(large)
    assert "row 1 " in small and "row 1 " in large
