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

from bisect import bisect_left
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import UsageError
from ._errors import ErrorLine, find_error_lines

if TYPE_CHECKING:
    from ..tokens import TokenCounter

__all__ = ["EXACT_COUNT_CHARS", "Truncation", "line_count", "truncate_output"]

EXACT_COUNT_CHARS = 1_000_000
"""Outputs up to this many characters are counted exactly; longer ones are estimated."""
ERROR_LINE_MAX_CHARS = 400
"""An error-like line kept from the cut middle is shown up to this many characters."""
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


def line_count(text: str) -> int:
    """Lines in ``text``: a final line without a newline counts, an empty text has none."""
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


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


@dataclass(frozen=True)
class _Edge:
    """The head or tail kept: complete lines, or part of one line when none fits."""

    offset: int
    """Head: offset just past the kept lines. Tail: offset of the first kept line."""
    lines: int
    """Complete lines kept."""
    partial: str = ""
    """Part of the first (head) or last (tail) line, when no complete line fits."""


def _head(text: str, budget: int) -> _Edge:
    pos = lines = 0
    n = len(text)
    while pos < n:
        nl = text.find("\n", pos)
        end = n if nl == -1 else nl + 1
        if end > budget:
            break
        pos = end
        lines += 1
    if lines == 0 and budget > 0 and n:
        return _Edge(0, 0, text[:budget])
    return _Edge(pos, lines)


def _tail(text: str, budget: int, floor: int) -> _Edge:
    n = len(text)
    pos = n
    lines = 0
    while pos > floor:
        nl = text.rfind("\n", floor, pos - 1)
        start = floor if nl == -1 else nl + 1
        if n - start > budget:
            break
        pos = start
        lines += 1
    if lines == 0 and budget > 0 and n > floor:
        end = n - 1 if text.endswith("\n") else n
        return _Edge(n, 0, text[max(floor, end - budget) : end] + text[end:])
    return _Edge(pos, lines)


def _size(n: int, exact: bool) -> str:
    return f"{n:,} tokens" if exact else f"about {n:,} tokens (estimated)"


def _merge(ranges: list[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    out: list[tuple[int, int]] = []
    for start, end in sorted(ranges):
        if out and start <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return tuple(out)


@dataclass(frozen=True)
class _Cut:
    text: str
    marker: str
    ranges: tuple[tuple[int, int], ...]
    omitted_errors: int


class _Cutter:
    """Renders the cut for a given character budget; all per-text work is done once here."""

    def __init__(
        self,
        text: str,
        *,
        tokens: int,
        exact: bool,
        artifact_id: str,
        first_line: int,
        head_fraction: float,
        error_fraction: float,
        errors: list[ErrorLine],
        retrievable: bool,
    ) -> None:
        self.text = text
        self.retrievable = retrievable
        self.lines = line_count(text)
        self.size = _size(tokens, exact)
        self.artifact_id = artifact_id
        self.shift = first_line - 1
        self.head_fraction = head_fraction
        self.error_fraction = error_fraction if errors else 0.0
        self.errors = errors
        self.error_starts = [e.start for e in errors]
        self.scan_errors = bool(error_fraction)

    def _edges(self, budget: int) -> tuple[_Edge, _Edge]:
        head_chars = int(budget * self.head_fraction)
        head = _head(self.text, head_chars)
        tail = _tail(self.text, budget - head_chars, head.offset)
        return head, tail

    def _pick_errors(self, head: _Edge, tail: _Edge, budget: int) -> tuple[list[ErrorLine], int, int]:
        """Error lines of the middle within ``budget`` chars: the first and last, alternately."""
        lo = bisect_left(self.error_starts, head.offset)
        hi = bisect_left(self.error_starts, tail.offset)
        front, back, used = lo, hi - 1, 0
        picked: list[ErrorLine] = []
        take_front = True
        while front <= back:
            e = self.errors[front if take_front else back]
            cost = min(e.end - e.start, ERROR_LINE_MAX_CHARS) + 16
            if used + cost > budget:
                break
            used += cost
            picked.append(e)
            if take_front:
                front += 1
            else:
                back -= 1
            take_front = not take_front
        picked.sort(key=lambda e: e.start)
        return picked, hi - lo, used

    def render(self, budget: int, *, compact: bool = False) -> _Cut:
        """Render the cut output for ``budget`` characters of content."""
        error_budget = int(budget * self.error_fraction)
        head, tail = self._edges(budget - error_budget)
        picked, middle_errors, used = self._pick_errors(head, tail, error_budget)
        if used < error_budget:
            # Give what the error lines did not need back to the head and tail.
            head, tail = self._edges(budget - used)
            picked = [e for e in picked if head.offset <= e.start < tail.offset]
            middle_errors = bisect_left(self.error_starts, tail.offset) - bisect_left(self.error_starts, head.offset)
        shown = head.offset + len(head.partial) + len(self.text) - tail.offset + len(tail.partial)
        if shown >= len(self.text):
            return _Cut(self.text, "", (), 0)
        tail_first = self.lines - tail.lines + 1
        omitted = (head.lines + 1, self.lines - tail.lines)
        ranges: list[tuple[int, int]] = []
        if head.lines or head.partial:
            ranges.append((1, max(head.lines, 1)))
        ranges.extend((e.number, e.number) for e in picked)
        if tail.lines or tail.partial:
            ranges.append((min(tail_first, self.lines), self.lines))
        merged = _merge([(a + self.shift, b + self.shift) for a, b in ranges])
        marker = self._marker(head, tail, omitted, picked, middle_errors, compact)
        body = [self.text[: head.offset] if not head.partial else head.partial + "\n", marker]
        for e in picked:
            line = self.text[e.start : e.end]
            if len(line) > ERROR_LINE_MAX_CHARS:
                line = line[:ERROR_LINE_MAX_CHARS] + " [... line cut]"
            body.append(f"[line {e.number + self.shift}] {line}\n")
        if picked and (tail.lines or tail.partial):
            body.append(
                f"[... end of the truncated part; the output continues at line {tail_first + self.shift} ...]\n"
            )
        body.append(self.text[tail.offset :] if not tail.partial else tail.partial)
        return _Cut("".join(body), marker, merged, middle_errors - len(picked))

    def _shown(self, head: _Edge, tail: _Edge) -> str:
        s = self.shift
        parts: list[str] = []
        if head.lines:
            parts.append(f"lines {1 + s}-{head.lines + s}")
        elif head.partial:
            parts.append(f"the first {len(head.partial):,} characters of line {1 + s}")
        if tail.lines:
            parts.append(f"lines {self.lines - tail.lines + 1 + s}-{self.lines + s}")
        elif tail.partial:
            parts.append(f"the last {len(tail.partial.rstrip(chr(10))):,} characters of line {self.lines + s}")
        return " and ".join(parts) or "no lines"

    def _marker(
        self,
        head: _Edge,
        tail: _Edge,
        omitted: tuple[int, int],
        picked: list[ErrorLine],
        middle_errors: int,
        compact: bool,
    ) -> str:
        a, b = omitted[0] + self.shift, omitted[1] + self.shift
        call = f'read_range(artifact_id="{self.artifact_id}", start_line={a}, end_line={b})'
        if compact:
            rest = f"rest: {call}" if self.retrievable else f"lines {a}-{b} omitted"
            return f"[... output truncated: {self.size}, {self.lines:,} lines; {rest} ...]\n"
        errors = ""
        if self.scan_errors:
            if not middle_errors:
                errors = " The omitted part has no error-like lines (error, fail, exception, panic, non-zero exit)."
            elif len(picked) == middle_errors:
                errors = f" Its {middle_errors:,} error-like line(s) are shown below, each with its line number."
            elif picked:
                errors = (
                    f" It has {middle_errors:,} error-like lines; {len(picked):,} of them, from its start and its"
                    " end, are shown below, each with its line number."
                )
            else:
                errors = f" It has {middle_errors:,} error-like lines; none fit here, so read them."
        return (
            f"[... output truncated: the full output is {self.size} and {self.lines:,} lines; shown here:"
            f" {self._shown(head, tail)}. Omitted: lines {a}-{b}.{errors}{self._get_back(call)} ...]\n"
        )

    def _get_back(self, call: str) -> str:
        # Only name a tool the model was given: without retrieval the omitted lines are gone for it.
        if not self.retrievable:
            return ""
        return (
            f" To read omitted lines call {call}; its output is bounded too, so ask for a few hundred lines at a time."
        )


def _fit(cutter: _Cutter, tokens: int, max_tokens: int, counter: TokenCounter, compact: bool) -> _Cut | None:
    """Find the largest cut that fits ``max_tokens``, or None when even an empty one does not.

    The budget is in characters of content; each round renders, counts the result once and
    rescales the budget by how far the count was from the limit.
    """
    size = len(cutter.text)
    ratio = size / max(tokens, 1)
    budget = int(max(0, max_tokens - _MARKER_GUESS) * ratio)
    marker_tokens = -1
    best: _Cut | None = None
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


def _last_resort(cutter: _Cutter, max_tokens: int, counter: TokenCounter) -> str:
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
    retrievable: bool = True,
) -> Truncation:
    """Bound ``text`` to ``max_tokens`` (by ``counter``), keeping head, tail and error lines.

    ``first_line`` numbers the first line of ``text`` (for a range cut out of a longer output).
    ``retrievable`` says the model has ``read_range``: only then does the marker tell it to call it.
    The result, marker included, never exceeds ``max_tokens``.
    """
    if max_tokens < 1:
        raise UsageError(f"max_tokens must be at least 1, got {max_tokens}")
    if not 0.0 <= head_fraction <= 1.0 or not 0.0 <= error_line_budget_fraction < 1.0:
        raise UsageError("head_fraction must be in [0, 1] and error_line_budget_fraction in [0, 1)")
    lines = line_count(text)
    tokens, counted = _measure(text, counter, max_tokens)
    exact = counted and counter.exact
    if counted and tokens <= max_tokens:
        whole = ((first_line, first_line + lines - 1),) if lines else ()
        return Truncation(
            text=text,
            truncated=False,
            original_tokens=tokens,
            original_lines=lines,
            kept_ranges=whole,
            original_tokens_exact=exact,
        )
    errors = find_error_lines(text) if keep_error_lines else []
    cutter = _Cutter(
        text,
        tokens=tokens,
        exact=exact,
        artifact_id=artifact_id,
        first_line=first_line,
        head_fraction=head_fraction,
        error_fraction=error_line_budget_fraction if keep_error_lines else 0.0,
        errors=errors,
        retrievable=retrievable,
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
        )
    return Truncation(
        text=cut.text,
        truncated=True,
        original_tokens=tokens,
        original_lines=lines,
        kept_ranges=cut.ranges,
        original_tokens_exact=exact,
        error_lines_omitted=cut.omitted_errors,
    )
