"""Old public names stay importable for one release, each with a DeprecationWarning naming its successor."""

from __future__ import annotations

import importlib

import pytest

from contextwarden.context import ToolDefinition


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
