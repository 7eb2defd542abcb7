from __future__ import annotations

import importlib.util

import pytest

from contextwarden.log.events import AssistantMessage, Event, ToolCall, ToolResult, UserMessage, with_position
from contextwarden.log.store import MemoryStore
from contextwarden.models import get_profile
from contextwarden.replay import ReplayInput, ReplaySettings, replay
from contextwarden.replay.names import PEER_NAMES, is_peer
from contextwarden.replay.peers import PEERS, PeerUnavailable, peer_strategy
from contextwarden.replay.strategies import RunEnv
from contextwarden.tokens import HeuristicCounter


def session(outputs: list[str], *, users: tuple[int, ...] = ()) -> list[Event]:
    events: list[Event] = [UserMessage(text="Fix the bug.")]
    for n, output in enumerate(outputs):
        if n in users:
            events.append(UserMessage(text=f"Also look at part {n}."))
        events.append(
            AssistantMessage(
                text=f"step {n}", tool_calls=(ToolCall(id=f"c{n}", name="bash", arguments={"command": f"cat f{n}"}),)
            )
        )
        events.append(ToolResult(call_id=f"c{n}", tool_name="bash", output=output))
    return events


def build(name: str, events: list[Event]) -> list[str]:
    """Tool message texts of the request the peer would send after ``events``."""
    store = MemoryStore()
    sid = store.create_session("s").id
    try:
        run = peer_strategy(name).start(
            RunEnv(store=store, session_id=sid, profile=get_profile("gpt-4o"), counter=HeuristicCounter())
        )
    except PeerUnavailable as exc:
        pytest.skip(f"{name} cannot run here: {exc}")
    for seq, event in enumerate(events, start=1):
        run.observe(with_position(event, session_id=sid, seq=seq))
    return [m.text for m in run.build().context.messages if m.role == "tool"]


def test_langchain_context_editing_clears_all_but_the_last_three_over_its_trigger() -> None:
    big = [f"{n} " + "x" * 40_000 for n in range(12)]  # ~120K approximate tokens, over the 100K trigger
    texts = build("langchain-context-editing", session(big))
    assert texts[:9] == ["[cleared]"] * 9
    assert texts[9:] == big[9:]
    small = [f"{n} " + "y" * 1_000 for n in range(12)]
    assert build("langchain-context-editing", session(small)) == small


def test_openai_agents_trimmer_trims_outputs_older_than_the_last_two_user_turns() -> None:
    outputs = [f"{n} " + "z" * 900 for n in range(6)]
    untouched = build("openai-agents-trimmer", session(outputs))
    assert untouched == outputs  # one user message: nothing is old
    assert build("openai-agents-trimmer", session(outputs, users=(3,))) == outputs  # the task is one of the two
    texts = build("openai-agents-trimmer", session(outputs, users=(2, 4)))
    assert all(t.startswith("[Trimmed: bash output") and len(t) < 300 for t in texts[:2])
    assert texts[2:] == outputs[2:]


def test_missing_peer_is_skipped_with_a_reason_never_faked() -> None:
    events = tuple(with_position(e, session_id="s", seq=n) for n, e in enumerate(session(["out"]), start=1))
    results = replay(
        [ReplayInput(name="t", source="t", events=events)],
        ["raw", "openhands-condenser"],
        settings=ReplaySettings(model="gpt-4o", optimum=False),
        counter=HeuristicCounter(),
    )
    peer = results.strategy("openhands-condenser")
    if importlib.util.find_spec("openhands") is None:
        assert "openhands-sdk is not installed" in peer.skipped
    assert peer.skipped and not peer.per_file
    assert any(note.startswith("openhands-condenser skipped") for note in results.notes)
    assert results.to_dict()["strategies"][1] == {
        "name": "openhands-condenser",
        "skipped": peer.skipped,
        "per_file": [],
    }


def test_every_peer_has_a_name_in_the_peer_name_type_and_the_reverse() -> None:
    assert tuple(PEERS) == PEER_NAMES
    assert all(is_peer(name) for name in PEERS) and not is_peer("raw")
