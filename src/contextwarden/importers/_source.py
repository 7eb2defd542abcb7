"""Reading a transcript file: bytes to a parsed JSON document or JSON Lines records, safely.

Transcripts are foreign and untrusted: they are only ever parsed with :func:`json.loads` (never
evaluated, never unpickled). A binary file, text that is not UTF-8, or JSON that is malformed gives an
:class:`~contextwarden.errors.ImportFormatError` naming the file and the line (and column). A JSON
Lines file cut off in the middle of its last line keeps every complete line and says what it dropped.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ..errors import ImportFormatError
from ._common import Transcript


@dataclass(frozen=True, kw_only=True)
class SourceDocument:
    """A transcript file parsed once, before any format-specific reading."""

    path: str
    """The file it came from (used in every error and warning)."""
    document: Any = None
    """The parsed JSON document (``None`` for JSON Lines)."""
    lines: tuple[tuple[int, dict[str, Any]], ...] = ()
    """For JSON Lines: ``(line number, record)`` for every valid line, in order."""
    is_jsonl: bool = False
    """Whether the file is JSON Lines."""
    warnings: tuple[str, ...] = ()
    """What reading dropped (a truncated last line)."""


@dataclass(frozen=True, kw_only=True)
class ImportOptions:
    """How to read one file; grows without breaking importers."""

    format: str
    """The format to read it as (detected or forced by the caller)."""


class Importer(Protocol):
    """One transcript format: a parsed file in, a :class:`Transcript` out."""

    def __call__(self, doc: SourceDocument, options: ImportOptions) -> Transcript:
        """Read ``doc`` as ``options.format``; on bad input raise ``ImportFormatError`` naming the place."""
        ...


def read_source(path: str | Path) -> SourceDocument:
    """Read and parse ``path`` as a JSON document or as JSON Lines."""
    name = str(path)
    raw = Path(path).read_bytes()
    text = _decode(raw, name)
    stripped = text.lstrip()
    if not stripped:
        raise ImportFormatError(f"{name}: the file is empty")
    if stripped[0] not in "{[":
        raise ImportFormatError(f"{name}: not a JSON or JSON Lines transcript (it starts with {stripped[:20]!r})")
    try:
        return SourceDocument(path=name, document=json.loads(text))
    except RecursionError:
        raise ImportFormatError(f"{name}: JSON nested too deeply to read") from None
    except json.JSONDecodeError as whole_error:
        first = _first_line(text)
        if first is not None and _is_json_object(first):
            return _read_lines(text, name)
        raise ImportFormatError(
            f"{name}: line {whole_error.lineno} column {whole_error.colno}: invalid JSON: {whole_error.msg}"
        ) from None


def _decode(raw: bytes, name: str) -> str:
    nul = raw.find(b"\x00")
    if nul >= 0:
        raise ImportFormatError(f"{name}: binary data (a NUL byte at offset {nul}); not a transcript")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        # A file cut off inside a multi-byte character on its last line is a truncation, not junk.
        tail_start = raw.rfind(b"\n") + 1
        if exc.reason == "unexpected end of data" and exc.start >= tail_start:
            return raw[: exc.start].decode("utf-8-sig")
        raise ImportFormatError(
            f"{name}: not UTF-8 text (invalid byte at offset {exc.start}); is it a binary file?"
        ) from None


def _first_line(text: str) -> str | None:
    for line in text.splitlines():
        if line.strip():
            return line
    return None


def _is_json_object(line: str) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except (ValueError, RecursionError):
        return False


def _read_lines(text: str, name: str) -> SourceDocument:
    raw_lines = text.split("\n")
    last = max((i for i, line in enumerate(raw_lines) if line.strip()), default=-1)
    ends_with_newline = text.endswith("\n")
    records: list[tuple[int, dict[str, Any]]] = []
    warnings: list[str] = []
    for index, line in enumerate(raw_lines):
        if not line.strip():
            continue
        number = index + 1
        try:
            value = json.loads(line)
        except RecursionError:
            raise ImportFormatError(f"{name}: line {number}: JSON nested too deeply to read") from None
        except json.JSONDecodeError as exc:
            if index == last and (not ends_with_newline or _ran_out(exc, line)):
                warnings.append(f"dropped truncated last line {number} ({len(line)} characters)")
                continue
            raise ImportFormatError(f"{name}: line {number} column {exc.colno}: invalid JSON: {exc.msg}") from None
        if not isinstance(value, dict):
            raise ImportFormatError(
                f"{name}: line {number}: expected a JSON object per line, got {type(value).__name__}"
            )
        records.append((number, value))
    if not records:
        raise ImportFormatError(f"{name}: no complete JSON line to import")
    return SourceDocument(path=name, lines=tuple(records), is_jsonl=True, warnings=tuple(warnings))


def _ran_out(exc: json.JSONDecodeError, line: str) -> bool:
    """Whether the decoder failed because the line ended early (a cut, not a corruption)."""
    return exc.msg.startswith("Unterminated string") or exc.pos >= len(line.rstrip())
