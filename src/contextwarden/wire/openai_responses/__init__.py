"""The OpenAI Responses codec (``POST /v1/responses``): request and response bodies, streamed or not.

Requests are stateless: the whole conversation travels as ``input``.
"""

from __future__ import annotations

from .._codec import Codec, top_level_limit
from .render import render_openai_responses
from .request import is_user_side, parse_input, parse_instructions, tool_entries
from .response import parse_openai_responses_response
from .stream import OpenAIResponsesStream

__all__ = ["CODEC", "is_user_side", "parse_openai_responses_response", "render_openai_responses"]

CODEC = Codec(
    format="openai_responses",
    own_fields=frozenset({"model", "instructions", "input", "tools", "max_output_tokens"}),
    read_system=lambda body, spans: parse_instructions(body.get("instructions"), spans),
    read_messages=lambda body, spans: parse_input(body.get("input"), spans),
    read_tool=tool_entries,
    read_limit=top_level_limit("max_output_tokens"),
    render_request=render_openai_responses,
    parse_response=parse_openai_responses_response,
    stream_accumulator=OpenAIResponsesStream,
)
"""OpenAI Responses both ways."""
