r"""The one JSON codec of session events: JSONL files, SQLite and PostgreSQL all store its text.

A record is one JSON object: ``kind`` and ``schema`` first, then every dataclass field of the
event by name. Parts (tool calls, thinking blocks, binary parts, context edits...) are nested
objects, tuples are arrays, and a ``bytes`` field holds a standard base64 string.

The codec is strict both ways, so a file imports losslessly or not at all: decoding refuses
unknown kinds, unknown fields and missing fields with a :class:`~contextwarden.errors.CodecError`
naming them, and encoding refuses a value JSON cannot hold (an object, a set, bytes outside a
``bytes`` field, a non-string key) instead of writing something else back.

Schema versions: ``schema`` names the format that wrote a record; reading brings an older record to
the current version (:mod:`contextwarden.log.schema`).

Speed. msgspec writes and reads the JSON in C, and encodes the frozen dataclasses natively; the
Python side checks each field once against a table computed per class (:func:`_layout`). The
standard library's ``json`` takes over for the values msgspec cannot write faithfully: lone
surrogates (undecodable bytes in tool output) and non-finite floats, written as ``\udcff`` escapes
and ``NaN`` as before, and read back by ``json`` when msgspec refuses them. Both write the same JSON.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
import math
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import msgspec

from ..errors import CodecError
from .events import EVENT_TYPES, Event
from .schema import EVENT_SCHEMA_VERSION, upgrade

_Shape = Literal["json", "bytes", "tuple", "part", "parts"]


@dataclass(frozen=True)
class _Field:
    """How one dataclass field is written and read."""

    name: str
    shape: _Shape
    """``json`` (any JSON value), ``bytes`` (base64), ``tuple`` (an array of JSON values), ``part``
    (one nested dataclass), ``parts`` (a tuple of them)."""
    part: type[Any] | None = None
    """The nested dataclass of a ``part`` or ``parts`` field."""
    nullable: bool = False
    """Whether ``None`` is allowed in a ``bytes`` or ``part`` field."""


@dataclass(frozen=True)
class _Layout:
    """What the codec knows of one dataclass, worked out once from its fields and type hints."""

    fields: tuple[_Field, ...]
    names: frozenset[str]
    required: tuple[str, ...]
    """Fields with no default, in declaration order."""
    plain: tuple[str, ...]
    """The ``json`` fields: their JSON is the Python value."""
    converted: tuple[_Field, ...]
    """The other fields, which a read converts and a write checks by shape."""
    prefix: bytes
    """For an event class, the bytes its records start with, up to the first field."""


_LAYOUTS: dict[type[Any], _Layout] = {}
_SCALARS = frozenset({str, int, bool, type(None)})
_isfinite = math.isfinite
_ENCODER = msgspec.json.Encoder()
_DECODER = msgspec.json.Decoder()


def _shape_of(hint: Any) -> tuple[_Shape, type[Any] | None, bool]:
    """Classify a resolved type hint: ``(shape, part class, nullable)``."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Union or origin is types.UnionType:
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1 and len(args) == 2:
            shape, part, _ = _shape_of(rest[0])
            if shape in ("bytes", "part"):
                return shape, part, True
        return "json", None, False
    if hint is bytes:
        return "bytes", None, False
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return "part", hint, False
    if origin is tuple:
        if args and dataclasses.is_dataclass(args[0]) and isinstance(args[0], type):
            return "parts", args[0], False
        return "tuple", None, False
    return "json", None, False


def _layout(cls: type[Any]) -> _Layout:
    """Return (and cache) the codec table of the dataclass ``cls``."""
    layout = _LAYOUTS.get(cls)
    if layout is not None:
        return layout
    hints = typing.get_type_hints(cls)
    fields: list[_Field] = []
    required: list[str] = []
    for f in dataclasses.fields(cls):
        shape, part, nullable = _shape_of(hints[f.name])
        fields.append(_Field(f.name, shape, part, nullable))
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            required.append(f.name)
    kind = getattr(cls, "kind", None) if issubclass(cls, Event) else None
    layout = _Layout(
        fields=tuple(fields),
        names=frozenset(f.name for f in fields),
        required=tuple(required),
        plain=tuple(f.name for f in fields if f.shape == "json"),
        converted=tuple(f for f in fields if f.shape != "json"),
        prefix=b'{"kind":%s,"schema":%d,' % (json.dumps(kind).encode("ascii"), EVENT_SCHEMA_VERSION) if kind else b"",
    )
    _LAYOUTS[cls] = layout
    return layout


# --------------------------------------------------------------------------- checks before writing


def _check_json(value: Any, where: str, name: str) -> bool:
    """Refuse a value JSON cannot hold; return whether it has a float only ``json`` writes (NaN, inf)."""
    kind = type(value)
    if kind in _SCALARS:
        return False
    if kind is float:
        return not _isfinite(value)
    exotic = False
    if kind is dict:
        for key, item in value.items():
            if not isinstance(key, str):
                raise CodecError(f"{where}.{name}: object key {key!r} is not a string")
            exotic = _check_json(item, where, name) or exotic
        return exotic
    if kind is list or kind is tuple:
        for item in value:
            exotic = _check_json(item, where, name) or exotic
        return exotic
    if isinstance(value, (str, int)):  # str and int subclasses, enums among them, write as their value
        return False
    raise CodecError(f"{where}.{name}: {kind.__name__} is not a JSON value")


def _check(obj: Any, layout: _Layout, where: str) -> bool:
    """Check every field of ``obj`` before it is written; return whether ``json`` must write it.

    This walk is what keeps the encoder strict: msgspec alone would write a set, a datetime or a
    UUID as something that reads back as another type, and a NaN as ``null``.
    """
    exotic = False
    values = obj.__dict__
    for name in layout.plain:
        value = values[name]
        kind = type(value)
        if kind in _SCALARS:
            continue
        if kind is not float:
            exotic = _check_json(value, where, name) or exotic
        elif not _isfinite(value):  # floats (created_at is on every event) are checked here, not in a call
            exotic = True
    for f in layout.converted:
        value = values[f.name]
        if value is None and f.nullable:
            continue
        if f.shape == "bytes":
            if not isinstance(value, bytes):
                raise CodecError(f"{where}.{f.name}: expected bytes, got {type(value).__name__}")
        elif f.shape == "tuple":
            if not isinstance(value, (tuple, list)):
                raise CodecError(f"{where}.{f.name}: expected a tuple, got {type(value).__name__}")
            exotic = _check_json(value, where, f.name) or exotic
        else:
            parts = (value,) if f.shape == "part" else value
            if f.shape == "parts" and not isinstance(value, (tuple, list)):
                raise CodecError(f"{where}.{f.name}: expected a tuple, got {type(value).__name__}")
            assert f.part is not None
            for part in parts:
                if type(part) is not f.part:
                    raise CodecError(f"{where}.{f.name}: expected {f.part.__name__}, got {type(part).__name__}")
                exotic = _check(part, _layout(f.part), f"{where}.{f.name}") or exotic
    return exotic


# --------------------------------------------------------------------------- writing


def _to_dict(obj: Any, layout: _Layout) -> dict[str, Any]:
    out: dict[str, Any] = {}
    values = vars(obj)
    for f in layout.fields:
        value = values[f.name]
        if value is None or f.shape == "json":
            out[f.name] = value
        elif f.shape == "bytes":
            out[f.name] = base64.b64encode(value).decode("ascii")
        elif f.shape == "tuple":
            out[f.name] = list(value)
        elif f.shape == "part":
            assert f.part is not None
            out[f.name] = _to_dict(value, _layout(f.part))
        else:
            assert f.part is not None
            part_layout = _layout(f.part)
            out[f.name] = [_to_dict(p, part_layout) for p in value]
    return out


def event_to_dict(event: Event) -> dict[str, Any]:
    """Encode an event as a JSON-ready dict, ``kind`` and ``schema`` first; ``CodecError`` if it holds non-JSON."""
    layout = _layout(type(event))
    _check(event, layout, event.kind)
    return {"kind": event.kind, "schema": EVENT_SCHEMA_VERSION, **_to_dict(event, layout)}


def dumps_event(event: Event, *, ascii_only: bool = False) -> str:
    r"""Encode an event as one line of JSON; ``CodecError`` if a field holds a value JSON cannot.

    NUL bytes and lone surrogates survive as ``\u`` escapes. ``ascii_only`` escapes every other
    non-ASCII character too (for files that must read the same under any locale).
    """
    cls = type(event)
    layout = _LAYOUTS.get(cls) or _layout(cls)
    try:
        exotic = _check(event, layout, event.kind)
    except RecursionError:
        raise CodecError(f"{event.kind} event {event.id!r}: nested too deeply") from None
    if not exotic:
        # The record is the prefix, then the encoded event without its "{": written into one buffer
        # that already holds the prefix, so a large event is not copied again to join them.
        body = bytearray(layout.prefix)
        try:
            _ENCODER.encode_into(event, body, len(body) - 1)
        except (UnicodeEncodeError, TypeError):
            pass  # a lone surrogate (only json's \u escapes carry it) or a str subclass msgspec does not take
        else:
            body[len(layout.prefix) - 1] = layout.prefix[-1]
            text = body.decode("utf-8")
            if not ascii_only or text.isascii():
                return text
    record = {"kind": event.kind, "schema": EVENT_SCHEMA_VERSION, **_to_dict(event, layout)}
    return json.dumps(record, ensure_ascii=True, separators=(",", ":"))


# --------------------------------------------------------------------------- reading


def loads_json(text: str | bytes) -> Any:
    """Parse one JSON document the way the codec reads records; ``CodecError`` if it is not JSON."""
    try:
        return _DECODER.decode(text)
    except msgspec.DecodeError:
        pass  # escapes msgspec refuses (lone surrogates, NaN): json reads them
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise CodecError(f"invalid JSON: {exc}") from None


def _convert(f: _Field, value: Any, where: str) -> Any:
    """Turn the JSON of a non-``json`` field back into its Python value."""
    if value is None and f.nullable:
        return None
    if f.shape == "bytes":
        if not isinstance(value, str):
            raise CodecError(f"{where}: expected a base64 string, got {type(value).__name__}")
        try:
            return base64.b64decode(value, validate=True)
        except binascii.Error as exc:
            raise CodecError(f"{where}: invalid base64: {exc}") from None
    if not isinstance(value, list) and f.shape != "part":
        raise CodecError(f"{where}: expected a list, got {type(value).__name__}")
    if f.shape == "tuple":
        return tuple(value)
    assert f.part is not None
    if f.shape == "part":
        return _decode_part(f.part, value, where)
    return tuple(_decode_part(f.part, v, f"{where}[{i}]") for i, v in enumerate(value))


def _decode_part(cls: type[Any], raw: Any, where: str) -> Any:
    if not isinstance(raw, Mapping):
        raise CodecError(f"{where}: expected an object, got {type(raw).__name__}")
    return _build(cls, dict(raw), where, where)


def _build(cls: type[Any], kwargs: dict[str, Any], where: str, path: str) -> Any:
    """Construct ``cls`` from its decoded fields (``kwargs``, consumed); errors name ``where``, fields ``path.name``."""
    layout = _layout(cls)
    unknown = kwargs.keys() - layout.names
    if unknown:
        raise CodecError(f"{where}: unknown field(s) {sorted(unknown)}")
    missing = [name for name in layout.required if name not in kwargs]
    if missing:
        raise CodecError(f"{where}: missing field(s) {missing}")
    for f in layout.converted:
        if f.name in kwargs:
            kwargs[f.name] = _convert(f, kwargs[f.name], f"{path}.{f.name}")
    try:
        return cls(**kwargs)
    except TypeError as exc:
        raise CodecError(f"{where}: {exc}") from None


def event_from_dict(raw: Mapping[str, Any]) -> Event:
    """Decode a record of any schema version up to the current one; ``CodecError`` on any mismatch."""
    if not isinstance(raw, Mapping):
        raise CodecError(f"expected a JSON object, got {type(raw).__name__}")
    kind = raw.get("kind")
    cls = EVENT_TYPES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise CodecError(f"unknown event kind {kind!r}; known kinds: {sorted(EVENT_TYPES)}")
    if raw.get("schema") != EVENT_SCHEMA_VERSION:
        raw = upgrade(raw)
    kwargs = dict(raw)
    del kwargs["kind"], kwargs["schema"]
    event: Event = _build(cls, kwargs, f"{cls.kind} event", cls.kind)
    return event


def loads_event(text: str | bytes) -> Event:
    """Decode one record written by :func:`dumps_event` (or by an older release)."""
    return event_from_dict(loads_json(text))


__all__ = [
    "EVENT_SCHEMA_VERSION",
    "dumps_event",
    "event_from_dict",
    "event_to_dict",
    "loads_event",
    "loads_json",
    "upgrade",
]
