"""The event schema's versions, and the steps that bring an older stored record to the current one.

``schema`` names the format that wrote a record; a record without it is version
1, written before versions were recorded. Reading upgrades an older record one step at a time
(:data:`_UPGRADES`) to :data:`EVENT_SCHEMA_VERSION`; stored rows are never rewritten, because the
log is append-only, so an old store or file opens as it is. Only a change an old record cannot
be read under needs a new version and a step: a field renamed, removed, or given another type or
meaning. Additive changes need neither: a new event kind, a new part dataclass, a new field with
a default (an old record lacks the field and gets the default). A reader older than a record
refuses the record's unknown field by name rather than drop it.

- version 1: no ``schema`` key; bytes inside parts written as ``{"$b64": "..."}``.
- version 2: the ``schema`` key; bytes fields as plain base64 strings, known from the field's type
  (so a tool argument that happens to look like ``{"$b64": ...}`` stays a dict).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..errors import CodecError

EVENT_SCHEMA_VERSION = 2
"""The schema version this contextwarden writes; it reads every version up to it."""

_V1_PART_FIELDS = ("tool_calls", "thinking", "parts", "edits")
"""The fields whose items version 1 decoded as parts (its ``_PART_TYPES``)."""


def _v1_to_v2(raw: dict[str, Any]) -> dict[str, Any]:
    """Version 1 wrapped bytes in parts as ``{"$b64": text}``; version 2 writes the text alone."""

    def unwrap(value: Any) -> Any:
        if isinstance(value, Mapping) and value.keys() == {"$b64"}:
            return value["$b64"]
        return value

    out = dict(raw)
    for name in _V1_PART_FIELDS:
        items = raw.get(name)
        if isinstance(items, list):
            out[name] = [
                {k: unwrap(v) for k, v in item.items()} if isinstance(item, Mapping) else item for item in items
            ]
    return out


_UPGRADES: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {1: _v1_to_v2}
"""``version -> step``: each step turns a record of that version into one of the next."""


def upgrade(raw: Mapping[str, Any]) -> dict[str, Any]:
    """Return ``raw`` brought to :data:`EVENT_SCHEMA_VERSION`; ``CodecError`` for a version it cannot read."""
    version = raw.get("schema", 1)
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise CodecError(f"{raw.get('kind')} event: schema version must be a positive integer, got {version!r}")
    if version > EVENT_SCHEMA_VERSION:
        raise CodecError(
            f"{raw.get('kind')} event has schema version {version}, newer than this contextwarden reads "
            f"({EVENT_SCHEMA_VERSION}); upgrade contextwarden"
        )
    record = dict(raw)
    while version < EVENT_SCHEMA_VERSION:
        record = _UPGRADES[version](record)
        version += 1
    record["schema"] = version
    return record


__all__ = ["EVENT_SCHEMA_VERSION", "upgrade"]
