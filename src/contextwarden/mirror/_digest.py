"""What a mirrored message says, as a digest: the key the mirror matches a client's history by."""

from __future__ import annotations

import hashlib
import json
import struct
import sys
from collections.abc import Iterable, Mapping

from ..log.codec import event_to_dict
from ..log.events import (
    AssistantMessage,
    BinaryPart,
    Event,
    EventKind,
    Instruction,
    OpaquePart,
    ToolResult,
    UserMessage,
)

MIRRORED_KINDS: frozenset[EventKind] = frozenset(
    {Instruction.kind, UserMessage.kind, AssistantMessage.kind, ToolResult.kind}
)
"""The event kinds a client's history consists of; only these are matched against the log."""

_ENVELOPE = frozenset({"id", "session_id", "seq", "created_at", "parent_id"})
# Fields a request cannot send back as they were stored (the response's metadata), so they
# must not make a re-sent message look different.
_NOT_CONTENT = _ENVELOPE | {"model", "stop_reason", "exit_code", "source"}


def content_digest(event: Event) -> str:
    """A digest of what the event says, independent of id, seq, time and response metadata."""
    texts: list[str] = [event.kind]
    if isinstance(event, UserMessage):
        texts += [event.text, _canonical([_parts(event.parts), _opaque(event.opaque)])]
    elif isinstance(event, AssistantMessage):
        calls = [[c.id, c.name, _filled_in_dropped(c.arguments)] for c in event.tool_calls]
        thinking = [[b.text, b.signature] for b in event.thinking]
        texts += [event.text, _canonical([calls, thinking, _opaque(event.opaque)])]
    elif isinstance(event, ToolResult):
        texts += [event.output, _canonical([event.call_id, event.tool_name, event.is_error, _parts(event.parts)])]
    elif isinstance(event, Instruction):
        texts += [event.role, event.text]
    else:
        texts.append(_canonical({k: v for k, v in event_to_dict(event).items() if k not in _NOT_CONTENT}))
    # Large texts are hashed as they are (no escaping pass); the lengths up front keep the
    # concatenation unambiguous. Lone surrogates (undecodable bytes) survive surrogatepass.
    data = [t.encode("utf-8", "surrogatepass") for t in texts]
    h = hashlib.blake2b(struct.pack(f"<{len(data)}Q", *map(len, data)), digest_size=16)
    for chunk in data:
        h.update(chunk)
    # interned: equal digests are then one object, and comparing two lists of them is pointer work
    return sys.intern(h.hexdigest())


def _parts(parts: Iterable[BinaryPart]) -> list[list[str]]:
    return [[p.media_type, p.name, hashlib.blake2b(p.data, digest_size=16).hexdigest()] for p in parts]


def _opaque(items: Iterable[OpaquePart]) -> list[list[object]]:
    # provider items kept verbatim (encrypted reasoning...) are content the client sends back, in its
    # own serialization: compared as JSON values (any key order), with null members taken as absent
    return [[item.format, item.position, _without_nulls(_loaded(item.raw_json))] for item in items]


def _filled_in_dropped(arguments: Mapping[str, object]) -> dict[str, object]:
    """A call's arguments without the members a client fills in with an empty or false default.

    A client that echoes the model's call with its tool's defaults written out has not changed
    what the model said; ``True``, ``0`` and every other value still count.
    """
    return {k: v for k, v in arguments.items() if not _is_filled_in(v)}


def _is_filled_in(value: object) -> bool:
    if value is False or value is None:
        return True
    return isinstance(value, (str, list, tuple, dict)) and len(value) == 0


def _loaded(raw: str) -> object:
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def _without_nulls(value: object) -> object:
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def _canonical(value: object) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=True, separators=(",", ":"), default=str)
