"""The one codec shape: a wire format is its readers and its renderer, put together the same way for all four.

A format package supplies what differs (how its system prompt, messages, tools and output limit
sit in a body; its renderer, response parser and stream accumulator); :class:`Codec` does the rest.
:func:`read_tools` is the one walk over a ``tools`` list, with a per-format reader for one entry.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ..context import Message, ModelContext, ToolDefinition
from ..log.events import Instruction
from ._common import dumps_compact
from ._messages import request_body
from ._types import ParsedRequest, ParsedResponse, RawSpan, StreamAccumulator, WireFormat, parsed_request

ToolEntry = tuple[str, Mapping[str, Any], ToolDefinition]
"""One definition read from a ``tools`` entry: its path below the entry (``""`` for the entry itself),
the JSON value it was read from, and the definition."""


class Renderer(Protocol):
    """A format's renderer: a complete, sendable request body for ``ctx``."""

    def __call__(
        self,
        ctx: ModelContext,
        *,
        model: str | None = None,
        max_tokens: int | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """``model`` defaults to ``ctx.model``; ``max_tokens`` caps the answer; ``extra`` adds settings."""


@dataclass(frozen=True, kw_only=True)
class Codec:
    """One provider wire format, both ways."""

    format: WireFormat
    """The format this codec speaks."""
    own_fields: frozenset[str]
    """The top-level request fields the codec reads itself; every other one goes to ``ParsedRequest.extra``."""
    read_system: Callable[[Mapping[str, Any], list[RawSpan]], tuple[Instruction, ...]]
    """The instructions of the body's own system field, recording where each came from."""
    read_messages: Callable[[Mapping[str, Any], list[RawSpan]], list[Message]]
    """The body's conversation as request messages (raises :class:`~contextwarden.errors.ImportFormatError`)."""
    read_tool: Callable[[Mapping[str, Any]], Sequence[ToolEntry]]
    """The definitions of one ``tools`` entry (see :func:`read_tools`)."""
    read_limit: Callable[[Mapping[str, Any]], tuple[object, Mapping[str, Any]]]
    """The output limit the body asks for, and the body whose other fields become ``extra`` (the body
    itself, unless the limit sits inside a settings object that keeps its other settings)."""
    render_request: Renderer
    """A complete, sendable request body for a context; ``model`` defaults to ``ctx.model``."""
    parse_response: Callable[[Mapping[str, Any]], ParsedResponse]
    """Read a non-streamed response body (raises :class:`~contextwarden.errors.MalformedResponse`)."""
    stream_accumulator: Callable[[], StreamAccumulator]
    """A fresh accumulator for one streamed response."""

    def parse_request(self, body: Mapping[str, Any]) -> ParsedRequest:
        """Read a request body into events (raises :class:`~contextwarden.errors.ImportFormatError`)."""
        body = request_body(body)
        spans: list[RawSpan] = []
        tool_spans: list[RawSpan] = []
        limit, fields = self.read_limit(body)
        return parsed_request(
            self.format,
            fields,
            system=self.read_system(body, spans),
            messages=self.read_messages(body, spans),
            tools=read_tools(body.get("tools"), tool_spans, self.read_tool),
            own_fields=self.own_fields,
            spans=spans,
            tool_spans=tool_spans,
            max_tokens=limit,
        )


def read_tools(
    tools: object, spans: list[RawSpan], read_tool: Callable[[Mapping[str, Any]], Sequence[ToolEntry]]
) -> tuple[ToolDefinition, ...]:
    """The definitions of a ``tools`` list, in order; ``spans`` gets where each came from.

    Entries that are not objects are passed over.
    """
    out: list[ToolDefinition] = []
    for index, tool in enumerate(tools if isinstance(tools, list) else ()):
        if not isinstance(tool, Mapping):
            continue
        for path, raw, definition in read_tool(tool):
            spans.append(RawSpan(f"tools[{index}]{path}", (raw,)))
            out.append(definition)
    return tuple(out)


def function_tool(spec: Mapping[str, Any], schema_key: str = "parameters") -> ToolDefinition:
    """A function tool's definition from its name, description and JSON schema (under ``schema_key``)."""
    schema = spec.get(schema_key)
    return ToolDefinition(
        name=str(spec.get("name", "")),
        description=str(spec.get("description", "")),
        parameters=dict(schema) if isinstance(schema, Mapping) else {},
    )


def provider_tool(name: object, fmt: str, raw: Mapping[str, Any]) -> ToolDefinition:
    """A provider's own tool (web search, code execution...), kept verbatim for its format only."""
    return ToolDefinition(name=str(name), description="", format=fmt, raw_json=dumps_compact(dict(raw)))


def top_level_limit(*names: str) -> Callable[[Mapping[str, Any]], tuple[object, Mapping[str, Any]]]:
    """A :attr:`Codec.read_limit` for a limit in a top-level field: the first of ``names`` present."""

    def read(body: Mapping[str, Any]) -> tuple[object, Mapping[str, Any]]:
        for name in names:
            if name in body:
                return body[name], body
        return None, body

    return read
