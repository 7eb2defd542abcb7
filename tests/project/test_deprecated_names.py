"""Old public names stay importable for one release, each with a DeprecationWarning naming its successor."""

from __future__ import annotations

import importlib

import pytest

from contextwarden.context import Message, ModelContext, ToolDefinition
from contextwarden.log.events import UsageReport


def _old(module: str, name: str) -> object:
    with pytest.warns(DeprecationWarning, match=rf"{module}\.{name} is deprecated.*use "):
        return getattr(importlib.import_module(module), name)


def test_tool_spec_builds_a_tool_definition_with_the_old_positional_arguments() -> None:
    tool_spec = _old("contextwarden.tools", "ToolSpec")
    made = tool_spec("grep", "Search.", {"type": "object"}, "explore")  # type: ignore[operator]
    assert made == ToolDefinition(name="grep", description="Search.", parameters={"type": "object"}, group="explore")
    assert tool_spec("t", "d", {"type": "object"}).group == "default"  # type: ignore[operator]


def test_tool_like_is_tool_definition() -> None:
    assert _old("contextwarden.plan.exposure", "ToolLike") is ToolDefinition


def test_an_unknown_name_is_still_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        importlib.import_module("contextwarden.tools").Nope  # noqa: B018


@pytest.mark.parametrize("module", ["contextwarden.chat", "contextwarden.providers"])
@pytest.mark.parametrize("name", ["ChatMessage", "ChatRequest", "ChatResponse", "Usage", "Role"])
def test_the_old_chat_types_are_importable_from_where_they_were(module: str, name: str) -> None:
    from contextwarden import _chat_compat

    assert _old(module, name) is getattr(_chat_compat, name)


def test_an_old_chat_request_still_converts_to_the_context_a_provider_takes() -> None:
    chat_message = _old("contextwarden.chat", "ChatMessage")
    chat_request = _old("contextwarden.chat", "ChatRequest")
    request_context = _old("contextwarden.chat", "request_context")
    request = chat_request(  # type: ignore[operator]
        messages=(chat_message("system", "rules"), chat_message("user", "hi")),  # type: ignore[operator]
        model="m",
        max_tokens=8,
        tools=({"type": "function", "function": {"name": "t", "parameters": {"type": "object"}}},),
    )
    context = request_context(request)  # type: ignore[operator]
    assert isinstance(context, ModelContext)
    assert [m.text for m in context.messages] == ["rules", "hi"] and context.tools[0].name == "t"


def test_usage_of_reads_a_usage_report() -> None:
    usage_of = _old("contextwarden.chat", "usage_of")
    usage = usage_of(UsageReport(input_tokens=5, output_tokens=2))  # type: ignore[operator]
    assert (usage.input_tokens, usage.output_tokens) == (5, 2)


def test_to_chat_request_still_maps_a_built_context() -> None:
    to_chat_request = _old("contextwarden.loop", "to_chat_request")
    context = ModelContext(model="m", system="s", messages=(Message(role="user", text="hi"),))
    request = to_chat_request(context, model="m", max_tokens=100)  # type: ignore[operator]
    assert [(m.role, m.content) for m in request.messages] == [("system", "s"), ("user", "hi")]
    assert request.max_tokens == 100
