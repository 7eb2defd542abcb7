"""The OpenAI Chat Completions codec (``POST /v1/chat/completions``): request and response bodies, streamed or not.

A request's ``max_completion_tokens`` (or ``max_tokens``, the deprecated name) is read as the output
limit and rendered as ``max_completion_tokens``; ``render_openai_chat`` also takes ``developer_role``.
"""

from __future__ import annotations

from .._codec import Codec, top_level_limit
from .render import render_openai_chat
from .request import parse_messages, tool_entries
from .response import parse_openai_chat_response
from .stream import OpenAIChatStream

__all__ = ["CODEC", "parse_openai_chat_response", "render_openai_chat"]

CODEC = Codec(
    format="openai_chat",
    own_fields=frozenset({"model", "messages", "tools", "max_completion_tokens", "max_tokens"}),
    read_system=lambda body, spans: (),
    read_messages=lambda body, spans: parse_messages(body.get("messages"), spans),
    read_tool=tool_entries,
    read_limit=top_level_limit("max_completion_tokens", "max_tokens"),
    render_request=render_openai_chat,
    parse_response=parse_openai_chat_response,
    stream_accumulator=OpenAIChatStream,
)
"""OpenAI Chat Completions both ways."""
