"""Truncation by bytes with a warning header (tool-output truncation, ``docs/behaviours.md``, row 51).

An output over ``max_bytes`` keeps its first and last ``max_bytes / 2`` bytes (cut on character
boundaries), a one-line marker where the middle was, and a header line first that says the output was cut
and how large it was (tokens, lines, bytes). It is the simpler alternative to the token cut of
:mod:`.truncate` (which also keeps the error lines of the middle); a :class:`~.presets.ToolPolicy` with
``max_bytes`` set uses it. Measured against the token cut in ``docs/benchmarks.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...errors import UsageError
from ._cut import line_count
from .placeholders import Retrievable, retrieval_call
from .truncate import Truncation, _measure

if TYPE_CHECKING:
    from ...tokens import TokenCounter

__all__ = ["BYTE_CUT_HEADER", "BYTE_CUT_MARKER", "truncate_bytes"]

BYTE_CUT_HEADER = "[Warning: this output was truncated to "
"""How the header line of a byte cut starts."""
BYTE_CUT_MARKER = "\n[… "
"""How the line where the middle was starts."""


def _head(data: bytes, size: int) -> str:
    return data[:size].decode("utf-8", "ignore")


def _tail(data: bytes, size: int) -> str:
    return data[len(data) - size :].decode("utf-8", "ignore") if size else ""


def truncate_bytes(
    text: str, *, max_bytes: int, counter: TokenCounter, artifact_id: str, retrievable: Retrievable = True
) -> Truncation:
    """Bound ``text`` to ``max_bytes`` of UTF-8 content, cut from the middle, with a header naming its size."""
    if max_bytes < 2:
        raise UsageError(f"max_bytes must be at least 2, got {max_bytes}")
    data = text.encode("utf-8", "surrogatepass")
    lines = line_count(text)
    tokens, counted = _measure(text, counter, max_bytes)
    exact = counted and counter.exact
    if len(data) <= max_bytes:
        whole = ((1, lines),) if lines else ()
        return Truncation(text=text, truncated=False, original_tokens=tokens, original_lines=lines,
                          kept_ranges=whole, original_tokens_exact=exact)  # fmt: skip
    head, tail = _head(data, max_bytes // 2), _tail(data, max_bytes - max_bytes // 2)
    head_lines, tail_lines = head.count("\n"), tail.count("\n")
    omitted = len(data) - len(head.encode("utf-8", "surrogatepass")) - len(tail.encode("utf-8", "surrogatepass"))
    back = (
        f" Read the rest with {retrieval_call(retrievable, artifact_id, 1, lines, whole=True)}." if retrievable else ""
    )
    header = (
        f"{BYTE_CUT_HEADER}{max_bytes:,} bytes, cut from the middle. The full output was "
        f"{'' if exact else 'about '}{tokens:,} tokens, {lines:,} lines, {len(data):,} bytes.{back}]\n"
    )
    text_out = f"{header}{head}{BYTE_CUT_MARKER}{omitted:,} bytes omitted …]\n{tail}"
    ranges = ((1, max(head_lines, 1)), (max(lines - tail_lines, 1), lines))
    return Truncation(text=text_out, truncated=True, original_tokens=tokens, original_lines=lines,
                      kept_ranges=ranges, original_tokens_exact=exact)  # fmt: skip
