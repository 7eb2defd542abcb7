"""The Anthropic Messages codec (``POST /v1/messages``): request and response bodies, streamed or not."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...context import ModelContext
from .._messages import request_body
from .._types import ParsedRequest, ParsedResponse, RawSpan, WireFormat, parsed_request
from .render import MAX_CACHE_BREAKPOINTS, render_anthropic
from .request import parse_messages, parse_system, parse_tools
from .response import parse_anthropic_response
from .stream import AnthropicStream

__all__ = ["MAX_CACHE_BREAKPOINTS", "AnthropicCodec", "parse_anthropic_response", "render_anthropic"]

_OWN_FIELDS = frozenset({"model", "system", "messages", "tools", "max_tokens"})


class AnthropicCodec:
    """Anthropic Messages both ways; ``render_request`` also takes ``cache_ttl`` (``"5m"`` or ``"1h"``)."""

    format: WireFormat = "anthropic"

    def parse_request(self, body: Mapping[str, Any]) -> ParsedRequest:
        """Read a Messages request body."""
        body = request_body(body)
        spans: list[RawSpan] = []
        tool_spans: list[RawSpan] = []
        return parsed_request(
            "anthropic",
            body,
            system=parse_system(body.get("system"), spans),
            messages=parse_messages(body.get("messages"), spans),
            tools=parse_tools(body.get("tools"), tool_spans),
            own_fields=_OWN_FIELDS,
            spans=spans,
            tool_spans=tool_spans,
            max_tokens=body.get("max_tokens"),
        )

    def render_request(
        self,
        ctx: ModelContext,
        *,
        model: str | None = None,
        max_tokens: int | None = None,
        extra: Mapping[str, Any] | None = None,
        cache_ttl: str = "5m",
    ) -> dict[str, Any]:
        """A complete Messages request body (see :func:`render_anthropic`)."""
        return render_anthropic(ctx, model=model, max_tokens=max_tokens, extra=extra, cache_ttl=cache_ttl)

    def parse_response(self, body: Mapping[str, Any]) -> ParsedResponse:
        """Read a Messages response body."""
        return parse_anthropic_response(body)

    def stream_accumulator(self) -> AnthropicStream:
        """A fresh accumulator for one streamed Messages response."""
        return AnthropicStream()
