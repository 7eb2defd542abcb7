"""Rendered model requests, read from any agent's JSONL log one line at a time.

Each line is one request payload in call order: OpenAI Chat Completions, OpenAI Responses,
Anthropic Messages or Gemini ``generateContent``, read by that format's wire codec
(:mod:`contextwarden.wire`). The format is detected per line, so a log that switches provider mid-way reads
fine. A line may also wrap the payload as ``{"request": {...}, "response": {...}}`` (or under
``body``, ``payload`` or ``params``), as logging proxies write; the response's usage is kept.

A payload becomes a :class:`Request`: its system items, tool schemas and conversation items, each
with a digest of its bytes (provider cache markers left out, since they do not change the cached
text), a token count and a label naming where it sits in the payload. Only the previous request's
counts are remembered, so reading is O(new items) per line and memory stays bounded however long
the log: a 100K-line file streams through.

A line that is not valid JSON (a log cut off mid-write) or not a request becomes a :class:`BadLine`
and reading goes on. A payload of a known format whose items its codec rejects (a message that is
no object) is counted as a request with no items and ``unreadable`` set to the codec's error: it is
not compared with its neighbours.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable, Iterator, Mapping
from typing import IO, Any

from ..errors import ImportFormatError
from ..tokens import HeuristicCounter, TokenCounter
from ..wire import detect_format, get_codec
from ._formats import ItemBuilder, response_usage, unwrap
from ._items import BadLine, Request, RequestFormat, RequestItem, RequestUsage, Section, fragment_tag

__all__ = [
    "BadLine",
    "Request",
    "RequestFormat",
    "RequestItem",
    "RequestReader",
    "RequestUsage",
    "Section",
    "detect_format",
    "fragment_tag",
    "read_requests",
]


class RequestReader:
    """Turns payloads into :class:`Request` objects, counting each distinct item once.

    Counts are remembered by item digest in a table of at most ``max_remembered`` entries; when it
    fills up it starts again from the current request, so memory stays bounded on any log.
    """

    def __init__(self, *, counter: TokenCounter | None = None, max_remembered: int = 50_000) -> None:
        self.counter = counter or HeuristicCounter()
        self.max_remembered = max_remembered
        self._known: dict[bytes, int] = {}
        self._number = 0

    def parse(self, raw: Mapping[str, Any], *, line: int = 0) -> Request | BadLine:
        """Read one payload (possibly wrapped with its response); a :class:`BadLine` when it is no request."""
        payload, fmt, response = unwrap(raw)
        if fmt is None:
            return BadLine(line=line, error="not a request payload: no 'messages', 'input' or 'contents' list")
        if len(self._known) > self.max_remembered:
            self._known = {}
        builder = ItemBuilder(self.counter, self._known)
        unreadable = ""
        try:
            builder.request(get_codec(fmt).parse_request(payload))
        except ImportFormatError as exc:
            unreadable = str(exc)
        self._number += 1
        return Request(
            number=self._number,
            line=line,
            format=fmt,
            model=str(payload.get("model", "")),
            system=tuple(builder.system),
            tools=tuple(builder.tools),
            messages=tuple(builder.messages),
            stateful=bool(payload.get("previous_response_id") or payload.get("conversation")),
            unreadable=unreadable,
            usage=response_usage(response),
        )

    def parse_line(self, data: bytes | str, *, line: int = 0) -> Request | BadLine | None:
        """Read one JSONL line; ``None`` for a blank line."""
        data = data.strip()
        if not data:
            return None
        try:
            raw = json.loads(data)
        except (ValueError, RecursionError) as exc:
            return BadLine(line=line, error=f"truncated or invalid JSON: {exc}")
        if not isinstance(raw, Mapping):
            return BadLine(line=line, error=f"not a JSON object but {type(raw).__name__}")
        return self.parse(raw, line=line)


def read_requests(
    source: str | os.PathLike[str] | IO[bytes] | Iterable[bytes | str], *, counter: TokenCounter | None = None
) -> Iterator[Request | BadLine]:
    """Stream the requests of a JSONL log (a path, ``"-"`` for stdin, a binary file or an iterable of lines)."""
    reader = RequestReader(counter=counter)
    if isinstance(source, (str, os.PathLike)):
        if str(source) == "-":
            yield from _read_lines(reader, sys.stdin.buffer)
            return
        with open(source, "rb") as handle:
            yield from _read_lines(reader, handle)
        return
    yield from _read_lines(reader, source)


def _read_lines(reader: RequestReader, lines: Iterable[bytes | str]) -> Iterator[Request | BadLine]:
    for number, data in enumerate(lines, start=1):
        parsed = reader.parse_line(data, line=number)
        if parsed is not None:
            yield parsed
