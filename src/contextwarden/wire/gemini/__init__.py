"""The Gemini ``generateContent`` codec: request and response bodies, streamed (``alt=sse``) or not."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...context import ModelContext
from .._messages import request_body
from .._types import ParsedRequest, ParsedResponse, RawSpan, WireFormat, parsed_request
from .render import render_gemini
from .request import parse_contents, parse_system, parse_tools
from .response import parse_gemini_response
from .stream import GeminiStream

__all__ = ["GeminiCodec", "parse_gemini_response", "render_gemini"]

_OWN_FIELDS = frozenset({"systemInstruction", "contents", "tools"})


class GeminiCodec:
    """Gemini both ways.

    The output limit is ``generationConfig.maxOutputTokens``; the rest of ``generationConfig`` stays
    in ``extra``.
    """

    format: WireFormat = "gemini"

    def parse_request(self, body: Mapping[str, Any]) -> ParsedRequest:
        """Read a ``generateContent`` request body."""
        body = request_body(body)
        spans: list[RawSpan] = []
        tool_spans: list[RawSpan] = []
        config = body.get("generationConfig")
        limit = config.get("maxOutputTokens") if isinstance(config, Mapping) else None
        parsed = parsed_request(
            "gemini",
            body,
            system=parse_system(body.get("systemInstruction"), spans),
            messages=parse_contents(body.get("contents"), spans),
            tools=parse_tools(body.get("tools"), tool_spans),
            own_fields=_OWN_FIELDS,
            spans=spans,
            tool_spans=tool_spans,
            max_tokens=limit,
        )
        if isinstance(config, Mapping) and parsed.max_tokens is not None:
            rest = {k: v for k, v in config.items() if k != "maxOutputTokens"}
            extra = {k: v for k, v in parsed.extra.items() if k != "generationConfig"}
            if rest:
                extra["generationConfig"] = rest
            parsed = ParsedRequest(**{**parsed.__dict__, "extra": extra})
        return parsed

    def render_request(
        self,
        ctx: ModelContext,
        *,
        model: str | None = None,
        max_tokens: int | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """A complete ``generateContent`` request body (see :func:`render_gemini`)."""
        return render_gemini(ctx, model=model, max_tokens=max_tokens, extra=extra)

    def parse_response(self, body: Mapping[str, Any]) -> ParsedResponse:
        """Read a ``generateContent`` response body."""
        return parse_gemini_response(body)

    def stream_accumulator(self) -> GeminiStream:
        """A fresh accumulator for one streamed Gemini response."""
        return GeminiStream()
