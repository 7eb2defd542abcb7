"""Frozen settings dataclasses as JSON-ready data and back, by their field types.

Shared by the recorded policy (``plan/policy.py``) and the projection checkpoint
(``window/checkpoint.py``); it sits at the top level because both steps use it.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import typing
from collections.abc import Hashable
from typing import Any, TypeVar, cast

from .errors import CodecError

_T = TypeVar("_T")


def encode_dataclass(value: object) -> dict[str, Any]:
    """A frozen settings dataclass as JSON-ready data (nested dataclasses as objects, tuples as lists)."""
    encoded = _encode(value)
    if not isinstance(encoded, dict):
        raise TypeError(f"expected a dataclass instance, got {type(value).__name__}")
    return encoded


def _encode(value: object) -> object:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _encode(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, (tuple, list)):
        return [_encode(v) for v in value]
    return value


@functools.cache
def _hints(cls: Hashable) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def decode_dataclass(cls: type[_T], data: object, where: str) -> _T:
    """Rebuild dataclass ``cls`` from :func:`encode_dataclass` data by its field types.

    Missing fields take their defaults, unknown ones are ignored (logs outlive releases); a wrong
    shape is a ``CodecError`` naming ``where``.
    """
    if not isinstance(data, dict):
        raise CodecError(f"{where}: expected an object, got {type(data).__name__}")
    hints = _hints(cast(Hashable, cls))
    kwargs = {
        f.name: _value(hints[f.name], data[f.name], f"{where}.{f.name}")
        for f in dataclasses.fields(cls)  # type: ignore[arg-type]
        if f.name in data and f.init
    }
    return cls(**kwargs)


def _value(hint: Any, raw: object, where: str) -> object:
    origin = typing.get_origin(hint)
    if origin is tuple:
        if not isinstance(raw, list):
            raise CodecError(f"{where}: expected a list, got {type(raw).__name__}")
        args = typing.get_args(hint)
        item = args[0] if args else Any
        return tuple(_value(item, v, f"{where}[{i}]") for i, v in enumerate(raw))
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return decode_dataclass(hint, raw, where)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return hint(raw)
    return raw
