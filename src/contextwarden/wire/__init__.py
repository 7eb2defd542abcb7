"""One codec per provider wire format: request and response bodies in, complete request bodies out.

The whole API::

    from contextwarden.wire import WireFormat, detect_format, get_codec, ParsedRequest, normalize_pairing

    fmt = detect_format(body)            # "anthropic" | "openai_chat" | "openai_responses" | "gemini" | None
    codec = get_codec(fmt)
    parsed = codec.parse_request(body)   # ParsedRequest: format, model, instructions, events, tools,
                                         #   max_tokens, extra (other top-level fields), and spans /
                                         #   tool_spans: the path and raw JSON each item came from
    ctx = parsed.to_context()            # the same request as a ModelContext, no reduction
    body = codec.render_request(ctx, model=..., max_tokens=..., extra=parsed.extra)   # complete, sendable
    message, usage = codec.parse_response(response_body)
    acc = codec.stream_accumulator()
    for event_type, data in sse_events:  # the SSE ``event:`` name ("" when none) and its JSON data
        acc.feed(event_type, data)
    message, usage = acc.result()
    addressed = address_body(raw, "messages")          # the body's bytes read once, each message's place kept;
    later = extend_body(next_raw, addressed, through)  #   a body extending them parsed from there on only

What holds for every codec:

- Parsing a request is faithful: it keeps every call id and result as sent (``render_request``
  normalizes). Text, tool calls and results become events; provider items contextwarden does not
  interpret (Anthropic blocks of unknown types, OpenAI Responses ``reasoning`` items with their
  ``encrypted_content``, ``compaction`` items, Gemini parts of unknown kinds, provider tools) become
  :class:`~contextwarden.log.events.OpaquePart` (tools: ``ToolDefinition.raw_json``) attached to their
  message, and the codec of their format renders them back at their position, byte for byte. Other
  formats leave them out.
- Rendering goes through :func:`contextwarden.pairing.normalize_pairing`, the one pairing rule: each
  call gets exactly one result and the reverse, and call ids are unique within the request (a reused
  id is renamed deterministically). Each renderer then obeys its provider's own documented rules
  (Anthropic: first message ``user``, no empty or whitespace-only text, no trailing whitespace on a
  final assistant text, ``max_tokens`` always present).
- Responses, streamed or not, give an :class:`~contextwarden.log.events.AssistantMessage` and a
  :class:`~contextwarden.log.events.UsageReport` whose ``input_tokens`` is the total input, cached tokens
  included. A stream accumulator rebuilds the non-streamed body and reads it with the same parser.
- Malformed bodies raise :class:`~contextwarden.errors.ImportFormatError` (requests) or
  :class:`~contextwarden.errors.MalformedResponse` (responses), naming what is wrong.
"""

from __future__ import annotations

from typing import get_args

from ..errors import UsageError
from ..pairing import ABORTED_TEXT, normalize_pairing
from ._address import AddressedBody, address_body, extend_body
from ._codec import Codec
from ._detect import detect_format
from ._response_common import map_stop_reason
from ._types import FORMATS, ParsedRequest, ParsedResponse, RawSpan, StreamAccumulator, WireFormat
from .anthropic import CODEC as ANTHROPIC
from .anthropic import render_anthropic
from .gemini import CODEC as GEMINI
from .gemini import render_gemini
from .openai_chat import CODEC as OPENAI_CHAT
from .openai_chat import render_openai_chat
from .openai_responses import CODEC as OPENAI_RESPONSES
from .openai_responses import render_openai_responses

__all__ = [
    "ABORTED_TEXT",
    "FORMATS",
    "AddressedBody",
    "Codec",
    "ParsedRequest",
    "ParsedResponse",
    "RawSpan",
    "StreamAccumulator",
    "WireFormat",
    "address_body",
    "detect_format",
    "extend_body",
    "get_codec",
    "map_stop_reason",
    "normalize_pairing",
    "render_anthropic",
    "render_gemini",
    "render_openai_chat",
    "render_openai_responses",
]

_CODECS: dict[str, Codec] = {codec.format: codec for codec in (ANTHROPIC, OPENAI_CHAT, OPENAI_RESPONSES, GEMINI)}
assert set(_CODECS) == set(get_args(WireFormat))


def get_codec(fmt: WireFormat | str) -> Codec:
    """The codec of a wire format; an unknown name is a :class:`~contextwarden.errors.UsageError`."""
    codec = _CODECS.get(fmt)
    if codec is None:
        raise UsageError(f"unknown wire format {fmt!r}; known: {', '.join(FORMATS)}")
    return codec
