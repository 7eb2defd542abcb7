"""The cut of one output for a character budget, and the marker that says what was cut.

Head and tail are kept in whole lines, error lines from the middle with their numbers, and the
marker says how big the original is and how to read the rest back.

:func:`.truncate.truncate_output` picks the budget (it counts tokens); this module only renders.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass

from ._errors import ErrorLine
from .placeholders import Retrievable, retrieval_call

ERROR_LINE_MAX_CHARS = 400
"""An error-like line kept from the cut middle is shown up to this many characters."""


def line_count(text: str) -> int:
    """Lines in ``text``: a final line without a newline counts, an empty text has none."""
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


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
class Cut:
    text: str
    marker: str
    ranges: tuple[tuple[int, int], ...]
    omitted_errors: int


class Cutter:
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
        retrievable: Retrievable,
        odd: list[ErrorLine] | None = None,
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
        error_starts = set(self.error_starts)
        self.odd = [o for o in odd or () if o.start not in error_starts]
        """Lines of a shape seen once (:mod:`._oddlines`), quoted when the cut drops them."""

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

    def render(self, budget: int, *, compact: bool = False) -> Cut:
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
            return Cut(self.text, "", (), 0)
        odd = [o for o in self.odd if head.offset <= o.start < tail.offset]
        tail_first = self.lines - tail.lines + 1
        omitted = (head.lines + 1, self.lines - tail.lines)
        ranges: list[tuple[int, int]] = []
        if head.lines or head.partial:
            ranges.append((1, max(head.lines, 1)))
        ranges.extend((e.number, e.number) for e in (*picked, *odd))
        if tail.lines or tail.partial:
            ranges.append((min(tail_first, self.lines), self.lines))
        merged = _merge([(a + self.shift, b + self.shift) for a, b in ranges])
        marker = self._marker(head, tail, omitted, picked, middle_errors, compact)
        if odd and not compact:
            once = f" Below too: the {len(odd)} line(s) of the omitted part seen only once ...]\n"
            marker = marker[: -len(" ...]\n")] + once
        body = [self.text[: head.offset] if not head.partial else head.partial + "\n", marker]
        for e in sorted((*picked, *odd), key=lambda line: line.start):
            line = self.text[e.start : e.end]
            if len(line) > ERROR_LINE_MAX_CHARS:
                line = line[:ERROR_LINE_MAX_CHARS] + " [... line cut]"
            body.append(f"[line {e.number + self.shift}] {line}\n")
        if (picked or odd) and (tail.lines or tail.partial):
            body.append(
                f"[... end of the truncated part; the output continues at line {tail_first + self.shift} ...]\n"
            )
        body.append(self.text[tail.offset :] if not tail.partial else tail.partial)
        return Cut("".join(body), marker, merged, middle_errors - len(picked))

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
        call = retrieval_call(self.retrievable or True, self.artifact_id, a, b, whole=False)
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
