"""Reading a transcript file: bytes to a parsed JSON document or JSON Lines records, safely.

Transcripts are foreign and untrusted: they are only ever parsed with :func:`json.loads` (never
evaluated, never unpickled). A binary file, text that is not UTF-8, or JSON that is malformed gives an
:class:`~contextwarden.errors.ImportFormatError` naming the file and the line (and column). A JSON
Lines file cut off in the middle of its last line keeps every complete line and says what it dropped.
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Protocol

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
    """Read and parse ``path`` as a JSON document or as JSON Lines.

    JSON Lines is read a line at a time, so the file's text is never held whole beside its records.
    Lone UTF-16 surrogate escapes (``"\ud800"``), which are valid JSON but no valid text, are replaced
    with U+FFFD here, once for every importer, and counted in a warning.
    """
    name = str(path)
    with open(path, "rb") as fh:
        # A binary file is named as such before its first bytes fail to decode as UTF-8.
        nul = fh.read(_SNIFF_BYTES).find(b"\x00")
        if nul >= 0:
            raise ImportFormatError(f"{name}: binary data (a NUL byte at offset {nul}); not a transcript")
        fh.seek(0)
        first, offset, number = _first_nonblank_line(fh, name)
        if first is None:
            raise ImportFormatError(f"{name}: the file is empty")
        stripped = first.lstrip()
        skipped: list[tuple[int, str]] = []
        while stripped[0] not in "{[":
            # Lines a shell or wrapper printed before the capture (``bash: no job control in this shell``)
            skipped.append((number, stripped.rstrip()))
            fh.seek(offset)
            fh.readline()
            more, offset, number = _first_nonblank_line(fh, name, offset=fh.tell(), number=number + 1)
            if more is None or len(skipped) >= _MAX_PREAMBLE_LINES:
                raise ImportFormatError(
                    f"{name}: not a JSON or JSON Lines transcript (it starts with {skipped[0][1][:20]!r})"
                )
            first, stripped = more, more.lstrip()
        preamble = _preamble_warning(skipped)
        value = _parse_object_line(first)
        if value is not None:
            rest = fh.read(1)
            while rest and rest.isspace():
                rest = fh.read(1)
            if not rest:  # one line holding one object: a JSON document
                return _warned(_scrubbed(SourceDocument(path=name, document=value), first), preamble)
            fh.seek(offset)
            return _warned(_read_lines(fh, name, offset, number), preamble)
        fh.seek(offset)
        raw = fh.read()
    text = _decode(raw, name, offset, last=True)
    del raw  # the text alone is enough from here on
    try:
        document = json.loads(text)
    except RecursionError:
        raise ImportFormatError(f"{name}: JSON nested too deeply to read") from None
    except json.JSONDecodeError as exc:
        raise ImportFormatError(f"{name}: line {exc.lineno} column {exc.colno}: invalid JSON: {exc.msg}") from None
    return _warned(_scrubbed(SourceDocument(path=name, document=document), text), preamble)


_MAX_PREAMBLE_LINES = 20
"""Leading non-JSON lines skipped before a file is called no transcript."""


def _preamble_warning(skipped: list[tuple[int, str]]) -> str:
    if not skipped:
        return ""
    shown = "; ".join(f"line {n}: {text[:80]!r}" for n, text in skipped)
    return f"skipped {len(skipped)} leading line(s) that are not JSON ({shown})"


def _warned(doc: SourceDocument, warning: str) -> SourceDocument:
    return dataclasses.replace(doc, warnings=(warning, *doc.warnings)) if warning else doc


def _decode(raw: bytes, name: str, offset: int, *, last: bool) -> str:
    """Decode one line (or the whole file) starting at file offset ``offset``; errors name the file offset."""
    nul = raw.find(b"\x00")
    if nul >= 0:
        raise ImportFormatError(f"{name}: binary data (a NUL byte at offset {offset + nul}); not a transcript")
    try:
        return raw.decode("utf-8-sig" if offset == 0 else "utf-8")
    except UnicodeDecodeError as exc:
        # A file cut off inside a multi-byte character on its last line is a truncation, not junk.
        tail_start = raw.rfind(b"\n") + 1
        if last and exc.reason == "unexpected end of data" and exc.start >= tail_start:
            return raw[: exc.start].decode("utf-8-sig" if offset == 0 else "utf-8")
        raise ImportFormatError(
            f"{name}: not UTF-8 text (invalid byte at offset {offset + exc.start}); is it a binary file?"
        ) from None


def _first_nonblank_line(fh: IO[bytes], name: str, *, offset: int = 0, number: int = 1) -> tuple[str | None, int, int]:
    """The first line from ``offset`` (line ``number``) holding more than white space, its offset and number."""
    for line_number, raw in enumerate(fh, start=number):
        if raw.strip():
            return _decode(raw, name, offset, last=not raw.endswith(b"\n")), offset, line_number
        offset += len(raw)
    return None, offset, 0


def _parse_object_line(line: str) -> dict[str, Any] | None:
    try:
        value = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _read_lines(fh: IO[bytes], name: str, offset: int, number: int) -> SourceDocument:
    records: list[tuple[int, dict[str, Any]]] = []
    warnings: list[str] = []
    replaced = 0
    pending: tuple[int, str, json.JSONDecodeError] | None = None  # a bad line that may be the cut last one
    for raw in fh:
        start, offset = offset, offset + len(raw)
        line_number, number = number, number + 1
        if not raw.strip():
            continue
        if pending is not None:  # a bad line with a non-blank line after it is a corruption
            raise _bad_line(name, *pending)
        ends = raw.endswith(b"\n")
        line = _decode(raw, name, start, last=not ends).removesuffix("\n")  # columns count within the line
        try:
            value = json.loads(line)
        except RecursionError:
            raise ImportFormatError(f"{name}: line {line_number}: JSON nested too deeply to read") from None
        except json.JSONDecodeError as exc:
            if not ends or _ran_out(exc, line):
                pending = (line_number, line, exc)
                continue
            raise _bad_line(name, line_number, line, exc) from None
        if not isinstance(value, dict):
            raise ImportFormatError(
                f"{name}: line {line_number}: expected a JSON object per line, got {type(value).__name__}"
            )
        if _SURROGATE_ESCAPE.search(line):
            value, count = _replace_surrogates(value)
            replaced += count
        records.append((line_number, value))
    if pending is not None:
        warnings.append(f"dropped truncated last line {pending[0]} ({len(pending[1])} characters)")
    if not records:
        raise ImportFormatError(f"{name}: no complete JSON line to import")
    if replaced:
        warnings.append(_surrogate_warning(replaced))
    return SourceDocument(path=name, lines=tuple(records), is_jsonl=True, warnings=tuple(warnings))


def _bad_line(name: str, number: int, line: str, exc: json.JSONDecodeError) -> ImportFormatError:
    return ImportFormatError(f"{name}: line {number} column {exc.colno}: invalid JSON: {exc.msg}")


_SNIFF_BYTES = 64 * 1024
# A JSON escape of a UTF-16 surrogate; only text holding one can decode to a lone surrogate.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _scrubbed(doc: SourceDocument, text: str) -> SourceDocument:
    if not _SURROGATE_ESCAPE.search(text):
        return doc
    document, count = _replace_surrogates(doc.document)
    if not count:
        return doc
    return dataclasses.replace(doc, document=document, warnings=(*doc.warnings, _surrogate_warning(count)))


def _surrogate_warning(count: int) -> str:
    return (
        f"replaced {count} lone UTF-16 surrogate escape(s) (\\ud800-\\udfff without a partner), "
        "which are no valid text, with U+FFFD"
    )


def _replace_surrogates(value: Any) -> tuple[Any, int]:
    """``value`` with every lone surrogate in its strings (keys too) replaced by U+FFFD, and how many.

    Iterative, so a document nested as deeply as the JSON parser allows cannot overflow the stack here.
    """
    count = 0

    def clean(text: str) -> str:
        nonlocal count
        fixed, n = _LONE_SURROGATE.subn("\ufffd", text)
        count += n
        return fixed

    if isinstance(value, str):
        return clean(value), count
    root: list[Any] = [value]
    stack: list[Any] = [root]
    while stack:
        container = stack.pop()
        if isinstance(container, list):
            for index, item in enumerate(container):
                if isinstance(item, str):
                    container[index] = clean(item)
                elif isinstance(item, (list, dict)):
                    stack.append(item)
        else:
            for key in list(container):
                item = container[key]
                if isinstance(key, str) and _LONE_SURROGATE.search(key):
                    del container[key]
                    key = clean(key)
                if isinstance(item, str):
                    item = clean(item)
                elif isinstance(item, (list, dict)):
                    stack.append(item)
                container[key] = item
    return root[0], count


def _ran_out(exc: json.JSONDecodeError, line: str) -> bool:
    """Whether the decoder failed because the line ended early (a cut, not a corruption)."""
    return exc.msg.startswith("Unterminated string") or exc.pos >= len(line.rstrip())
