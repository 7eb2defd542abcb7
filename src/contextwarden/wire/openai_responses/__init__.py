"""The OpenAI Responses codec (``POST /v1/responses``): request and response bodies, streamed or not."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...context import ModelContext
from .._messages import request_body
from .._types import ParsedRequest, ParsedResponse, RawSpan, WireFormat, parsed_request
from .render import render_openai_responses
from .request import parse_input, parse_instructions, parse_tools
from .response import parse_openai_responses_response
from .stream import OpenAIResponsesStream

__all__ = ["OpenAIResponsesCodec", "parse_openai_responses_response", "render_openai_responses"]

_OWN_FIELDS = frozenset({"model", "instructions", "input", "tools", "max_output_tokens"})


class OpenAIResponsesCodec:
    """OpenAI Responses both ways (stateless requests: the whole conversation travels as ``input``)."""

    format: WireFormat = "openai_responses"

    def parse_request(self, body: Mapping[str, Any]) -> ParsedRequest:
        """Read a Responses request body."""
        body = request_body(body)
        spans: list[RawSpan] = []
        tool_spans: list[RawSpan] = []
        return parsed_request(
            "openai_responses",
            body,
            system=parse_instructions(body.get("instructions"), spans),
            messages=parse_input(body.get("input"), spans),
            tools=parse_tools(body.get("tools"), tool_spans),
            own_fields=_OWN_FIELDS,
            spans=spans,
            tool_spans=tool_spans,
            max_tokens=body.get("max_output_tokens"),
        )

    def render_request(
        self,
        ctx: ModelContext,
        *,
        model: str | None = None,
        max_tokens: int | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """A complete Responses request body (see :func:`render_openai_responses`)."""
        return render_openai_responses(ctx, model=model, max_tokens=max_tokens, extra=extra)

    def parse_response(self, body: Mapping[str, Any]) -> ParsedResponse:
        """Read a Responses response body."""
        return parse_openai_responses_response(body)

    def stream_accumulator(self) -> OpenAIResponsesStream:
        """A fresh accumulator for one streamed Responses response."""
        return OpenAIResponsesStream()
