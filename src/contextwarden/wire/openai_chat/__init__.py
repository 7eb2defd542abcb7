"""The OpenAI Chat Completions codec (``POST /v1/chat/completions``): request and response bodies, streamed or not."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...context import ModelContext
from .._messages import request_body
from .._types import ParsedRequest, ParsedResponse, RawSpan, WireFormat, parsed_request
from .render import render_openai_chat
from .request import parse_messages, parse_tools
from .response import parse_openai_chat_response
from .stream import OpenAIChatStream

__all__ = ["OpenAIChatCodec", "parse_openai_chat_response", "render_openai_chat"]

_OWN_FIELDS = frozenset({"model", "messages", "tools", "max_completion_tokens", "max_tokens"})


class OpenAIChatCodec:
    """OpenAI Chat Completions both ways; ``render_request`` also takes ``developer_role``.

    A request's ``max_tokens`` (the deprecated name) or ``max_completion_tokens`` is read as the output
    limit and rendered as ``max_completion_tokens``.
    """

    format: WireFormat = "openai_chat"

    def parse_request(self, body: Mapping[str, Any]) -> ParsedRequest:
        """Read a Chat Completions request body."""
        body = request_body(body)
        spans: list[RawSpan] = []
        tool_spans: list[RawSpan] = []
        limit = body.get("max_completion_tokens", body.get("max_tokens"))
        return parsed_request(
            "openai_chat",
            body,
            system=(),
            messages=parse_messages(body.get("messages"), spans),
            tools=parse_tools(body.get("tools"), tool_spans),
            own_fields=_OWN_FIELDS,
            spans=spans,
            tool_spans=tool_spans,
            max_tokens=limit,
        )

    def render_request(
        self,
        ctx: ModelContext,
        *,
        model: str | None = None,
        max_tokens: int | None = None,
        extra: Mapping[str, Any] | None = None,
        developer_role: bool = False,
    ) -> dict[str, Any]:
        """A complete Chat Completions request body (see :func:`render_openai_chat`)."""
        return render_openai_chat(ctx, model=model, max_tokens=max_tokens, extra=extra, developer_role=developer_role)

    def parse_response(self, body: Mapping[str, Any]) -> ParsedResponse:
        """Read a Chat Completions response body."""
        return parse_openai_chat_response(body)

    def stream_accumulator(self) -> OpenAIChatStream:
        """A fresh accumulator for one streamed Chat Completions response."""
        return OpenAIChatStream()
