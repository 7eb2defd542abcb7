"""Provider request bodies are rendered by the wire codecs, so they obey the one pairing rule."""

from __future__ import annotations

from contextwarden.context import Message, ModelContext
from contextwarden.log.events import ToolCall
from contextwarden.providers import CallOptions
from contextwarden.providers.anthropic import render_request as render_anthropic_request
from contextwarden.providers.openai_compat import render_request as render_chat_request
from contextwarden.wire import ABORTED_TEXT, get_codec

# The last call has no result, and the id c1 is used twice: both invalid as sent.
REQUEST = ModelContext(
    model="m",
    system="rules",
    messages=(
        Message(role="user", text="go"),
        Message(role="assistant", tool_calls=(ToolCall(id="c1", name="read"),)),
        Message(role="tool", text="A", tool_call_id="c1"),
        Message(role="assistant", tool_calls=(ToolCall(id="c1", name="read"), ToolCall(id="c2", name="run"))),
    ),
)
OPTIONS = CallOptions(max_tokens=64)


def test_chat_and_anthropic_bodies_pair_every_call_with_one_result() -> None:
    for fmt, body in (
        ("openai_chat", render_chat_request(REQUEST, OPTIONS)),
        ("anthropic", render_anthropic_request(REQUEST, OPTIONS)),
    ):
        parsed = get_codec(fmt).parse_request(body)
        calls = [c.id for e in parsed.events for c in getattr(e, "tool_calls", ())]
        results = [e.call_id for e in parsed.events if hasattr(e, "call_id")]
        assert len(calls) == len(set(calls)) == 3, (fmt, calls)  # the reused id was renamed
        assert sorted(results) == sorted(calls), fmt
        assert any(getattr(e, "output", "") == ABORTED_TEXT for e in parsed.events), fmt


def test_max_tokens_field_and_settings_reach_the_chat_body() -> None:
    assert render_chat_request(REQUEST, OPTIONS)["max_tokens"] == 64
    assert "max_tokens" not in render_chat_request(REQUEST)  # no limit asked: the server's default
    assert render_anthropic_request(REQUEST)["max_tokens"] > 0  # Anthropic requires one: the profile's
    assert render_chat_request(REQUEST, CallOptions(model="served-name"))["model"] == "served-name"
    body = render_chat_request(REQUEST, OPTIONS, max_tokens_field="max_completion_tokens")
    assert body["max_completion_tokens"] == 64 and "max_tokens" not in body and body["stream"] is False
