"""Body addressing: a request body read together with where each item of its history list lies in its bytes.

A client resends its whole history on every call, and each body starts with the bytes of the one
before it, up to the last message the model wrote. Parsing a 2,000-message body again costs more
than everything else a proxy does with it, so a body is read once into an :class:`AddressedBody`
(the parsed body and the byte offsets of each item of one top-level list, ``messages`` or
``input``), and the next body is read with :func:`extend_body`: when it starts with the bytes of a
remembered body up to the end of one of its items, the items up to there are the remembered ones
(the same objects) and only the bytes after them are parsed.

Both functions read exactly what :func:`json.loads` reads, or give up: on anything they do not
follow (a body that is not an object, a list key given twice, an encoding other than UTF-8 without
a BOM, malformed or truncated JSON) they return ``None``, and the caller parses with
:func:`json.loads`, which also raises the error a malformed body deserves. Parsed bodies share
objects with the bodies they extend, so callers treat them as read-only (copy on write).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

_DECODER = json.JSONDecoder()
_WHITESPACE = re.compile(r"[ \t\n\r]*")  # JSON's four whitespace characters, as json.decoder skips them


@dataclass(frozen=True)
class AddressedBody:
    """A JSON object body, parsed, with the byte span of each item of its list ``key``."""

    raw: bytes
    """The body's bytes, as received."""
    body: dict[str, Any]
    """What ``json.loads(raw)`` returns (read-only: it shares items with the body it extends)."""
    key: str
    """The top-level list addressed (``messages``, or ``input`` for OpenAI Responses)."""
    lead: tuple[tuple[str, Any], ...]
    """The members before ``key``, in order, as parsed (a body extending this one repeats their bytes)."""
    starts: list[int]
    """Byte offset in ``raw`` of the first byte of each item."""
    ends: list[int]
    """Byte offset in ``raw`` just after the last byte of each item."""

    def item_bytes(self, index: int) -> bytes:
        """The bytes item ``index`` was read from."""
        return self.raw[self.starts[index] : self.ends[index]]


def address_body(raw: bytes, key: str) -> AddressedBody | None:
    """``raw`` parsed, its list ``key`` addressed; ``None`` when ``raw`` is not such a body or not plain UTF-8 JSON."""
    if json.detect_encoding(raw) != "utf-8":
        return None
    try:
        text = raw.decode("utf-8", "surrogatepass")
        reader = _Reader(text, key)
        i = _ws(text, 0)
        if not text.startswith("{", i):
            return None
        i = reader.members(_ws(text, i + 1), first=True)
        if _ws(text, i) != len(text) or reader.items is None or reader.repeated:
            return None
    except ValueError:  # malformed: json.loads raises the error the caller reports
        return None
    starts, ends = _byte_offsets(text, len(raw), reader.starts, reader.ends)
    body = dict(reader.pairs)
    return AddressedBody(raw=raw, body=body, key=key, lead=reader.lead, starts=starts, ends=ends)


def extend_body(raw: bytes, base: AddressedBody, through: int) -> AddressedBody | None:
    """``raw`` read as ``base``'s items up to ``through`` (included) and what its bytes say after them.

    ``None`` when ``raw`` does not start with ``base``'s bytes up to the end of item ``through``, or
    what follows is not the rest of such a body.
    """
    if not 0 <= through < len(base.ends):
        return None
    cut = base.ends[through]
    if len(raw) <= cut or not raw.startswith(memoryview(base.raw)[:cut]):
        return None
    try:
        text = raw[cut:].decode("utf-8", "surrogatepass")
        reader = _Reader(text, base.key)
        reader.items, reader.starts, reader.ends = list(base.body[base.key][: through + 1]), [], []
        i = reader.more_items(0)
        reader.pairs = [*base.lead, (base.key, reader.items)]
        i = reader.more_members(i)
        if _ws(text, i) != len(text) or reader.repeated:
            return None
    except ValueError:
        return None
    starts, ends = _byte_offsets(text, len(raw) - cut, reader.starts, reader.ends)
    return AddressedBody(
        raw=raw,
        body=dict(reader.pairs),
        key=base.key,
        lead=base.lead,
        starts=[*base.starts[: through + 1], *(cut + s for s in starts)],
        ends=[*base.ends[: through + 1], *(cut + e for e in ends)],
    )


class _Reader:
    """Reads an object's members and one list's items, item by item, with the C scanner json.loads uses."""

    def __init__(self, text: str, key: str) -> None:
        self.text = text
        self.key = key
        self.pairs: list[tuple[str, Any]] = []
        self.lead: tuple[tuple[str, Any], ...] = ()
        self.items: list[Any] | None = None
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.repeated = False

    def members(self, i: int, *, first: bool) -> int:
        """Read members from ``i`` (just inside ``{`` when ``first``) to the index after the closing ``}``."""
        text = self.text
        if first and text.startswith("}", i):
            return i + 1
        while True:
            if not text.startswith('"', i):
                raise ValueError("expected a member name")
            name, i = json.decoder.scanstring(text, i + 1)  # type: ignore[attr-defined]
            i = _ws(text, i)
            if not text.startswith(":", i):
                raise ValueError("expected ':'")
            i = _ws(text, i + 1)
            if name == self.key and text.startswith("[", i):
                if self.items is not None:
                    raise ValueError("the list is given twice")  # json.loads keeps the last: not followed here
                self.lead, self.items = tuple(self.pairs), []
                self.pairs.append((name, self.items))
                i = _ws(text, i + 1)
                i = i + 1 if text.startswith("]", i) else self.more_items(self._item(i))
            else:
                value, i = _DECODER.raw_decode(text, i)
                self.repeated = self.repeated or name == self.key
                self.pairs.append((name, value))
            i = _ws(text, i)
            if text.startswith("}", i):
                return i + 1
            if not text.startswith(",", i):
                raise ValueError("expected ',' or '}'")
            i = _ws(text, i + 1)

    def more_members(self, i: int) -> int:
        """After a member's value: the remaining members, to the index after the closing ``}``."""
        i = _ws(self.text, i)
        if self.text.startswith("}", i):
            return i + 1
        if not self.text.startswith(",", i):
            raise ValueError("expected ',' or '}'")
        return self.members(_ws(self.text, i + 1), first=False)

    def more_items(self, i: int) -> int:
        """After an item: the remaining items, to the index after the closing ``]``."""
        text = self.text
        while True:
            i = _ws(text, i)
            if text.startswith("]", i):
                return i + 1
            if not text.startswith(",", i):
                raise ValueError("expected ',' or ']'")
            i = self._item(_ws(text, i + 1))

    def _item(self, i: int) -> int:
        assert self.items is not None
        value, end = _DECODER.raw_decode(self.text, i)
        self.items.append(value)
        self.starts.append(i)
        self.ends.append(end)
        return end


def _ws(text: str, i: int) -> int:
    match = _WHITESPACE.match(text, i)
    assert match is not None  # the pattern matches the empty string
    return match.end()


def _byte_offsets(text: str, size: int, starts: list[int], ends: list[int]) -> tuple[list[int], list[int]]:
    """Character offsets into ``text`` as byte offsets into its UTF-8 encoding (``size`` bytes)."""
    if len(text) == size:  # ASCII: the same
        return starts, ends
    marks = sorted({*starts, *ends})
    where: dict[int, int] = {}
    chars = octets = 0
    for mark in marks:
        octets += len(text[chars:mark].encode("utf-8", "surrogatepass"))
        chars = mark
        where[mark] = octets
    return [where[s] for s in starts], [where[e] for e in ends]
