"""``ContextPolicy.retrieval_max_tokens`` bounds what ``ContextManager.retrieve`` reads back."""

from __future__ import annotations

from contextwarden import ContextManager, ContextPolicy, SessionStore, open_store
from contextwarden.log.events import ToolCall
from contextwarden.testing import SessionBuilder
from contextwarden.tokens import HeuristicCounter

COUNTER = HeuristicCounter()


def _session() -> tuple[SessionStore, str]:
    session = SessionBuilder(open_store("memory:")).start("look at the data")
    output = "\n".join(f"row {i} " + "value " * 8 for i in range(1, 5_001))
    result = session.call("bash", output, text="Reading it.", command="cat big.csv")
    return session.store, result.id


def _read_back(store: SessionStore, artifact: str, limit: int) -> str:
    manager = ContextManager(store, counter=COUNTER, policy=ContextPolicy(retrieval_max_tokens=limit))
    read = ToolCall(id="r1", name="read_range", arguments={"artifact_id": artifact, "start_line": 1, "end_line": 5_000})
    return manager.retrieve("s", read).output


def test_the_retrieval_bound_of_the_policy_caps_a_read_back() -> None:
    store, artifact = _session()
    small, large = _read_back(store, artifact, 300), _read_back(store, artifact, 6_000)
    assert COUNTER.count(small) <= 300 + 50 < COUNTER.count(large)
    assert "row 1 " in small and "row 1 " in large
