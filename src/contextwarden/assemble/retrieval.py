"""Retrieval: eviction is not forgetting.

Full tool outputs stay in the session log. The model can get them back with two tools whose
answers are bounded like any tool output:

- :func:`read_range` returns lines of one stored output by its artifact id (the tool result's
  event id, as named in truncation markers and placeholders);
- :func:`recall` searches the whole session (user and assistant text, tool outputs) with BM25
  and returns the best passages with their artifact ids and line numbers.

Line numbers are those of the output as ingestion saw it (after the tool policy's normalizer),
so they match the numbers in truncation markers. :class:`ReReadTracker` measures how often the
agent had to get evicted content back (the re-read rate, ``docs/behaviours.md``, row 39).
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import UsageError
from ..log.events import (
    AssistantMessage,
    ContextEditBatch,
    Event,
    Steering,
    ToolCall,
    ToolResult,
    UserMessage,
)
from ..tools import READ_RANGE, RECALL
from ..window.policies.placeholders import render_call
from ..window.policies.presets import CODING_TOOL_POLICIES, ToolPolicy, policy_for, policy_text
from ..window.policies.resources import opened_file, resources_of
from ..window.policies.truncate import line_count, truncate_output

if TYPE_CHECKING:
    from ..tokens import TokenCounter

__all__ = ["ReReadTracker", "answer_retrieval", "read_range", "recall"]


def _calls(events: Iterable[Event]) -> dict[str, ToolCall]:
    return {c.id: c for e in events if isinstance(e, AssistantMessage) for c in e.tool_calls}


def _find_result(events: Sequence[Event], artifact_id: str) -> ToolResult | None:
    return next((e for e in reversed(events) if isinstance(e, ToolResult) and e.id == artifact_id), None)


def _lines(text: str) -> list[str]:
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    return lines


def read_range(
    events: Sequence[Event],
    artifact_id: str,
    start_line: int,
    end_line: int,
    *,
    max_tokens: int,
    counter: TokenCounter,
    policies: Sequence[ToolPolicy] = CODING_TOOL_POLICIES,
) -> str:
    """Lines ``start_line``..``end_line`` (1-based, inclusive) of the stored output ``artifact_id``.

    Never raises for a bad request: an unknown id, an empty output or a range past the end gives
    a one-line answer saying so. A range reaching past the end is shortened and says so.
    """
    result = _find_result(events, artifact_id)
    if result is None:
        return (
            f'read_range: no tool output with artifact_id "{artifact_id}" in this session; artifact ids are'
            " named in truncation markers and placeholders."
        )
    call = _calls(events).get(result.call_id)
    text = policy_text(result.output, policy_for(result.tool_name, call, policies))
    total = line_count(text)
    if total == 0:
        return f'read_range: the output "{artifact_id}" of {result.tool_name} is empty.'
    if end_line < start_line:
        return f"read_range: end_line ({end_line}) is before start_line ({start_line}); nothing to read."
    if start_line > total:
        return f'read_range: the output "{artifact_id}" has {total:,} lines; start_line {start_line} is past its end.'
    first, last = max(start_line, 1), min(end_line, total)
    clipped = f" (asked for {start_line}-{end_line})" if (first, last) != (start_line, end_line) else ""
    header = (
        f'[read_range artifact_id="{artifact_id}" ({render_call(call, result.tool_name)}):'
        f" lines {first}-{last} of {total:,}{clipped}]\n"
    )
    selected = "\n".join(_lines(text)[first - 1 : last]) + "\n"
    room = max_tokens - counter.count(header)
    if room >= 16:
        body = truncate_output(selected, max_tokens=room, counter=counter, artifact_id=artifact_id, first_line=first)
        answer = header + body.text
        if counter.count(answer) <= max_tokens:
            return answer
    # A limit too small for the header, or a count that grew at the seam: bound the whole answer.
    return truncate_output(header + selected, max_tokens=max_tokens, counter=counter, artifact_id=artifact_id).text


# --------------------------------------------------------------------------- recall

_WORD = re.compile(r"\w+")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
_CHUNK_LINES = 20
_K1 = 1.2
_B = 0.75


def _terms(text: str) -> list[str]:
    """Lowercase words, their ``_``/digit-split parts, and CJK character bigrams."""
    out: list[str] = []
    for word in _WORD.findall(text.lower()):
        if _CJK.search(word):
            chars = [c for c in word if not c.isascii()]
            out.extend(chars if len(chars) < 2 else [a + b for a, b in itertools.pairwise(chars)])
            continue
        out.append(word)
        if "_" in word:
            out.extend(p for p in word.split("_") if p)
    return out


@dataclass(frozen=True)
class _Passage:
    label: str
    seq: int
    lines: tuple[str, ...]
    first_line: int
    artifact_id: str


def _passages(events: Sequence[Event], policies: Sequence[ToolPolicy]) -> list[_Passage]:
    calls = _calls(events)
    out: list[_Passage] = []
    for event in events:
        if isinstance(event, (UserMessage, Steering)) and event.text:
            kind = "user message" if isinstance(event, UserMessage) else "steering"
            out.append(_Passage(kind, event.seq, tuple(_lines(event.text)), 0, ""))
        elif isinstance(event, AssistantMessage):
            text = "\n".join([event.text, *(render_call(c) for c in event.tool_calls)]).strip()
            if text:
                out.append(_Passage("assistant message", event.seq, tuple(_lines(text)), 0, ""))
        elif isinstance(event, ToolResult):
            call = calls.get(event.call_id)
            policy = policy_for(event.tool_name, call, policies)
            if policy.category == "retrieval":
                continue  # its text is a copy of something already indexed
            lines = _lines(policy_text(event.output, policy))
            label = f"output of {render_call(call, event.tool_name)}"
            for start in range(0, len(lines), _CHUNK_LINES):
                out.append(_Passage(label, event.seq, tuple(lines[start : start + _CHUNK_LINES]), start + 1, event.id))
    return out


def _rank(passages: list[_Passage], query: list[str]) -> list[tuple[float, _Passage]]:
    docs = [Counter(_terms("\n".join(p.lines))) for p in passages]
    lengths = [sum(d.values()) for d in docs]
    average = sum(lengths) / max(len(lengths), 1) or 1.0
    wanted = set(query)
    df = {t: sum(1 for d in docs if t in d) for t in wanted}
    n = len(docs)
    scored: list[tuple[float, _Passage]] = []
    for doc, length, passage in zip(docs, lengths, passages, strict=True):
        score = 0.0
        for term in wanted:
            tf = doc.get(term, 0)
            if tf:
                idf = math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
                score += idf * tf * (_K1 + 1) / (tf + _K1 * (1 - _B + _B * length / average))
        if score > 0:
            scored.append((score, passage))
    scored.sort(key=lambda sp: (-sp[0], -sp[1].seq, sp[1].first_line))
    return scored


def _snippet(passage: _Passage, query: set[str]) -> str:
    hits = [(sum(1 for t in _terms(line) if t in query), i) for i, line in enumerate(passage.lines)]
    best = sorted(i for _, i in sorted(hits, key=lambda h: (-h[0], h[1]))[:3] if hits[i][0])
    rows: list[str] = []
    for i in best:
        line = passage.lines[i].strip()
        line = line if len(line) <= 300 else line[:299] + "…"
        rows.append(f"   {passage.first_line + i}: {line}" if passage.artifact_id else f"   {line}")
    return "\n".join(rows)


def _heading(n: int, passage: _Passage) -> str:
    if passage.artifact_id:
        last = passage.first_line + len(passage.lines) - 1
        return (
            f'{n}. {passage.label} [artifact_id="{passage.artifact_id}", lines {passage.first_line}-{last},'
            f" seq {passage.seq}]"
        )
    return f"{n}. {passage.label} [seq {passage.seq}]"


def recall(
    events: Sequence[Event],
    query: str,
    *,
    counter: TokenCounter,
    limit: int = 5,
    max_tokens: int = 2_000,
    policies: Sequence[ToolPolicy] = CODING_TOOL_POLICIES,
) -> str:
    """Return the ``limit`` passages that best match ``query`` (BM25), within ``max_tokens``."""
    terms = _terms(query)
    if not terms:
        return "recall: the query has no searchable words."
    scored = _rank(_passages(events, policies), terms)
    if not scored:
        return f"recall {query!r}: nothing in this session matches."
    shown = min(limit, len(scored))
    text = f"recall {query!r}: the best {shown} of {len(scored)} matching passages"
    wanted = set(terms)
    for n, (_, passage) in enumerate(scored[:limit], start=1):
        entry = f"{_heading(n, passage)}\n{_snippet(passage, wanted)}"
        if counter.count(f"{text}\n{entry}") > max_tokens:
            break
        text = f"{text}\n{entry}"
    if counter.count(text) > max_tokens:
        text = truncate_output(text, max_tokens=max_tokens, counter=counter, artifact_id="recall").text
    return text


# --------------------------------------------------------------------------- re-reads


class ReReadTracker:
    """Counts re-reads of evicted content: re-read rate = re-reads / evictions.

    An eviction is a tool result masked or cleared by a recorded context edit. A re-read is a
    later ``read_range`` of it, or a new read of a resource (file, URL, page, search) whose
    earlier result was evicted. Each evicted result counts at most once. Feed events in order
    with :meth:`observe` (or build from a list with :meth:`from_events`).
    """

    def __init__(self, *, policies: Sequence[ToolPolicy] = CODING_TOOL_POLICIES, cwd: str = "") -> None:
        self.policies = policies
        self.cwd = cwd
        self.evictions = 0
        self.re_reads = 0
        self.re_read_call_ids: list[str] = []
        self._calls: dict[str, ToolCall] = {}
        self._reads: dict[str, tuple[tuple[str, str], ...]] = {}
        self._evicted: dict[str, tuple[tuple[str, str], ...]] = {}
        self._ever_evicted: set[str] = set()
        self._open_file = ""

    @classmethod
    def from_events(
        cls, events: Iterable[Event], *, policies: Sequence[ToolPolicy] = CODING_TOOL_POLICIES, cwd: str = ""
    ) -> ReReadTracker:
        """Return a tracker that has observed ``events``."""
        tracker = cls(policies=policies, cwd=cwd)
        for event in events:
            tracker.observe(event)
        return tracker

    @property
    def rate(self) -> float:
        """Re-reads per eviction (0.0 before any eviction)."""
        return self.re_reads / self.evictions if self.evictions else 0.0

    def observe(self, event: Event) -> None:
        """Take one event into account."""
        if isinstance(event, AssistantMessage):
            for call in event.tool_calls:
                self._calls[call.id] = call
                self._check_call(call)
        elif isinstance(event, ToolResult):
            answered = self._calls.get(event.call_id)
            if answered is not None:
                policy = policy_for(event.tool_name, answered, self.policies)
                found = resources_of(answered, policy.category, cwd=self.cwd, open_file=self._open_file)
                self._reads[event.id] = tuple((r.kind, r.key) for r in found if r.access == "read")
                self._open_file = opened_file(answered, cwd=self.cwd) or self._open_file
        elif isinstance(event, ContextEditBatch):
            for edit in event.edits:
                if edit.action in ("mask", "clear") and edit.target_id not in self._ever_evicted:
                    self.evictions += 1
                    self._ever_evicted.add(edit.target_id)
                    self._evicted[edit.target_id] = self._reads.get(edit.target_id, ())

    def _check_call(self, call: ToolCall) -> None:
        policy = policy_for(call.name, call, self.policies)
        back: list[str] = []
        if policy.category == "retrieval":
            target = call.arguments.get("artifact_id")
            if isinstance(target, str) and target in self._evicted:
                back.append(target)
        else:
            found = resources_of(call, policy.category, cwd=self.cwd, open_file=self._open_file)
            keys = {(r.kind, r.key) for r in found if r.access == "read"}
            back = [rid for rid, reads in self._evicted.items() if keys.intersection(reads)]
        if back:
            self.re_reads += 1
            self.re_read_call_ids.append(call.id)
            for rid in back:
                # Back in view: further reads of it are not re-reads of evicted content.
                del self._evicted[rid]


def _int_argument(value: object, default: int) -> int:
    try:
        return int(value)  # type: ignore[call-overload, no-any-return]
    except (TypeError, ValueError):
        return default


def answer_retrieval(
    events: Sequence[Event],
    call: ToolCall,
    *,
    counter: TokenCounter,
    max_tokens: int,
    policies: Sequence[ToolPolicy] = CODING_TOOL_POLICIES,
) -> str:
    """The answer to a ``read_range`` or ``recall`` call over a session's events (``UsageError`` otherwise).

    The tools' schemas are :data:`contextwarden.tools.READ_RANGE` and :data:`~contextwarden.tools.RECALL`.
    """
    args = call.arguments
    if call.name == READ_RANGE.name:
        return read_range(
            events,
            str(args.get("artifact_id", "")),
            _int_argument(args.get("start_line"), 1),
            _int_argument(args.get("end_line"), 1),
            max_tokens=max_tokens,
            counter=counter,
            policies=policies,
        )
    if call.name == RECALL.name:
        return recall(events, str(args.get("query", "")), counter=counter, max_tokens=max_tokens, policies=policies)
    raise UsageError(f"{call.name!r} is not a retrieval tool; expected read_range or recall")
