"""The scripted long run every framework adapter is tested with, and the checks on what its model saw.

Forty turns of a coding agent: each turn the model calls ``read_log`` or ``run_tests``; the outputs
grow (turn n returns about 1,500·(n+1) characters), so the session passes the planner's trigger and
old outputs must be masked. A fact is planted in an early output (:data:`PLANTED`) and the goal is
the first user message (:data:`GOAL`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from contextwarden.governance.inspection import inspect_session
from contextwarden.log.events import AssistantMessage, Event, ToolResult
from contextwarden.log.store import SessionStore
from contextwarden.mirror import MIRRORED_KINDS, content_digest
from contextwarden.wire import WireFormat, get_codec

TURNS = 40
GOAL = "Find why the nightly build fails and fix it. Never touch the vendored directory."
PLANTED = "The staging database password rotates on Fridays at 17:00 UTC."
PLANTED_TURN = 2
TOOL_NAMES = ("read_log", "run_tests")


def tool_name(turn: int) -> str:
    """The tool the model calls on ``turn`` (0-based)."""
    return TOOL_NAMES[turn % 2]


def tool_arguments(turn: int) -> dict[str, Any]:
    """The arguments of that call (distinct every turn, so no result supersedes another)."""
    return {"path": f"logs/build-{turn}.log"} if turn % 2 == 0 else {"target": f"tests/test_step{turn}.py"}


def tool_output(turn: int, **_: Any) -> str:
    """The tool's output on ``turn``: numbered lines, longer every turn, the planted fact on one."""
    lines = [f"turn {turn} line {n}: compiling module_{n % 17} ... ok" for n in range((turn + 1) * 30)]
    if turn == PLANTED_TURN:
        lines.insert(5, PLANTED)
    return "\n".join(lines)


def call_id(turn: int) -> str:
    """The tool call id of ``turn``."""
    return f"call_{turn:03d}"


def final_answer() -> str:
    """What the model says after the last tool call."""
    return "The build fails because module_3 is missing; fixed by restoring it."


# --------------------------------------------------------------------------- checks on a request


def chat_events(messages: Sequence[dict[str, Any]]) -> list[Event]:
    """A request's OpenAI Chat messages as events, through the wire codec."""
    parsed = get_codec("openai_chat").parse_request({"model": "m", "messages": list(messages)})
    return [*parsed.instructions, *parsed.events]


def assert_pairing_valid(events: Sequence[Event]) -> None:
    """Every tool result answers a call of the assistant message before it; every call is answered."""
    open_calls: set[str] = set()
    for event in events:
        if isinstance(event, AssistantMessage):
            assert not open_calls, f"calls {sorted(open_calls)} were never answered"
            open_calls = {c.id for c in event.tool_calls}
        elif isinstance(event, ToolResult):
            assert event.call_id in open_calls, f"orphan tool result for {event.call_id}"
            open_calls.discard(event.call_id)
    # the newest calls may be answered only after this request, but a request never ends with them


def assert_projection(events: Sequence[Event], *, turn: int) -> None:
    """What one request showed the model: the goal, bounded outputs, old outputs masked late in the run."""
    texts = [getattr(e, "text", "") or getattr(e, "output", "") for e in events]
    assert any(GOAL in t for t in texts), f"turn {turn}: the goal is not in the request"
    outputs = [e.output for e in events if isinstance(e, ToolResult)]
    assert all(len(o) <= 60_000 for o in outputs), f"turn {turn}: an unbounded tool output reached the model"
    if turn >= TURNS - 1:
        raw = [o for o in outputs if o.startswith("turn 0 line 0")]
        assert not raw, "the oldest output is still sent in full at the end of the run"


def mirrored_counts(store: SessionStore, session_id: str) -> dict[str, int]:
    """How many message events of each kind the log holds for the session."""
    counts: dict[str, int] = {}
    for event in store.read(session_id):
        if event.kind in MIRRORED_KINDS:
            counts[event.kind] = counts.get(event.kind, 0) + 1
    return counts


def assert_inspect_shows(
    store: SessionStore,
    session_id: str,
    fmt: WireFormat,
    body: dict[str, Any],
    *,
    tools: Sequence[str],
    answer_stored: bool = True,
) -> None:
    """``contextwarden inspect`` rebuilds the last call exactly: its model, its tools and its messages.

    ``body`` is what the framework's model was sent on that call, as a ``fmt`` request body.
    ``answer_stored``: the call's answer is in the log (an input filter alone never sees the last
    answer, so there the last call made is still the session's next request).
    """
    turns = inspect_session(store, session_id).turns
    view = inspect_session(store, session_id, turn=turns - 1 if answer_stored else turns)
    ctx = view.context
    assert ctx.model == "gpt-4o"
    assert [t.name for t in ctx.tools] == [*tools, "read_range", "recall"]
    codec = get_codec(fmt)
    rebuilt = codec.parse_request(codec.render_request(ctx)).events
    sent = codec.parse_request(body).events
    assert [content_digest(e) for e in rebuilt] == [content_digest(e) for e in sent]
