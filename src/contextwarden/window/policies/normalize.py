r"""Tool-output normalizers: the first step of a tool policy, before truncation.

Two levels, both pure and idempotent:

- :func:`sanitize_output` only makes text safe to send: NUL bytes become the visible text
  ``\\x00`` and undecodable bytes (lone surrogates, which is how the log keeps invalid UTF-8)
  become ``\\xNN``. Line structure and every other character stay as they are, so file
  contents remain exact for editing tools.
- :func:`normalize_output` is for terminal output: it sanitizes, strips ANSI escape
  sequences, keeps only the final state of carriage-return progress lines, applies backspaces,
  escapes other control characters, and collapses runs of three or more identical lines into
  one line plus a note saying how many repeats were removed.

The log always keeps the original output; these functions shape only the projection.
"""

from __future__ import annotations

import itertools
import operator
import re
from dataclasses import dataclass

__all__ = ["REPEAT_NOTE", "NormalizedOutput", "normalize_output", "sanitize_output", "strip_escapes"]

REPEAT_NOTE = "[... previous line repeated {n} more times]"
"""The line that replaces the repeats of a collapsed run (``{n}`` is how many were removed)."""

# CSI (ESC [ ... final), OSC/DCS/SOS/PM/APC strings (terminated by BEL or ST, or unterminated
# up to the end of the line), charset designations (ESC ( B) and two-byte escapes (ESC 7, ESC =).
_ANSI = re.compile(
    r"""
    \x1b\[[0-?]*[ -/]*[@-~]                          # CSI
    | \x1b[\]PX^_][^\x07\x1b\n]*(?:\x07|\x1b\\)?     # OSC, DCS, SOS, PM, APC
    | \x1b[()*+\-./][ -~]                            # charset designation
    | \x1b[ -/]*[0-~]                                # other escapes (Fp, Fe, Fs)
    | \x9b[0-?]*[ -/]*[@-~]                          # 8-bit CSI
    """,
    re.VERBOSE,
)
# Control characters that survive the steps above; tab and newline are kept.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_UNSAFE = re.compile(r"[\x00\ud800-\udfff]")
_C0_BYTES = bytes(b for b in range(32) if b not in (9, 10)) + b"\x7f"
_C1_UTF8 = re.compile(rb"\xc2[\x80-\x9f]")


@dataclass(frozen=True, kw_only=True)
class NormalizedOutput:
    """A normalized tool output and what was done to it."""

    text: str
    """The text the model may see."""
    notes: tuple[str, ...] = ()
    """One short sentence per kind of change, in a fixed order (empty when nothing changed)."""


def strip_escapes(text: str) -> str:
    """``text`` without terminal escape sequences (colours, cursor moves, titles, hyperlinks, screen clears)."""
    return _ANSI.sub("", text)


def _escape_char(match: re.Match[str]) -> str:
    code = ord(match.group())
    if 0xDC80 <= code <= 0xDCFF:
        # surrogateescape maps an undecodable byte 0xNN to U+DCNN: show the byte.
        return f"\\x{code - 0xDC00:02x}"
    if 0xD800 <= code <= 0xDFFF:
        return f"\\u{code:04x}"
    return f"\\x{code:02x}"


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}" if n == 1 else f"{n:,} {word}s"


def _has_surrogates(text: str) -> bool:
    if text.isascii():
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _has_controls(text: str) -> bool:
    """Whether ``text`` holds a control character other than tab and newline (C-speed checks)."""
    data = text.encode("utf-8", "surrogatepass")
    if len(data.translate(None, _C0_BYTES)) != len(data):
        return True
    return not text.isascii() and _C1_UTF8.search(data) is not None


def sanitize_output(text: str) -> NormalizedOutput:
    """Make ``text`` safe to send without changing its lines: escape NUL bytes and undecodable bytes."""
    if "\x00" not in text and not _has_surrogates(text):
        return NormalizedOutput(text=text)
    nul = text.count("\x00")
    escaped, total = _UNSAFE.subn(_escape_char, text)
    notes = []
    if nul:
        notes.append(f"escaped {_plural(nul, 'NUL byte')} as \\x00")
    if total - nul:
        notes.append(f"escaped {_plural(total - nul, 'undecodable byte')} as \\xNN")
    return NormalizedOutput(text=escaped, notes=tuple(notes))


def _last_state(line: str) -> str:
    """Return the last visible state of a line redrawn with carriage returns."""
    for segment in reversed(line.split("\r")):
        if segment.strip():
            return segment
    return ""


def _apply_backspaces(line: str) -> str:
    out: list[str] = []
    for char in line:
        if char == "\b":
            if out:
                out.pop()
        else:
            out.append(char)
    return "".join(out)


def _collapse_progress(text: str) -> tuple[str, int]:
    """Keep the final state of each carriage-return line; returns the text and the lines collapsed."""
    if "\r" not in text and "\b" not in text:
        return text, 0
    lines = text.split("\n")
    changed = 0
    for i, line in enumerate(lines):
        if "\r" in line:
            lines[i] = _last_state(line)
            changed += 1
        if "\b" in lines[i]:
            lines[i] = _apply_backspaces(lines[i])
    return "\n".join(lines), changed


def _collapse_runs_once(lines: list[str]) -> tuple[list[str], int, int]:
    out: list[str] = []
    runs = removed = 0
    for line, group in itertools.groupby(lines):
        n = sum(1 for _ in group)
        if n >= 3:
            out.append(line)
            out.append(REPEAT_NOTE.format(n=n - 1))
            runs += 1
            removed += n - 2
        else:
            out.extend([line] * n)
    return out, runs, removed


def _has_run(lines: list[str]) -> bool:
    """Whether three consecutive lines are equal (map/zip keep the loop in C)."""
    pairs = list(map(operator.eq, lines, itertools.islice(lines, 1, None)))
    return any(map(operator.and_, pairs, itertools.islice(pairs, 1, None)))


def _collapse_runs(text: str) -> tuple[str, int, int]:
    """Collapse runs of 3+ identical lines; returns the text, the runs and the lines removed."""
    body, newline, _ = text.rpartition("\n") if text.endswith("\n") else (text, "", "")
    lines = body.split("\n")
    if not _has_run(lines):
        return text, 0, 0
    total_runs = total_removed = 0
    # A note line can itself line up with identical neighbours; repeat until nothing changes
    # so that normalizing twice gives the same text.
    while True:
        lines, runs, removed = _collapse_runs_once(lines)
        if not runs:
            break
        total_runs += runs
        total_removed += removed
    if not total_runs:
        return text, 0, 0
    return "\n".join(lines) + newline, total_runs, total_removed


def normalize_output(text: str) -> NormalizedOutput:
    """Normalize terminal output for the model: strip ANSI, collapse progress bars and repeats.

    Idempotent: ``normalize_output(normalize_output(t).text).text == normalize_output(t).text``.
    """
    notes: list[str] = []
    if "\r\n" in text:
        text = text.replace("\r\n", "\n")
    if "\x1b" in text or "\x9b" in text:
        text, n = _ANSI.subn("", text)
        if n:
            notes.append(f"stripped {_plural(n, 'ANSI escape sequence')}")
    text, n = _collapse_progress(text)
    if n:
        notes.append(f"kept the final state of {_plural(n, 'carriage-return progress line')}")
    safe = sanitize_output(text)
    text = safe.text
    notes.extend(safe.notes)
    n = 0
    if _has_controls(text):
        text, n = _CONTROL.subn(_escape_char, text)
    if n:
        notes.append(f"escaped {_plural(n, 'control character')} as \\xNN")
    text, runs, removed = _collapse_runs(text)
    if runs:
        notes.append(f"collapsed {_plural(runs, 'run')} of repeated lines ({_plural(removed, 'line')} removed)")
    return NormalizedOutput(text=text, notes=tuple(notes))
