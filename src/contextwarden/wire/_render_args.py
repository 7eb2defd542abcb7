"""The request-level fields every renderer adds the same way: tools, output limit, extra settings."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..context import ToolDefinition
from ..errors import UsageError
from ..models import get_profile
from ._common import own_tools

OPENING_TEXT = "[conversation start]"
"""The user text sent first when a conversation would otherwise start with the assistant or be empty
(Anthropic and Gemini require the first turn to be the user's)."""


def profile_max_tokens(model: str) -> int:
    """The output limit of the model profile named ``model`` (the generic profile's for an unknown name)."""
    return get_profile(model).max_output_tokens


_EMPTY_SCHEMA: dict[str, object] = {"type": "object", "properties": {}}


def function_spec(tool: ToolDefinition, *, schema_key: str = "parameters", empty_schema: bool = True) -> dict[str, Any]:
    """``{"name", "description"?, schema_key}`` of a function tool (no description when it has none).

    A tool without parameters gets an empty object schema, or none when ``empty_schema`` is false.
    """
    spec: dict[str, Any] = {"name": tool.name}
    if tool.description:
        spec["description"] = tool.description
    if tool.parameters or empty_schema:
        spec[schema_key] = tool.parameters or _EMPTY_SCHEMA
    return spec


def tool_list(
    tools: tuple[ToolDefinition, ...], fmt: str, function: Callable[[ToolDefinition], dict[str, Any]]
) -> list[dict[str, Any]]:
    """The rendered ``tools``: each function tool as ``function`` spells it, then the provider tools of ``fmt``."""
    functions, provided = own_tools(tools, fmt)
    return [function(tool) for tool in functions] + provided


def finish(
    body: dict[str, Any],
    extra: Mapping[str, Any] | None,
    *,
    protected: frozenset[str],
    tools: list[dict[str, Any]] | None = None,
    limit: tuple[str, int | None] = ("", None),
) -> dict[str, Any]:
    """Complete a rendered body: its ``tools``, output limit and ``extra`` settings, in that order.

    ``tools`` is left out when empty (the APIs reject an empty list); ``limit`` is the limit's field and
    value, left out when the value is ``None``. A key the renderer owns (``protected``) in ``extra`` is
    an error.
    """
    if tools:
        body["tools"] = tools
    field, value = limit
    if value is not None:
        body[field] = value
    if not extra:
        return body
    clash = sorted(set(extra) & protected)
    if clash:
        raise UsageError(f"extra settings may not set {', '.join(clash)}: the renderer writes them from the context")
    body.update(extra)
    return body
