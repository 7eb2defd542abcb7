"""No item passes 10,000 tokens: an assistant message's text, thinking and calls are held together."""

from __future__ import annotations

import random

from contextwarden import AssistantMessage, ContextManager, ToolCall, ToolResult, UserMessage, open_store
from contextwarden.governance.session import lint_session
from contextwarden.tokens import best_counter

CAP = 10_000


def _words(n: int, seed: int) -> str:
    rng = random.Random(seed)
    return " ".join(f"{rng.choice(['alpha', 'beta', 'gamma', 'delta'])}{rng.randrange(1000)}" for _ in range(n))


def test_long_text_and_long_arguments_together_stay_under_the_item_cap() -> None:
    store = open_store("memory://")
    manager = ContextManager(store, counter=best_counter())
    session = manager.session("s", model="gpt-4o", create=True)
    session.append(UserMessage(text="Write the module."))
    calls = tuple(
        ToolCall(id=f"c{i}", name="write_file", arguments={"path": f"m{i}.py", "content": _words(1_600, i)})
        for i in range(4)
    )
    session.append(AssistantMessage(text=_words(6_000, 99), tool_calls=calls))
    session.append(*(ToolResult(call_id=c.id, tool_name="write_file", output="ok") for c in calls))
    context = session.build()
    biggest = max(m.tokens for m in context.messages)
    assert biggest <= CAP, biggest
    assistant = next(m for m in context.messages if m.role == "assistant")
    assert [c.id for c in assistant.tool_calls] == ["c0", "c1", "c2", "c3"]  # every call kept, arguments cut
    assert all("characters of this argument omitted" in str(c.arguments["content"]) for c in assistant.tool_calls)
    reasons = [d.reason for d in context.decisions if d.action == "truncate"]
    assert any("oversized arguments of call c0" in r for r in reasons)
    assert not [f for f in lint_session(store, "s").findings if f.rule == "R4"]


def test_a_long_text_beside_small_calls_keeps_its_share() -> None:
    manager = ContextManager(open_store("memory://"), counter=best_counter())
    session = manager.session("s", model="gpt-4o", create=True)
    session.append(UserMessage(text="Explain."))
    call = ToolCall(id="c", name="read_file", arguments={"path": "a.py"})
    session.append(AssistantMessage(text=_words(20_000, 1), tool_calls=(call,)))
    session.append(ToolResult(call_id="c", tool_name="read_file", output="x = 1"))
    assistant = next(m for m in session.build().messages if m.role == "assistant")
    assert 9_000 < assistant.tokens <= CAP
    assert assistant.tool_calls[0].arguments == {"path": "a.py"}
