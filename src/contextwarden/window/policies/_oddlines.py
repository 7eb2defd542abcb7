"""The few lines a repetitive output says only once.

A build log, a test run or a crawl is mostly lines of one or two shapes ("compiling module_7 ...
ok"); what it tells the agent beyond "it went on" is in the lines of a shape seen once: a key, a
path, a name, a warning. When such an output is cut in the middle or masked, quoting those lines
keeps its facts in context for a few dozen tokens, where a trimmer would keep the whole output or
lose them.

A line's shape is the line with every digit run as ``#`` and its whitespace collapsed, so
"line 17" and "line 18" are one shape. Only an output that really repeats qualifies: at least
:data:`MIN_LINES` lines, and at most ``limit`` lines of a shape seen once (more means the output is
not repetitive, say a source file, and no line of it is odd). Outputs over :data:`MAX_CHARS` are not
scanned (their cut keeps error lines; the rest is one ``read_range`` away).
"""

from __future__ import annotations

import re
from collections import Counter

from ._errors import ErrorLine

MIN_LINES = 20
"""Shorter outputs are not judged: with few lines every shape is rare."""
MAX_CHARS = 4_000_000
"""Outputs longer than this are not scanned for odd lines (bounded work at ingestion)."""
ODD_LINE_MAX_CHARS = 200
"""A quoted odd line is shown up to this many characters."""
_MIN_LINE_CHARS = 8
_DIGITS = re.compile(r"\d+")


def _shape(line: str) -> str:
    return " ".join(_DIGITS.sub("#", line).split())


def find_odd_lines(text: str, *, limit: int) -> list[ErrorLine]:
    """The lines of ``text`` whose shape no other line has, when there are at most ``limit`` of them.

    Empty when ``limit`` is 0, the text is short or long past :data:`MAX_CHARS`, or more than
    ``limit`` lines qualify. Each is returned with its offsets and 1-based number.
    """
    if limit <= 0 or len(text) > MAX_CHARS:
        return []
    lines = text.split("\n")
    if len(lines) < MIN_LINES:
        return []
    shapes = [_shape(line) for line in lines]
    counts = Counter(shapes)
    odd: list[ErrorLine] = []
    start = 0
    for number, (line, shape) in enumerate(zip(lines, shapes, strict=True), 1):
        if counts[shape] == 1 and len(shape) >= _MIN_LINE_CHARS:
            odd.append(ErrorLine(start=start, end=start + len(line), number=number))
            if len(odd) > limit:
                return []
        start += len(line) + 1
    return odd


def quoted(line: str) -> str:
    """One odd line as a placeholder or marker shows it (stripped, capped)."""
    line = line.strip()
    return line if len(line) <= ODD_LINE_MAX_CHARS else line[:ODD_LINE_MAX_CHARS] + "…"
