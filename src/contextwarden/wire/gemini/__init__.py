"""The Gemini ``generateContent`` codec: request and response bodies, streamed (``alt=sse``) or not.

The output limit is ``generationConfig.maxOutputTokens``; the rest of ``generationConfig`` stays in
``extra``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._codec import Codec
from .render import render_gemini
from .request import parse_contents, parse_system, tool_entries
from .response import parse_gemini_response
from .stream import GeminiStream

__all__ = ["CODEC", "parse_gemini_response", "render_gemini"]


def _limit(body: Mapping[str, Any]) -> tuple[object, Mapping[str, Any]]:
    """``generationConfig.maxOutputTokens``; a valid one leaves ``generationConfig`` without it."""
    config = body.get("generationConfig")
    limit = config.get("maxOutputTokens") if isinstance(config, Mapping) else None
    if not isinstance(config, Mapping) or not isinstance(limit, int) or isinstance(limit, bool):
        return None, body
    fields = {k: v for k, v in body.items() if k != "generationConfig"}
    rest = {k: v for k, v in config.items() if k != "maxOutputTokens"}
    if rest:
        fields["generationConfig"] = rest
    return limit, fields


CODEC = Codec(
    format="gemini",
    own_fields=frozenset({"systemInstruction", "contents", "tools"}),
    read_system=lambda body, spans: parse_system(body.get("systemInstruction"), spans),
    read_messages=lambda body, spans: parse_contents(body.get("contents"), spans),
    read_tool=tool_entries,
    read_limit=_limit,
    render_request=render_gemini,
    parse_response=parse_gemini_response,
    stream_accumulator=GeminiStream,
)
"""Gemini both ways."""
