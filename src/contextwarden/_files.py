"""Reading files that end up in the model's view, refusing what must not get there.

Rule files, system prompt files and skills are read through :func:`read_text_file`: links out of the
project, non-regular files, unreadable files and binary content are refused with a note; oversized
files are cut at a byte limit (never in the middle of a UTF-8 character).
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

_BINARY_PROBE = 8192
_PLAIN_NAME = re.compile(r"[A-Za-z0-9._:=+,@-]{1,100}")


def safe_file_name(name: str) -> str:
    """A file name for ``name`` (a session id, a transcript's name) that stays inside its folder.

    A plain name (letters, digits and ``._-:=+,@``, up to 100; not ``.`` or ``..``) is kept as it is. Any
    other has each other character replaced by ``_`` and a hash of the whole name appended, so two
    names never share a file and none climbs out of the folder or names a device.
    """
    if _PLAIN_NAME.fullmatch(name) and name.strip("."):
        return name
    plain = re.sub(r"[^A-Za-z0-9_:=+,@-]", "_", name)[:80]
    return f"{plain}-{hashlib.sha256(name.encode('utf-8', 'surrogatepass')).hexdigest()[:12]}"


@dataclass(frozen=True)
class FileRead:
    """The outcome of :func:`read_text_file`: text, or a note saying why there is none."""

    text: str | None
    """The (possibly cut) text, or ``None`` when the file was refused."""
    size: int = 0
    """The file's full size in bytes."""
    truncated: bool = False
    """Whether the text stops at the byte limit."""
    note: str | None = None
    """Why the file was refused, in words for the user."""


def _decode(data: bytes, truncated: bool) -> str | None:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        # A cut can split a multi-byte character: drop the partial tail rather than call it binary.
        if truncated and exc.reason == "unexpected end of data" and exc.start >= len(data) - 3:
            return data[: exc.start].decode("utf-8", errors="strict")
        return None


def read_text_file(path: Path, *, limit: int, within: Path | None = None) -> FileRead:
    """Read at most ``limit`` bytes of a UTF-8 text file, refusing what must not reach the model.

    Links that resolve outside ``within``, non-regular files, unreadable files and binary content are
    refused with a note; a larger file is cut at ``limit`` bytes (``truncated``).
    """
    try:
        real = path.resolve(strict=True)
    except (OSError, RuntimeError):
        return FileRead(None, note=f"skipped {path}: a broken or looping symbolic link")
    if within is not None and not real.is_relative_to(within):
        return FileRead(None, note=f"skipped {path}: it links to {real}, outside the project {within}")
    if not real.is_file():
        return FileRead(None, note=f"skipped {path}: not a regular file")
    try:
        with open(real, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            data = fh.read(max(limit, _BINARY_PROBE) + 1)
    except OSError as exc:
        return FileRead(None, note=f"skipped {path}: cannot read it ({exc.strerror or exc})")
    if b"\0" in data[:_BINARY_PROBE]:
        return FileRead(None, note=f"skipped {path}: binary content")
    truncated = len(data) > limit
    text = _decode(data[:limit], truncated)
    if text is None:
        return FileRead(None, note=f"skipped {path}: not UTF-8 text")
    return FileRead(text.removeprefix("\ufeff"), size=max(size, len(data)), truncated=truncated)
