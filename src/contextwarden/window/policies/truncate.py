"""Truncation at ingestion: bound a tool output once, when it enters, so its item never changes.

Over the limit, the output keeps its first and last lines, plus the lines from the cut middle
that look like errors (each tagged with its line number), and a marker at the cut that says it
was truncated, how big the original is, which lines are shown and how to read the rest with
``read_range``. A failing build therefore never looks like a success because its tail was cut.

Sizes. The original is counted exactly with the caller's counter when it is at most
:data:`EXACT_COUNT_CHARS` characters; a longer one is *estimated* from evenly spaced samples
and the marker says "about N tokens (estimated)". The marker only states a token count without
"about" when the whole text was counted by an exact counter. Line counts are always exact.

Speed. Nothing counts the whole text repeatedly: the kept parts are chosen by characters using
the text's own characters-per-token ratio, then the assembled result (at most ``max_tokens``
tokens) is counted and the choice adjusted; error lines are found in one pass
(:mod:`._errors`), so a 100 MB output is cut in a few seconds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...errors import UsageError
from ._cut import Cut, Cutter, line_count
from ._errors import find_error_lines
from ._oddlines import find_odd_lines, quoted
from .placeholders import Retrievable

if TYPE_CHECKING:
    from ...tokens import TokenCounter

__all__ = ["EXACT_COUNT_CHARS", "Truncation", "line_count", "truncate_output"]

EXACT_COUNT_CHARS = 1_000_000
"""Outputs up to this many characters are counted exactly; longer ones are estimated."""
_SAMPLES = 16
_SAMPLE_CHARS = 16_384
_MAX_ROUNDS = 8
_MARKER_GUESS = 120


@dataclass(frozen=True, kw_only=True)
class Truncation:
    """The bounded text of one output and what was cut."""

    text: str
    """The text to show (the input itself when it fits)."""
    truncated: bool
    """Whether anything was cut."""
    original_tokens: int
    """Tokens of the input (an estimate when ``original_tokens_exact`` is False)."""
    original_lines: int
    """Lines of the input (always exact)."""
    kept_ranges: tuple[tuple[int, int], ...]
    """Line ranges (1-based, inclusive) shown in full or in part, in order."""
    original_tokens_exact: bool = True
    """Whether ``original_tokens`` was counted over the whole input by an exact counter."""
    error_lines_omitted: int = 0
    """Error-like lines in the cut part that could not be shown."""
    odd_lines: tuple[str, ...] = ()
    """Lines of a shape the output has only once (:mod:`._oddlines`), quoted: a mask placeholder keeps them."""


def _estimate_tokens(text: str, counter: TokenCounter) -> int:
    step = (len(text) - _SAMPLE_CHARS) // (_SAMPLES - 1)
    chars = tokens = 0
    for i in range(_SAMPLES):
        sample = text[i * step : i * step + _SAMPLE_CHARS]
        chars += len(sample)
        tokens += counter.count(sample)
    return max(1, round(len(text) * tokens / max(chars, 1)))


def _measure(text: str, counter: TokenCounter, max_tokens: int) -> tuple[int, bool]:
    """Tokens of ``text`` and whether they were counted over the whole text."""
    if len(text) <= max(EXACT_COUNT_CHARS, 8 * max_tokens):
        return counter.count(text), True
    estimate = _estimate_tokens(text, counter)
    if estimate <= 2 * max_tokens:
        # Near the limit an estimate could wrongly say "fits"; count for real.
        return counter.count(text), True
    return estimate, False


def _fit(cutter: Cutter, tokens: int, max_tokens: int, counter: TokenCounter, compact: bool) -> Cut | None:
    """Find the largest cut that fits ``max_tokens``, or None when even an empty one does not.

    The budget is in characters of content; each round renders, counts the result once and
    rescales the budget by how far the count was from the limit.
    """
    size = len(cutter.text)
    ratio = size / max(tokens, 1)
    budget = int(max(0, max_tokens - _MARKER_GUESS) * ratio)
    marker_tokens = -1
    best: Cut | None = None
    best_budget = -1
    tried: set[int] = set()
    for _ in range(_MAX_ROUNDS):
        if budget in tried:
            break
        tried.add(budget)
        cut = cutter.render(budget, compact=compact)
        n = counter.count(cut.text)
        if marker_tokens < 0:
            marker_tokens = counter.count(cut.marker)
        room = max_tokens - marker_tokens
        content = max(n - marker_tokens, 1)
        if n <= max_tokens:
            if budget > best_budget:
                best, best_budget = cut, budget
            if n >= 0.92 * max_tokens or budget >= size:
                break
            new = int(budget * min(2.0, room / content * 0.98))
            if new <= budget:
                break
        else:
            if budget == 0:
                break
            new = int(budget * room / content * 0.95) if room > 0 else 0
            if new >= budget:
                new = budget * 9 // 10
            if new <= best_budget:
                break
        budget = max(0, min(new, size))
    return best


def _last_resort(cutter: Cutter, max_tokens: int, counter: TokenCounter) -> str:
    """Return the longest prefix of the compact marker that fits (possibly empty)."""
    marker = cutter.render(0, compact=True).marker.rstrip("\n")
    lo, hi = 0, len(marker)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if counter.count(marker[:mid]) <= max_tokens:
            lo = mid
        else:
            hi = mid - 1
    return marker[:lo]


def truncate_output(
    text: str,
    *,
    max_tokens: int,
    counter: TokenCounter,
    artifact_id: str,
    head_fraction: float = 0.5,
    keep_error_lines: bool = True,
    error_line_budget_fraction: float = 0.2,
    first_line: int = 1,
    retrievable: Retrievable = True,
    odd_lines: int = 0,
) -> Truncation:
    """Bound ``text`` to ``max_tokens`` (by ``counter``), keeping head, tail and error lines.

    ``first_line`` numbers the first line of ``text`` (for a range cut out of a longer output).
    ``retrievable`` says how the model gets omitted lines back (:data:`~.placeholders.Retrievable`):
    only then does the marker tell it what to call.
    ``odd_lines``: up to this many lines of a shape the output has only once are found
    (:mod:`._oddlines`); the cut keeps those of its middle, and the result lists them all.
    The result, marker included, never exceeds ``max_tokens``.
    """
    if max_tokens < 1:
        raise UsageError(f"max_tokens must be at least 1, got {max_tokens}")
    if not 0.0 <= head_fraction <= 1.0 or not 0.0 <= error_line_budget_fraction < 1.0:
        raise UsageError("head_fraction must be in [0, 1] and error_line_budget_fraction in [0, 1)")
    lines = line_count(text)
    tokens, counted = _measure(text, counter, max_tokens)
    exact = counted and counter.exact
    odd = find_odd_lines(text, limit=odd_lines)
    quotes = tuple(quoted(text[o.start : o.end]) for o in odd)
    if counted and tokens <= max_tokens:
        whole = ((first_line, first_line + lines - 1),) if lines else ()
        return Truncation(
            text=text,
            truncated=False,
            original_tokens=tokens,
            original_lines=lines,
            kept_ranges=whole,
            original_tokens_exact=exact,
            odd_lines=quotes,
        )
    errors = find_error_lines(text) if keep_error_lines else []
    cutter = Cutter(
        text,
        tokens=tokens,
        exact=exact,
        artifact_id=artifact_id,
        first_line=first_line,
        head_fraction=head_fraction,
        error_fraction=error_line_budget_fraction if keep_error_lines else 0.0,
        errors=errors,
        retrievable=retrievable,
        odd=odd,
    )
    cut = _fit(cutter, tokens, max_tokens, counter, compact=False)
    if cut is None:
        cut = _fit(cutter, tokens, max_tokens, counter, compact=True)
    if cut is None:
        return Truncation(
            text=_last_resort(cutter, max_tokens, counter),
            truncated=True,
            original_tokens=tokens,
            original_lines=lines,
            kept_ranges=(),
            original_tokens_exact=exact,
            error_lines_omitted=len(errors),
            odd_lines=quotes,
        )
    return Truncation(
        text=cut.text,
        truncated=True,
        original_tokens=tokens,
        original_lines=lines,
        kept_ranges=cut.ranges,
        original_tokens_exact=exact,
        error_lines_omitted=cut.omitted_errors,
        odd_lines=quotes,
    )
