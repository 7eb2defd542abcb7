"""The small public API of contextwarden.wire: each argument changes the body, bad input is one clear error."""

from __future__ import annotations

import pytest

from contextwarden.context import Message, ModelContext
from contextwarden.errors import ImportFormatError, MalformedResponse, UsageError
from contextwarden.wire import FORMATS, detect_format, get_codec

CTX = ModelContext(model="claude-sonnet-4-5", system="sys", messages=(Message(role="user", text="hi"),))
LIMIT_PATH = {
    "anthropic": ("max_tokens",),
    "openai_chat": ("max_completion_tokens",),
    "openai_responses": ("max_output_tokens",),
    "gemini": ("generationConfig", "maxOutputTokens"),
}


def _get(body: dict[str, object], path: tuple[str, ...]) -> object:
    value: object = body
    for key in path:
        assert isinstance(value, dict)
        value = value.get(key)
    return value


@pytest.mark.parametrize("fmt", FORMATS)
def test_model_max_tokens_and_extra_each_reach_the_body(fmt: str) -> None:
    codec = get_codec(fmt)
    plain = codec.render_request(CTX)
    if fmt != "gemini":  # Gemini names the model in the URL
        assert plain["model"] == "claude-sonnet-4-5"
        assert codec.render_request(CTX, model="other")["model"] == "other"
    assert _get(codec.render_request(CTX, max_tokens=123), LIMIT_PATH[fmt]) == 123
    extra = {"generationConfig": {"temperature": 0.5}} if fmt == "gemini" else {"temperature": 0.5}
    with_extra = codec.render_request(CTX, max_tokens=7, extra=extra)
    assert _get(with_extra, LIMIT_PATH[fmt]) == 7
    assert (with_extra["generationConfig"]["temperature"] if fmt == "gemini" else with_extra["temperature"]) == 0.5
    # Settings parsed from a body go back with it.
    parsed = codec.parse_request(with_extra)
    assert parsed.max_tokens == 7 and parsed.extra == extra


def test_anthropic_always_names_an_output_limit() -> None:
    # The Messages API requires max_tokens: without one, the model profile's limit is sent.
    assert get_codec("anthropic").render_request(CTX)["max_tokens"] > 0
    assert "max_completion_tokens" not in get_codec("openai_chat").render_request(CTX)


@pytest.mark.parametrize("fmt", FORMATS)
def test_extra_may_not_overwrite_what_the_context_decides(fmt: str) -> None:
    owned = {"anthropic": "messages", "openai_chat": "messages", "openai_responses": "input", "gemini": "contents"}
    with pytest.raises(UsageError, match=owned[fmt]):
        get_codec(fmt).render_request(CTX, extra={owned[fmt]: []})


def test_unknown_format_and_bad_bodies_are_one_clear_error() -> None:
    with pytest.raises(UsageError, match="known: anthropic, openai_chat, openai_responses, gemini"):
        get_codec("bedrock")
    assert detect_format({"prompt": "hi"}) is None
    for fmt, body in [
        ("anthropic", {"messages": "nope"}),
        ("openai_chat", {"messages": [1]}),
        ("openai_responses", {"input": 3}),
        ("gemini", {"contents": [{"role": "user"}]}),
    ]:
        with pytest.raises(ImportFormatError):
            get_codec(fmt).parse_request(body)
    with pytest.raises(ImportFormatError, match="not a JSON object"):
        get_codec("anthropic").parse_request([])  # type: ignore[arg-type]
    with pytest.raises(MalformedResponse):
        get_codec("openai_chat").parse_response({"choices": []})


def test_detect_format_tells_the_four_apart() -> None:
    assert detect_format({"contents": []}) == "gemini"
    assert detect_format({"input": "hi"}) == "openai_responses"
    assert detect_format({"messages": [], "system": "s"}) == "anthropic"
    assert detect_format({"messages": [{"role": "user", "content": "hi"}]}) == "openai_chat"
