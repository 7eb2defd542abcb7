"""The tool registry: schemas, their token cost, capability groups and exposure per task phase.

Tool schemas sit in the request right after the system prompt, so they cost tokens on every call and
any change to them breaks the cached prefix. The registry keeps the exposed list in registration order
(never in dict or set iteration order), exposes only the groups a task phase needs (dynamic
tool exposure, ``docs/behaviours.md``, row 34), and loads the rest lazily through a catalog tool that returns a
schema on demand. A change of the exposed set is a window event (:class:`~contextwarden.log.events.ToolSetChange`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ._deprecated import deprecated_names
from .context import ToolDefinition
from .errors import UsageError
from .log.events import ToolSetChange

if TYPE_CHECKING:
    from .tokens import TokenCounter

GROUP_CORE = "core"
"""Tools exposed in every phase: the catalog and the retrieval tools the builder relies on."""
GROUP_EXPLORE = "explore"
"""Read-only exploration: read, grep, glob, list."""
GROUP_EDIT = "edit"
"""Changing files: write, edit, apply a patch."""
GROUP_EXECUTE = "execute"
"""Running commands and tests."""
GROUP_RELEASE = "release"
"""Side effects outside the workspace: deploy, publish, send."""

DEFAULT_PHASES: Mapping[str, tuple[str, ...]] = {
    "explore": (GROUP_EXPLORE,),
    "edit": (GROUP_EXPLORE, GROUP_EDIT),
    "test": (GROUP_EXPLORE, GROUP_EDIT, GROUP_EXECUTE),
    "release": (GROUP_EXPLORE, GROUP_EDIT, GROUP_EXECUTE, GROUP_RELEASE),
}
"""Which capability groups each task phase exposes (the core group is always exposed)."""

_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def openai_schema(tool: ToolDefinition) -> dict[str, Any]:
    """The tool in the OpenAI Chat Completions ``tools`` format (what the registry measures and describes)."""
    return {
        "type": "function",
        "function": {"name": tool.name, "description": tool.description, "parameters": tool.parameters},
    }


def _tool_spec(name: str, description: str, parameters: dict[str, Any], group: str = "default") -> ToolDefinition:
    return ToolDefinition(name=name, description=description, parameters=parameters, group=group)


__getattr__ = deprecated_names(
    __name__, {"ToolSpec": (lambda: _tool_spec, "contextwarden.ToolDefinition (with group=...)")}
)


TOOL_CATALOG = ToolDefinition(
    name="tool_catalog",
    description="Look up a tool that is not currently offered to you. Call it with a tool name to get that tool's "
    "full definition; call it with an empty name to list every available tool with its group and purpose.",
    parameters={
        "type": "object",
        "properties": {"name": {"type": "string", "description": "The tool's name, or empty to list all."}},
        "required": ["name"],
    },
    group=GROUP_CORE,
)
"""The lazy-loading entry point; its handler is :meth:`ToolRegistry.describe_tool`."""

READ_RANGE = ToolDefinition(
    name="read_range",
    description="Read lines of a stored artifact (a tool output or file version that was truncated or removed from "
    "your context). Line numbers start at 1; the end line is included.",
    parameters={
        "type": "object",
        "properties": {
            "artifact_id": {"type": "string", "description": "The id named in the truncation marker."},
            "start_line": {"type": "integer", "minimum": 1},
            "end_line": {"type": "integer", "minimum": 1},
        },
        "required": ["artifact_id", "start_line", "end_line"],
    },
    group=GROUP_CORE,
)
"""Windowed reads of stored artifacts; the builder serves it."""

RECALL = ToolDefinition(
    name="recall",
    description="Search this session's earlier history, including parts no longer in your context, and return the "
    "best matching passages with their ids.",
    parameters={
        "type": "object",
        "properties": {"query": {"type": "string", "description": "What to look for."}},
        "required": ["query"],
    },
    group=GROUP_CORE,
)
"""Retrieval over the full session log; the builder serves it."""

BUILTIN_TOOLS: tuple[ToolDefinition, ...] = (TOOL_CATALOG, READ_RANGE, RECALL)
"""The tools every registry starts with unless told otherwise."""


def render_tools_json(schemas: Sequence[Mapping[str, Any]]) -> str:
    """Render a tools list canonically: sorted keys, no spaces, non-ASCII kept.

    Token costs are measured on this text, so the same tools always cost the same.
    """
    return json.dumps(list(schemas), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


class ToolRegistry:
    """Registered tools, their groups, and which of them each task phase exposes."""

    def __init__(
        self,
        *,
        phases: Mapping[str, Sequence[str]] = DEFAULT_PHASES,
        include_builtins: bool = True,
    ) -> None:
        self._tools: dict[str, ToolDefinition] = {}
        self._order: dict[str, int] = {}
        self._phases: dict[str, tuple[str, ...]] = {k: tuple(v) for k, v in phases.items()}
        if include_builtins:
            for spec in BUILTIN_TOOLS:
                self.register(spec)

    def register(self, spec: ToolDefinition) -> ToolDefinition:
        """Add a tool.

        Raises :class:`UsageError` on a bad or duplicate name or a schema that is not a JSON object schema.
        """
        if not _NAME.fullmatch(spec.name):
            raise UsageError(f"tool name {spec.name!r} must be 1-64 letters, digits, '_' or '-'")
        if spec.name in self._tools:
            raise UsageError(f"tool {spec.name!r} is already registered")
        if not isinstance(spec.parameters, dict) or spec.parameters.get("type") != "object":
            raise UsageError(f"tool {spec.name!r}: parameters must be a JSON schema with type 'object'")
        try:
            render_tools_json([openai_schema(spec)])
        except (TypeError, ValueError) as exc:
            raise UsageError(f"tool {spec.name!r}: schema is not JSON-serialisable ({exc})") from None
        self._order[spec.name] = len(self._order)
        self._tools[spec.name] = spec
        return spec

    def get(self, name: str) -> ToolDefinition:
        """Return the tool registered under ``name``; raises :class:`UsageError` when there is none."""
        try:
            return self._tools[name]
        except KeyError:
            raise UsageError(f"no tool {name!r} is registered; known tools: {list(self._tools)}") from None

    def all(self) -> tuple[ToolDefinition, ...]:
        """Every registered tool, in registration order."""
        return tuple(self._tools.values())

    def ordered(self, names: Iterable[str]) -> tuple[str, ...]:
        """``names`` without duplicates, in registration order, whatever order they came in.

        Raises :class:`UsageError` for an unknown name.
        """
        unique = set(names)
        for name in unique:
            self.get(name)
        return tuple(sorted(unique, key=self._order.__getitem__))

    def schemas(self, names: Iterable[str]) -> list[dict[str, Any]]:
        """Return the OpenAI ``tools`` list for ``names``, in the stable order."""
        return [openai_schema(self._tools[n]) for n in self.ordered(names)]

    def schema_tokens(self, names: Iterable[str], counter: TokenCounter) -> int:
        """Token cost of exposing ``names``: the OpenAI tools JSON (sorted keys) counted by ``counter``."""
        ordered = self.ordered(names)
        if not ordered:
            return 0
        return counter.count(render_tools_json(self.schemas(ordered)))

    def phases(self) -> tuple[str, ...]:
        """Return the task phases this registry knows."""
        return tuple(self._phases)

    def exposure(self, phase: str) -> tuple[str, ...]:
        """Return the tools a phase exposes: the core group plus the phase's groups, in stable order."""
        try:
            groups = {GROUP_CORE, *self._phases[phase]}
        except KeyError:
            raise UsageError(f"unknown task phase {phase!r}; known phases: {list(self._phases)}") from None
        return tuple(name for name, spec in self._tools.items() if spec.group in groups)

    def describe_tool(self, name: str) -> dict[str, Any]:
        """Answer :data:`TOOL_CATALOG`: a tool's schema, or the list of tools for an empty name.

        The answer goes to the model, so an unknown name returns an ``error`` entry with the known
        names instead of raising.
        """
        if not name:
            return {
                "tools": [
                    {"name": s.name, "group": s.group, "description": s.description.split("\n", 1)[0]}
                    for s in self._tools.values()
                ]
            }
        spec = self._tools.get(name)
        if spec is None:
            return {"error": f"no tool named {name!r}", "available": list(self._tools)}
        return openai_schema(spec)

    def expose(self, current: Iterable[str], *names: str) -> tuple[str, ...]:
        """Return ``current`` plus ``names`` (for example a tool the model looked up), in stable order."""
        return self.ordered([*current, *names])

    def exposed_set_change(self, old: Sequence[str], new: Iterable[str], *, reason: str = "") -> ToolSetChange | None:
        """Return the window event that switches the exposed tools from ``old`` to ``new``.

        ``None`` when the request would not change.

        ``old`` is compared as sent, so an old list in another order than the stable one counts as a
        change (the rendered tools differ).
        """
        target = self.ordered(new)
        if tuple(old) == target:
            return None
        return ToolSetChange(exposed=target, reason=reason)
