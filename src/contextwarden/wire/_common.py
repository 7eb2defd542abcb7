"""Helpers every renderer and parser shares: argument JSON, data URLs, signature conventions.

Two opaque values need a convention because :class:`~contextwarden.log.events.ThinkingBlock` has a
single ``signature`` field:

- OpenAI Responses reasoning items can only be replayed with their original item id (the encrypted
  content is bound to it), so their signature is stored as ``"<item id>:<encrypted_content>"``.
- Anthropic ``redacted_thinking`` blocks carry only opaque data; their signature is stored as
  ``"redacted:<data>"`` with empty text.

Item ids start with ``rs_`` and both payloads are base64, so neither form can be mistaken for an
Anthropic or Gemini signature (plain base64, no colon). A bare OpenAI ``encrypted_content`` stored as a
signature (as transcript importers do) is a Fernet token, which always starts with ``gAAAAA`` (the
version byte 0x80, then a timestamp's zero high bytes); it is never sent to Anthropic or Gemini either.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Mapping
from typing import Any

from ..context import ToolDefinition
from ..log.events import BinaryPart, JSONValue, OpaquePart, ToolCall

_FERNET_PREFIX = "gAAAAA"

REDACTED_PREFIX = "redacted:"
"""Prefix of the signature of an Anthropic ``redacted_thinking`` block."""

_SURROGATE = re.compile("[\ud800-\udfff]")
_RESPONSES_SIGNATURE = re.compile(r"^(rs_[A-Za-z0-9_-]+):(.+)$", re.DOTALL)

IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
"""Image media types every supported provider accepts inline."""


def dumps_compact(value: object) -> str:
    """JSON with no spaces, key order as given, non-ASCII kept: stable bytes for a stable value."""
    return json.dumps(value, sort_keys=False, ensure_ascii=False, separators=(",", ":"))


def arguments_text(call: ToolCall) -> str:
    """Return the call's arguments as JSON text; ``{"_raw": text}`` gives back ``text`` unchanged."""
    raw = call.arguments.get("_raw")
    if len(call.arguments) == 1 and isinstance(raw, str):
        return clean_text(raw)
    return dumps_compact(call.arguments)


def arguments_payload(call: ToolCall) -> dict[str, JSONValue]:
    """Return a copy of the arguments as an object (Anthropic ``input``, Gemini ``args``), made encodable."""
    text = dumps_compact(call.arguments)
    if text.isascii() or clean_text(text) is text:
        return dict(call.arguments)
    cleaned: dict[str, JSONValue] = json.loads(clean_text(text))
    return cleaned


def parse_arguments(text: str) -> dict[str, JSONValue]:
    """Parse argument JSON text; empty text is ``{}``, anything but a JSON object is ``{"_raw": text}``."""
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return {"_raw": text}
    if isinstance(value, dict):
        return value
    return {"_raw": text}


def arguments_object(value: object) -> dict[str, JSONValue]:
    """Arguments a provider sent as an object (Anthropic ``input``, Gemini ``args``) or as JSON text."""
    if isinstance(value, str):
        return parse_arguments(value)
    if isinstance(value, Mapping):
        return dict(value)
    if value is None:
        return {}
    return {"_raw": dumps_compact(value)}


def b64(data: bytes) -> str:
    """Return the standard base64 text of ``data``."""
    return base64.b64encode(data).decode("ascii")


def data_url(part: BinaryPart) -> str:
    """Return a ``data:`` URL carrying the part inline."""
    return f"data:{part.media_type};base64,{b64(part.data)}"


def from_data_url(url: str) -> BinaryPart | None:
    """Decode a base64 ``data:`` URL; ``None`` for remote URLs or malformed data."""
    match = re.match(r"^data:([^;,]+);base64,(.*)$", url, re.DOTALL)
    if match is None:
        return None
    return from_b64(match.group(1), match.group(2))


def from_b64(media_type: str, text: str) -> BinaryPart | None:
    """Decode base64 ``text`` into a part; ``None`` when it is not valid base64."""
    try:
        return BinaryPart(media_type=media_type, data=base64.b64decode(text, validate=True))
    except (binascii.Error, ValueError):
        return None


def is_image(part: BinaryPart) -> bool:
    """Whether the part can be sent inline as an image."""
    return part.media_type in IMAGE_TYPES


def attachment_note(part: BinaryPart) -> str:
    """Return what the model sees instead of a part no provider takes inline (a PDF, raw bytes)."""
    label = f" {part.name}" if part.name else ""
    return f"[attachment{label} ({part.media_type}, {len(part.data)} bytes) not shown]"


def split_parts(parts: tuple[BinaryPart, ...]) -> tuple[list[BinaryPart], list[str]]:
    """Images to send inline, and notes for the other parts."""
    images = [p for p in parts if is_image(p)]
    notes = [attachment_note(p) for p in parts if not is_image(p)]
    return images, notes


def clean_text(text: str) -> str:
    """Return ``text`` with lone surrogates (undecodable bytes kept by the log) replaced by U+FFFD.

    A payload holding them cannot be encoded as UTF-8, so the HTTP call would fail on our side.
    """
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text)
    return text


def join_text(text: str, notes: list[str]) -> str:
    """Return text followed by attachment notes, one per line, without empty lines, made encodable."""
    return clean_text("\n".join(t for t in (text, *notes) if t))


def pack_responses_signature(item_id: str, encrypted_content: str) -> str:
    """Return the signature stored for an OpenAI Responses reasoning item."""
    return f"{item_id}:{encrypted_content}"


def unpack_responses_signature(signature: str) -> tuple[str, str] | None:
    """``(item id, encrypted content)`` of a Responses signature, or ``None`` for another provider's."""
    match = _RESPONSES_SIGNATURE.match(signature)
    if match is None:
        return None
    return match.group(1), match.group(2)


def is_foreign_to_anthropic_or_gemini(signature: str) -> bool:
    """Whether a signature belongs to OpenAI (and so must not be sent to Anthropic or Gemini)."""
    return signature.startswith(_FERNET_PREFIX) or unpack_responses_signature(signature) is not None


def with_opaque(blocks: list[dict[str, Any]], opaque: tuple[OpaquePart, ...], fmt: str) -> list[dict[str, Any]]:
    """The blocks with the message's opaque items of format ``fmt`` put back at their positions.

    Each item is decoded from its raw JSON with key order kept, so it encodes back to the same bytes.
    Items of another format are left out: no other provider could read them.
    """
    for part in opaque:
        if part.format == fmt:
            blocks.insert(min(part.position, len(blocks)), json.loads(part.raw_json))
    return blocks


def has_opaque(opaque: tuple[OpaquePart, ...], fmt: str) -> bool:
    """Whether any opaque item is of format ``fmt``."""
    return any(part.format == fmt for part in opaque)


def own_tools(tools: tuple[ToolDefinition, ...], fmt: str) -> tuple[list[ToolDefinition], list[dict[str, Any]]]:
    """Function tools, and the provider tools of format ``fmt`` decoded (other formats' are left out)."""
    functions = [tool for tool in tools if not tool.raw_json]
    provider = [json.loads(tool.raw_json) for tool in tools if tool.raw_json and tool.format == fmt]
    return functions, provider
