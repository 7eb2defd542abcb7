"""The scripted long run every framework arm of ``bench_integrations.py`` plays, and what it checks.

8 user turns of 5 tool calls each (40 calls), tool outputs growing from 1.5K to 60K characters.
Planted facts, three kinds: said by the user mid-run, on the 4th line of an early tool output
(where any preview or head-and-tail truncation keeps them), and in the *middle* of a long tool output
(where a preview, a head-and-tail bound or a summarizer that sees a capped excerpt loses them).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from contextwarden.wire import get_codec

USER_TURNS, CALLS_PER_TURN = 8, 5
SYSTEM = "You are a build engineer. Use the tools."
GOAL = "Find why the nightly build fails."

FactKind = Literal["user", "head", "middle"]
FACTS: dict[str, tuple[FactKind, str]] = {
    "user:2": ("user", "Note: the release branch is called hotfix-blue."),
    "user:5": ("user", "Note: the CI runner image is ubuntu-22.04-large."),
    "tool:3": ("head", "FACT: the flaky test is test_payments_retry."),
    "tool:8": ("head", "FACT: the cache key prefix is cw-v7."),
    "tool:13": ("head", "FACT: the on-call engineer is Priya."),
    "tool:21": ("middle", "FACT: the signing key expired on March 3."),
    "tool:29": ("middle", "FACT: the artifact bucket is s3://nightly-eu-west."),
}
FACT_KINDS: tuple[FactKind, ...] = ("user", "head", "middle")


def user_text(turn: int) -> str:
    """What the user says at the start of ``turn``."""
    fact = FACTS.get(f"user:{turn}")
    return fact[1] if fact else (f"Turn {turn}: keep going." if turn else GOAL)


def tool_output(call: int) -> str:
    """The build log ``read_log`` returns on the run's ``call``-th tool call."""
    lines = [f"call {call} line {n}: compiling module_{n % 17} ... ok" for n in range((call + 1) * 30)]
    kind, text = FACTS.get(f"tool:{call}", ("", ""))
    if kind == "head":
        lines.insert(3, text)
    elif kind == "middle":
        lines.insert(len(lines) // 2, text)
    return "\n".join(lines)


def read_log(path: str) -> str:
    """Read a build log."""
    return tool_output(int(path.split("-")[1].split(".")[0]))


def oracle_summary(text: str) -> str:
    """A scripted summarizer at its best: one line of gist, then every planted fact it was shown, verbatim.

    A real model may paraphrase or drop a fact; this one never does, so a summarizing arm's
    retention is an upper bound. A fact the framework did not show the summarizer is not in it.
    """
    kept = [fact for _, fact in FACTS.values() if fact in text]
    return "\n".join([f"The user asked: {GOAL} The agent has read build logs with read_log.", *kept])


@dataclass
class Arm:
    """One framework run: what its model received, as OpenAI Chat bodies (``messages``, ``tools``)."""

    requests: list[dict[str, Any]]
    """Every request the agent's model received, in order."""
    recall: Any = None
    """``recall(query) -> str`` when the model was offered a retrieval tool over the full history."""
    side_requests: list[dict[str, Any]] = field(default_factory=list)
    """Calls the context management itself made (a summarizer's), priced with the rest."""
    history: str = ""
    """The framework's own history at the end of the run (its state, session or message list), as text."""


def unpaired(messages: list[dict[str, Any]]) -> bool:
    """Whether a Chat request breaks tool pairing (a result with no call, or a call left unanswered)."""
    open_calls: set[str] = set()
    for message in messages:
        role = message.get("role")
        if role == "tool":
            if message.get("tool_call_id") not in open_calls:
                return True
            open_calls.discard(str(message.get("tool_call_id")))
            continue
        if open_calls:
            return True
        if role == "assistant":
            open_calls = {str(c.get("id")) for c in message.get("tool_calls") or ()}
    return bool(open_calls)


def chat_of(fmt: str, body: dict[str, Any]) -> dict[str, Any]:
    """A request body of another format as OpenAI Chat messages, through the wire codecs."""
    parsed = get_codec(fmt).parse_request(body)  # type: ignore[arg-type]
    return {"messages": get_codec("openai_chat").render_request(parsed.to_context(), model="m")["messages"]}


def recall_tool(serve: Callable[[str, dict[str, Any]], str]) -> Callable[[str], str]:
    return lambda query: serve("recall", {"query": query})


def recall_server(manager: Any, session_id: str = "bench") -> Callable[[str], str]:
    from contextwarden.integrations._retrieval import RetrievalServer

    return recall_tool(RetrievalServer(manager, lambda: session_id).serve)
