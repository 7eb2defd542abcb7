"""Reading a response while it passes through: SSE framing, content decoding, the wire accumulators.

The client gets the upstream's bytes untouched; this module reads a copy. A response the tee cannot
read (an encoding it does not know, a malformed event) only means the turn is not recorded from the
stream; the bytes still reach the client.
"""

from __future__ import annotations

import json
import zlib
from typing import Any

from ..log.events import AssistantMessage, UsageReport
from ..wire import get_codec
from .gemini import stream_finished


def decoder(encoding: str) -> Any | None:
    """An incremental decoder for a ``content-encoding`` (identity, gzip, deflate), else ``None``."""
    encoding = encoding.strip().lower()
    if encoding in ("", "identity"):
        return _Identity()
    if encoding in ("gzip", "x-gzip", "deflate"):
        return zlib.decompressobj(wbits=47)  # 32 + 15: detect a gzip or zlib header
    return None


_TERMINAL = frozenset({"message_stop", "response.completed", "response.failed", "response.incomplete"})
"""Event names that end a stream (OpenAI Chat ends with ``data: [DONE]``)."""


class _Identity:
    def decompress(self, data: bytes) -> bytes:
        return data


class StreamTee:
    """Feeds a copy of an SSE byte stream into the wire format's stream accumulator."""

    def __init__(self, fmt: str, encoding: str) -> None:
        """Read a stream of format ``fmt`` sent with ``content-encoding`` ``encoding``."""
        self.fmt = fmt
        self.accumulator = get_codec(fmt).stream_accumulator()
        self._decoder = decoder(encoding)
        self._buffer = b""
        self.broken = self._decoder is None
        self.events = 0
        self.done = False
        """Whether the stream's terminal event has arrived (the answer is complete)."""

    def feed(self, chunk: bytes) -> None:
        """Take the next raw bytes of the stream."""
        if self.broken or self._decoder is None:
            return
        try:
            self._buffer += self._decoder.decompress(chunk)
            *complete, self._buffer = self._buffer.replace(b"\r\n", b"\n").split(b"\n\n")
            for frame in complete:
                self._event(frame)
        except (ValueError, zlib.error, KeyError, TypeError):
            self.broken = True

    def _event(self, frame: bytes) -> None:
        name, data = "", []
        for line in frame.decode("utf-8").split("\n"):
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].lstrip(" "))
        text = "\n".join(data)
        if text == "[DONE]" or name in _TERMINAL:
            self.done = True
        if not text or text == "[DONE]":
            return
        self.events += 1
        data = json.loads(text)
        self.accumulator.feed(name, data)
        if self.fmt == "gemini" and stream_finished(data):  # Gemini names no events: the last chunk says so
            self.done = True

    def result(self) -> tuple[AssistantMessage | None, UsageReport | None]:
        """The turn the stream amounted to, or ``(None, None)`` when it could not be read."""
        if self.broken or not self.events:
            return None, None
        return self.accumulator.result()


def parse_body(fmt: str, raw: bytes, encoding: str) -> tuple[AssistantMessage | None, UsageReport | None]:
    """A non-streamed response body (or a Gemini stream sent as one JSON array) as the turn and usage it reports."""
    dec = decoder(encoding)
    if dec is None:
        return None, None
    body = json.loads(dec.decompress(raw))
    if fmt == "gemini" and isinstance(body, list):  # ``streamGenerateContent`` without ``alt=sse``: one array
        accumulator = get_codec(fmt).stream_accumulator()
        for chunk in body:
            accumulator.feed("", chunk)
        return accumulator.result()
    return get_codec(fmt).parse_response(body)
