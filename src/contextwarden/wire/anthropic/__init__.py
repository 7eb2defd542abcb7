"""The Anthropic Messages codec (``POST /v1/messages``): request and response bodies, streamed or not.

``render_anthropic`` also takes ``cache_ttl`` (``"5m"`` or ``"1h"``).
"""

from __future__ import annotations

from .._codec import Codec, top_level_limit
from .render import MAX_CACHE_BREAKPOINTS, render_anthropic
from .request import parse_messages, parse_system, tool_entries
from .response import parse_anthropic_response
from .stream import AnthropicStream

__all__ = ["CODEC", "MAX_CACHE_BREAKPOINTS", "parse_anthropic_response", "render_anthropic"]

CODEC = Codec(
    format="anthropic",
    own_fields=frozenset({"model", "system", "messages", "tools", "max_tokens"}),
    read_system=lambda body, spans: parse_system(body.get("system"), spans),
    read_messages=lambda body, spans: parse_messages(body.get("messages"), spans),
    read_tool=tool_entries,
    read_limit=top_level_limit("max_tokens"),
    render_request=render_anthropic,
    parse_response=parse_anthropic_response,
    stream_accumulator=AnthropicStream,
)
"""Anthropic Messages both ways."""
