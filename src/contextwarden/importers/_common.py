"""What every importer shares: the :class:`Transcript` result, typed access and small converters.

Typed access names the JSON path of anything malformed; the converters read timestamps, tool
arguments and data URLs the same way for every format (provider usage: :mod:`contextwarden.wire.usage`).
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from ..errors import ImportFormatError
from ..log.events import (
    BinaryPart,
    Event,
    JSONValue,
    ToolCall,
)
from ..wire._common import arguments_object
from ..wire.openai_chat.request import message_content, tool_call


@dataclass(frozen=True)
class Transcript:
    """An imported transcript: events ready to append to a new session, plus what was learned on the way."""

    events: tuple[Event, ...]
    """The events in order, unstored (``session_id=""``, ``seq=0``)."""
    format: str
    """The format it was read as (``claude-code``, ``codex``, ``swe-agent``...)."""
    source: str
    """The path it was read from."""
    warnings: tuple[str, ...] = ()
    """What was dropped or skipped, one sentence each (``dropped truncated last line 812``)."""
    metadata: dict[str, JSONValue] = field(default_factory=dict)
    """Format-specific facts: model, agent version, the transcript's own usage totals, skip counts."""
    content_sha256: str = ""
    """SHA-256 of the file's bytes (set by :func:`~contextwarden.importers.load_transcript`); the
    event ids derive from it, and import-once compares it."""


# --------------------------------------------------------------------------- typed access with paths


def fail(source: str, where: str, problem: str) -> ImportFormatError:
    """Build the error for a malformed transcript, naming the file and the line or JSON path."""
    return ImportFormatError(f"{source}: {where}: {problem}")


def as_dict(value: Any, source: str, where: str) -> dict[str, Any]:
    """``value`` as an object, or an :class:`ImportFormatError` naming ``where``."""
    if not isinstance(value, dict):
        raise fail(source, where, f"expected an object, got {_type_name(value)}")
    return value


def as_list(value: Any, source: str, where: str) -> list[Any]:
    """``value`` as an array, or an :class:`ImportFormatError` naming ``where``."""
    if not isinstance(value, list):
        raise fail(source, where, f"expected an array, got {_type_name(value)}")
    return value


def opt_str(obj: Mapping[str, Any], key: str, source: str, where: str) -> str:
    """``obj[key]`` as a string; missing or null gives ``""``; any other type is an error."""
    value = obj.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise fail(source, f"{where}.{key}", f"expected a string, got {_type_name(value)}")
    return value


def _type_name(value: Any) -> str:
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
    return names.get(type(value), "a number")


# --------------------------------------------------------------------------- small converters


def parse_timestamp(value: Any) -> float | None:
    """Unix time from an ISO 8601 string (``Z`` and any fraction length accepted) or a number."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        # Milliseconds since the epoch are common in JS-written logs.
        return float(value) / 1000.0 if value > 1e11 else float(value)
    if not isinstance(value, str) or not value:
        return None
    text = value.strip().replace("Z", "+00:00").replace("z", "+00:00")
    # Python 3.10's fromisoformat wants exactly 3 or 6 fraction digits.
    text = re.sub(r"\.(\d+)", lambda m: "." + (m.group(1) + "000000")[:6], text, count=1)
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    return parsed.timestamp()


def parse_arguments(raw: Any) -> dict[str, JSONValue]:
    """Tool-call arguments as a dict: a JSON object string is parsed, anything else is kept under ``_raw``.

    The wire layer's rule (:func:`contextwarden.wire._common.arguments_object`), so an imported call
    reads exactly as the same call in a request body.
    """
    return arguments_object(raw)


_DATA_URL = re.compile(r"^data:([\w.+/-]+)?(;[^,]*)?,", re.DOTALL)


def binary_from_data_url(url: str) -> BinaryPart | None:
    """Decode a ``data:`` URL into a :class:`BinaryPart` (``None`` when it is not one or not decodable)."""
    match = _DATA_URL.match(url)
    if match is None:
        return None
    payload = url[match.end() :]
    params = match.group(2) or ""
    try:
        data = base64.b64decode(payload, validate=False) if ";base64" in params else payload.encode()
    except (binascii.Error, ValueError):
        return None
    return BinaryPart(media_type=match.group(1) or "application/octet-stream", data=data)


def binary_from_base64(media_type: str, data: str, name: str = "") -> BinaryPart | None:
    """Decode base64 text into a :class:`BinaryPart` (``None`` when it is not base64)."""
    try:
        raw = base64.b64decode(data, validate=False)
    except (binascii.Error, ValueError):
        return None
    return BinaryPart(media_type=media_type or "application/octet-stream", data=raw, name=name)


def openai_content(content: Any, source: str, where: str) -> tuple[str, list[BinaryPart]]:
    """Split an OpenAI Chat ``content`` (a string, null, or an array of parts) into text and binary parts.

    Read by the Chat codec (:func:`contextwarden.wire.openai_chat.request.message_content`): text parts
    joined with newlines, ``data:`` images as :class:`BinaryPart`, other image URLs as an
    ``[image: URL]`` marker so nothing the model saw silently disappears. Here the shape is checked
    first, so a malformed part is an error naming its path.
    """
    if content is None:
        return "", []
    if not isinstance(content, str):
        for index, item in enumerate(as_list(content, source, f"{where}.content")):
            as_dict(item, source, f"{where}.content[{index}]")
    text, parts, _ = message_content(content)
    return text, list(parts)


def openai_tool_calls(raw: Any, source: str, where: str) -> list[ToolCall]:
    """Read an OpenAI Chat ``tool_calls`` array (``{"id", "function": {"name", "arguments"}}``) with the Chat codec."""
    if raw is None:
        return []
    calls: list[ToolCall] = []
    for index, item in enumerate(as_list(raw, source, f"{where}.tool_calls")):
        here = f"{where}.tool_calls[{index}]"
        item = as_dict(item, source, here)
        function = as_dict(item.get("function"), source, f"{here}.function")
        if not opt_str(item, "id", source, here):
            raise fail(source, f"{here}.id", "a tool call needs an id")
        opt_str(function, "name", source, f"{here}.function")
        calls.append(tool_call(item))
    return calls
