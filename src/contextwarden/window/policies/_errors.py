"""Finding error-like lines in long output, fast.

A plain case-insensitive regex over 100 MB of text takes minutes in Python's ``re`` (every
position is a possible start). Instead the text is scanned in line-aligned chunks: each chunk
is lowercased and searched for a few literal keywords with ``str.find`` (C speed), and only the
lines that contain a keyword are checked with the precise pattern.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Literal keywords, lowercase: every line the precise pattern accepts contains one of them.
_KEYWORDS: tuple[str, ...] = (
    "error",
    "err!",
    "exception",
    "fail",
    "fatal",
    "panic",
    "traceback",
    "assert",
    "segmentation fault",
    "core dumped",
    "abort",
    "not found",
    "no such file",
    "permission denied",
    "out of memory",
    "undefined reference",
    "timed out",
    "exit",
    "killed",
    "错误",
    "失败",
    "异常",
    "\u2717",  # ✗
    "\u2718",  # ✘
    "\u2715",  # ✕
)

# Applied to a lowercased line.
_PRECISE = re.compile(
    r"""
    (?:error|exception)s?\b                 # ValueError, errors, RuntimeException (not error_code)
    | \berr!                                # npm ERR!
    | \bfail(?:s|ed|ure|ures|ing)?\b
    | \bfatal\b | \bpanic(?:ked|s)?\b | \btraceback\b | \bassert(?:ion|ions)?\b
    | segmentation\ fault | core\ dumped | \babort(?:ed)?\b
    | command\ not\ found | no\ such\ file | permission\ denied | out\ of\ memory
    | undefined\ reference | \btimed\ out\b | \bkilled\b | 错误 | 失败 | 异常
    | non-zero\ exit | exit(?:ed)?(?:\ with)?\ (?:code|status)\s*[:=]?\s*-?[1-9]
    | [\u2717\u2718\u2715]
    """,
    re.VERBOSE,
)
# Phrases that mention errors while reporting none ("0 errors", "failed: 0").
_ZERO = re.compile(
    r"\b(?:0|no|zero)\s+(?:errors?|failures?|failed|exceptions?)\b"
    r"|\b(?:errors?|failures?|failed|exceptions?)\s*[:=]\s*0\b"
)
_CHUNK = 1 << 20


@dataclass(frozen=True)
class ErrorLine:
    """One error-like line: where it is and its number."""

    start: int
    """Offset of the line's first character."""
    end: int
    """Offset just past the line's last character (its newline excluded)."""
    number: int
    """1-based line number."""


def is_error_line(line: str) -> bool:
    """Whether one line looks like an error, a failure or a non-zero exit."""
    if line.startswith("E  ") and line[3:].strip():
        return True  # pytest's assertion detail lines
    low = line.lower()
    if _PRECISE.search(low) is None:
        return False
    return _PRECISE.search(_ZERO.sub(" ", low)) is not None


def _candidate_starts(low: str) -> set[int]:
    """Offsets (within ``low``) of the lines containing a keyword."""
    starts: set[int] = set()
    for keyword in _KEYWORDS:
        i = low.find(keyword)
        while i != -1:
            line_start = low.rfind("\n", 0, i) + 1
            starts.add(line_start)
            line_end = low.find("\n", i)
            if line_end == -1:
                break
            i = low.find(keyword, line_end)
    if low.startswith("e  "):
        starts.add(0)
    i = low.find("\ne  ")
    while i != -1:
        starts.add(i + 1)
        i = low.find("\ne  ", i + 1)
    return starts


def find_error_lines(text: str) -> list[ErrorLine]:
    """Every error-like line of ``text``, in order, with its number."""
    found: list[ErrorLine] = []
    pos = 0
    # Line numbers are counted lazily, up to the last error found, so a clean output costs no counting.
    counted_to = 0
    line_no = 1
    n = len(text)
    while pos < n:
        stop = min(n, pos + _CHUNK)
        if stop < n:
            nl = text.find("\n", stop)
            stop = n if nl == -1 else nl + 1
        chunk = text[pos:stop]
        low = chunk.lower()
        if len(low) != len(chunk):
            # A few non-ASCII letters lowercase to two characters; offsets would shift.
            low = "".join(c if len(c.lower()) != 1 else c.lower() for c in chunk)
        for start in sorted(_candidate_starts(low)):
            end = chunk.find("\n", start)
            end = len(chunk) if end == -1 else end
            if is_error_line(chunk[start:end]):
                line_no += text.count("\n", counted_to, pos + start)
                counted_to = pos + start
                found.append(ErrorLine(start=pos + start, end=pos + end, number=line_no))
        pos = stop
    return found
