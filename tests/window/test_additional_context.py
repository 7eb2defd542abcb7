"""Host-injected context goes through the fragment registry and its 1,000-token cap."""

from __future__ import annotations

import random

import pytest

from contextwarden import AssistantMessage, ContextManager, Instruction, UserMessage, open_store, render
from contextwarden.errors import ContextWardenError
from contextwarden.governance.session import lint_session
from contextwarden.tokens import best_counter


def _text(words: int) -> str:
    rng = random.Random(7)
    return " ".join(f"{rng.choice(['file', 'line', 'error', 'path'])}{rng.randrange(10_000)}" for _ in range(words))


def test_host_context_is_a_registered_fragment_held_to_1000_tokens() -> None:
    store = open_store("memory://")
    counter = best_counter()
    session = ContextManager(store, counter=counter).session("s", model="gpt-4o", create=True)
    session.append(UserMessage(text="Why does the build fail?"))
    big = _text(4_000)
    assert counter.count(big) > 9_000
    event = session.add_context(big)
    assert isinstance(event, Instruction) and event.role == "developer"
    assert event.text.startswith("<additional_context>") and event.text.endswith("</additional_context>")
    assert counter.count(event.text) <= 1_000
    sent = render(session.build(), "openai_chat")["messages"][-1]
    assert sent["role"] in ("developer", "system") and sent["content"] == event.text
    session.append(AssistantMessage(text="The path is wrong."))
    assert lint_session(store, "s", counter=counter).ok


def test_small_host_context_is_kept_whole_and_an_unknown_type_is_an_error() -> None:
    session = ContextManager(open_store("memory://")).session("s", model="gpt-4o", create=True)
    assert "cwd is /repo" in session.add_context("cwd is /repo").text
    with pytest.raises(ContextWardenError, match="git_status"):
        session.add_context("M a.py", fragment="git_status")
