"""The JSON text of a checkpoint's parts, and a memo that makes a save encode only what changed.

A window's items, tool calls and tool records never change once made: an edit replaces an item
with a new object, it does not alter the old one. So the text of each can be kept, by object
identity, from one save to the next (:class:`FragmentMemo`), and a save encodes only the parts
that are new since the last one. The rest of the state (positions, sums, the derived task state)
is small and written whole.

msgspec writes the text in C; the standard library's ``json`` takes over for what msgspec cannot
write faithfully: a lone surrogate (it refuses them) and a non-finite float (it would write
``null``). Both read back the same, so the reader does not care which wrote a part.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Hashable
from typing import Any

import msgspec

__all__ = ["CHECKPOINT_FORMAT", "CheckpointError", "FragmentMemo", "has_nonfinite", "json_text"]

CHECKPOINT_FORMAT = 5
"""Version of the checkpoint layout; a checkpoint of another format is not read (the window is rebuilt).
4: the state builder keeps the file a SWE-agent ``open`` made current. 5: the outputs shown and the
results sent as references to them (:mod:`.references`)."""


class CheckpointError(ValueError):
    """A checkpoint cannot be written or read; the caller rebuilds the window from the log instead."""


_encode = msgspec.json.Encoder().encode


def json_text(value: object, *, nonfinite: bool = False) -> str:
    """``value`` (a dataclass, or JSON-ready data) as compact JSON; ``nonfinite``: it may hold NaN or inf."""
    if not nonfinite:
        try:
            return _encode(value).decode("utf-8")
        except UnicodeEncodeError:
            pass  # a lone surrogate: json's \u escapes carry it
    return json.dumps(msgspec.to_builtins(value), separators=(",", ":"), allow_nan=True)


def has_nonfinite(value: Any) -> bool:
    """Whether JSON-ready ``value`` holds a NaN or an infinity anywhere (msgspec would write it as null)."""
    kind = type(value)
    if kind is float:
        return not math.isfinite(value)
    if kind is dict:
        return any(has_nonfinite(v) for v in value.values())
    if kind is list or kind is tuple:
        return any(has_nonfinite(v) for v in value)
    return False


class FragmentMemo:
    """The JSON text of immutable objects from the last save, by identity, for the next one.

    Keep one per cached window. Each save calls :meth:`start`, asks :meth:`text` for every part
    it writes, and :meth:`finish`: what the save did not ask for is forgotten, so the memo holds
    only the parts of the latest checkpoint (the objects themselves are held too, so an identity
    is never reused by another object while its text is kept).
    """

    def __init__(self) -> None:
        self._kept: dict[int, tuple[object, Hashable, str]] = {}
        self._asked: dict[int, tuple[object, Hashable, str]] = {}

    def start(self) -> None:
        """Begin a save (a save that failed half-way leaves nothing behind)."""
        self._asked = {}

    def text(self, obj: object, extra: Hashable, make: Callable[[], str]) -> str:
        """The text of ``obj`` written with ``extra`` (what else the text depends on); ``make`` writes it."""
        hit = self._kept.get(id(obj))
        text = hit[2] if hit is not None and hit[0] is obj and hit[1] == extra else make()
        self._asked[id(obj)] = (obj, extra, text)
        return text

    def finish(self) -> None:
        """End a save: keep exactly the texts it used."""
        self._kept, self._asked = self._asked, {}

    def __len__(self) -> int:
        return len(self._kept)
