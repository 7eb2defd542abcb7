"""Every rendered body obeys its provider's rules on any session: pairing, unique ids, Anthropic's own rules.

Sessions are generated as random interleavings of user text (whitespace-only too), assistant turns
with calls (ids reused across turns and within a message), results, orphan results, and opaque
provider items; each is rendered by every codec and checked against the rules the provider documents.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from contextwarden.assemble.manager import ContextManager
from contextwarden.context import Message, ModelContext
from contextwarden.log.events import AssistantMessage, OpaquePart, ThinkingBlock, ToolCall, ToolResult, UserMessage
from contextwarden.log.store.memory import MemoryStore
from contextwarden.tokens import HeuristicCounter
from contextwarden.wire import FORMATS, get_codec

IDS = ["c1", "c2", "c1_dup2", "functions.bash:0", ""]
TEXTS = ["", " ", "\n\t", "ok", "answer with trailing space  ", "done\n"]
OPAQUE = {
    "anthropic": '{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"x"}}',
    "openai_responses": '{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"gAAAA"}',
    "gemini": '{"executableCode":{"language":"PYTHON","code":"print(1)"}}',
}

THINKING = [ThinkingBlock(text="let me think", signature="sig-1"), ThinkingBlock(text="", signature="redacted:abc")]

user = st.builds(lambda t: Message(role="user", text=t), st.sampled_from(TEXTS))
assistant = st.builds(
    lambda t, ids, op, th: Message(
        role="assistant",
        text=t,
        tool_calls=tuple(ToolCall(id=i, name=f"t{n}") for n, i in enumerate(ids)),
        opaque=tuple(OpaquePart(format=f, raw_json=OPAQUE[f], position=0, kind="x") for f in op),
        thinking=tuple(th),
    ),
    st.sampled_from(TEXTS),
    st.lists(st.sampled_from(IDS), max_size=3),
    st.lists(st.sampled_from(sorted(OPAQUE)), max_size=2, unique=True),
    st.lists(st.sampled_from(THINKING), max_size=2),
)
result = st.builds(
    lambda i, t: Message(role="tool", text=t, tool_call_id=i, tool_name="t"),
    st.sampled_from([*IDS, "orphan"]),
    st.sampled_from(TEXTS),
)
system = st.builds(lambda t: Message(role="system", text=t), st.sampled_from(["", " ", "rule"]))
sessions = st.lists(st.one_of(user, assistant, result, result, system), max_size=14)


def calls_and_results(fmt: str, body: dict[str, Any]) -> tuple[list[str], list[str]]:
    """The call ids and answered ids of a rendered body, in order."""
    calls: list[str] = []
    results: list[str] = []
    if fmt == "openai_chat":
        for m in body["messages"]:
            calls += [c["id"] for c in m.get("tool_calls") or ()]
            if m["role"] == "tool":
                results.append(m["tool_call_id"])
    elif fmt == "openai_responses":
        for item in body["input"]:
            if item["type"] == "function_call":
                calls.append(item["call_id"])
            elif item["type"] == "function_call_output":
                results.append(item["call_id"])
    elif fmt == "anthropic":
        for m in body["messages"]:
            for b in m["content"]:
                if b["type"] == "tool_use":
                    calls.append(b["id"])
                elif b["type"] == "tool_result":
                    results.append(b["tool_use_id"])
    else:  # Gemini pairs by name and order: one functionResponse per functionCall
        for c in body["contents"]:
            calls += [p["functionCall"]["name"] for p in c["parts"] if "functionCall" in p]
            results += [p["functionResponse"]["name"] for p in c["parts"] if "functionResponse" in p]
    return calls, results


def assert_anthropic_rules(body: dict[str, Any]) -> None:
    """The Messages API's own rules (beyond pairing)."""
    assert isinstance(body.get("max_tokens"), int) and body["max_tokens"] > 0
    for m in body["messages"]:
        for b in m["content"]:
            for key in ("id", "tool_use_id"):
                if b["type"] in ("tool_use", "tool_result") and key in b:
                    assert re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", b[key]), b[key]
    messages = body["messages"]
    assert messages, "messages must not be empty"
    assert messages[0]["role"] == "user"
    for before, after in itertools.pairwise(messages):
        assert before["role"] != after["role"], "roles must alternate"
    for m in messages:
        assert m["content"], "no empty turn"
        for b in m["content"]:
            if b["type"] == "text":
                assert b["text"].strip(), "no whitespace-only text block"
            if b["type"] == "tool_result" and isinstance(b.get("content"), str):
                assert b["content"].strip()
        kinds = [b["type"] for b in m["content"]]
        if m["role"] == "assistant":  # extended thinking: thinking before any text or tool use
            answered = [n for n, k in enumerate(kinds) if k in ("text", "tool_use")]
            thought = [n for n, k in enumerate(kinds) if k in ("thinking", "redacted_thinking")]
            assert not answered or not thought or max(thought) < min(answered), kinds
        if "tool_result" in kinds:  # results come first in their turn
            assert kinds[: kinds.count("tool_result")] == ["tool_result"] * kinds.count("tool_result")
    for i, m in enumerate(messages):  # each tool_use answered in the very next turn
        uses = [b["id"] for b in m["content"] if b["type"] == "tool_use"]
        if uses:
            nxt = messages[i + 1]["content"] if i + 1 < len(messages) else []
            assert sorted(b.get("tool_use_id") for b in nxt if b["type"] == "tool_result") == sorted(uses)
    last = messages[-1]
    if last["role"] == "assistant" and last["content"][-1]["type"] == "text":
        assert last["content"][-1]["text"] == last["content"][-1]["text"].rstrip()


def assert_responses_rules(body: dict[str, Any]) -> None:
    """A ``reasoning`` item goes back with the output it led to: a model output item follows it, not input."""
    items = body["input"]
    for n, item in enumerate(items):
        if item.get("type") == "reasoning":
            after = next((i for i in items[n + 1 :] if i.get("type") != "reasoning"), None)
            assert after is not None, "a reasoning item without the output it led to"
            kind = str(after.get("type"))
            assert not kind.endswith("_output") and after.get("role", "assistant") == "assistant", items


def assert_valid(fmt: str, body: dict[str, Any]) -> None:
    calls, results = calls_and_results(fmt, body)
    assert Counter(calls) == Counter(results), "each call exactly one result and the reverse"
    if fmt != "gemini":
        assert len(set(calls)) == len(calls), "call ids are unique in the request"
    if fmt == "anthropic":
        assert_anthropic_rules(body)
    if fmt == "openai_responses":
        assert_responses_rules(body)
    if fmt == "gemini":
        assert body["contents"] and body["contents"][0]["role"] == "user"


@settings(max_examples=300, deadline=None)
@given(sessions)
def test_every_rendered_body_is_provider_valid(messages: list[Message]) -> None:
    ctx = ModelContext(model="m", system="sys", messages=tuple(messages))
    for fmt in FORMATS:
        assert_valid(fmt, get_codec(fmt).render_request(ctx, max_tokens=1000))


@settings(max_examples=60, deadline=None)
@given(sessions)
def test_sessions_built_by_the_manager_are_provider_valid(messages: list[Message]) -> None:
    """``append`` + ``build`` get the same rules: reused ids renamed, nothing lost, every rule kept."""
    store = MemoryStore()
    store.create_session("s")
    events: list[Any] = []
    for m in messages:
        if m.role == "user":
            events.append(UserMessage(text=m.text))
        elif m.role == "assistant":
            events.append(AssistantMessage(text=m.text, tool_calls=m.tool_calls, opaque=m.opaque, thinking=m.thinking))
        elif m.role == "tool":
            events.append(ToolResult(call_id=m.tool_call_id, tool_name="t", output=m.text))
    if events:
        store.append("s", events, expected_last_seq=0)
    ctx = ContextManager(store, counter=HeuristicCounter()).build("s", model="gpt-4o")
    for fmt in FORMATS:
        assert_valid(fmt, get_codec(fmt).render_request(ctx))


def test_a_reused_id_reaches_every_body_once_with_its_own_result() -> None:
    store = MemoryStore()
    store.create_session("s")
    store.append(
        "s",
        [
            UserMessage(text="go"),
            AssistantMessage(tool_calls=(ToolCall(id="c1", name="bash"),)),
            ToolResult(call_id="c1", tool_name="bash", output="first"),
            AssistantMessage(tool_calls=(ToolCall(id="c1", name="bash"), ToolCall(id="c1", name="read"))),
            ToolResult(call_id="c1", tool_name="bash", output="second"),
            ToolResult(call_id="c1", tool_name="read", output="third"),
            UserMessage(text="and?"),
        ],
        expected_last_seq=0,
    )
    ctx = ContextManager(store, counter=HeuristicCounter()).build("s", model="gpt-4o")
    chat = get_codec("openai_chat").render_request(ctx)
    answers = {m["tool_call_id"]: m["content"] for m in chat["messages"] if m["role"] == "tool"}
    assert answers == {"c1": "first", "c1_dup2": "second", "c1_dup3": "third"}
    for fmt in FORMATS:
        assert_valid(fmt, get_codec(fmt).render_request(ctx))
