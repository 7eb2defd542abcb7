"""Validation of a model-written summary before anything is persisted.

A summary that fails any check raises :class:`InvalidSummary` (a
:class:`~contextwarden.errors.SummaryRejected`) naming the reason; the compactor then falls back
to the structured summarizer, and the rejected text is never written to the log. The checks:

``tool_calls``       the answer called tools or contains tool-call markup
``truncated``        generation stopped at the output limit
``empty``            nothing but whitespace
``format``           JSON or another non-Markdown shape instead of the sectioned notes
``missing_sections`` a required heading is absent
``language``         written in another script than the user's (Chinese asked, English answered...)
``copy``             mostly a verbatim copy of its input, or the previous summary unchanged
``not_shorter``      not shorter than what it replaces
``untrue``           most of its statements fail the log (:mod:`.statements`: schema keys, numbers,
                     invented paths)
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ...errors import SummaryRejected
from ...tokens import TokenCounter

COPY_SHARE = 0.8
"""A summary whose word 6-grams come from its input at this share or more is a copy."""
MIN_SHINGLES_FOR_COPY = 20
"""Copy detection needs at least this many 6-grams (short summaries share phrases legitimately)."""
MIN_SCRIPT_WEIGHT = 20.0
"""Language checks need at least this much weighted text in the user's messages."""
SCRIPT_SHARE = 0.2
"""The user's script must make up at least this weighted share of the summary's prose."""

_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)
_TOOL_MARKUP = re.compile(
    r"<\|?(?:tool_call|function_call|tool_use|invoke)\b|\"tool_calls\"\s*:|"
    r"\{\s*\"name\"\s*:\s*\"[^\"]+\"\s*,\s*\"(?:arguments|parameters)\"\s*:",
    re.IGNORECASE,
)
_WORDS = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]|[^\W\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]+")
_CODEISH = re.compile(r"`[^`]*`|\S*[/\\_.]\S*|^\s*#.*$", re.MULTILINE)
_SCRIPTS: tuple[tuple[str, re.Pattern[str], float], ...] = (
    # CJK characters carry about a word each; weight them so they compare with Latin letters.
    ("cjk", re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]"), 3.0),
    ("cyrillic", re.compile(r"[\u0400-\u04ff]"), 1.0),
    ("arabic", re.compile(r"[\u0600-\u06ff]"), 1.0),
    ("latin", re.compile(r"[A-Za-z\u00c0-\u024f]"), 1.0),
)


class InvalidSummary(SummaryRejected):
    """A summary failed one check; ``reason`` is its code (see the module docstring)."""

    def __init__(self, reason: str, detail: str) -> None:
        self.reason = reason
        self.input_tokens = 0
        """Tokens the rejected attempt read (set by the summarizer, for cost accounting)."""
        self.output_tokens = 0
        """Tokens the rejected attempt wrote."""
        super().__init__(f"summary rejected ({reason}): {detail}")


@dataclass(frozen=True, kw_only=True)
class SummaryCheck:
    """What a summary is checked against."""

    required_sections: Sequence[str]
    """Headings that must be present (matched case-insensitively by prefix)."""
    source_text: str = ""
    """The transcript it summarizes (for copy detection)."""
    source_tokens: int = 0
    """Tokens of everything it replaces (transcript and previous summary); 0 skips the length check."""
    previous_summary: str = ""
    """The summary it updates, if any."""
    language_sample: str = ""
    """What the user wrote (goal, latest messages): the summary must use the same script."""


def headings(text: str) -> list[str]:
    """Markdown heading titles in ``text``, in order."""
    return [m.group(1).strip().strip("*").strip() for m in _HEADING.finditer(text)]


def missing_sections(text: str, required: Sequence[str]) -> list[str]:
    """Required headings absent from ``text``."""
    titles = [h.lower() for h in headings(text)]
    return [r for r in required if not any(t.startswith(r.lower()) for t in titles)]


def script_weights(text: str) -> dict[str, float]:
    """Weighted letter counts per script (code, paths and headings left out)."""
    prose = _CODEISH.sub(" ", text)
    return {name: len(rx.findall(prose)) * weight for name, rx, weight in _SCRIPTS}


def dominant_script(text: str) -> tuple[str, float]:
    """The script most of ``text``'s prose is written in, and the total weight measured."""
    weights = script_weights(text)
    total = sum(weights.values())
    name = max(weights, key=lambda k: weights[k])
    return name, total


def _shingles(text: str, n: int = 6) -> set[tuple[str, ...]]:
    words = [w.lower() for w in _WORDS.findall(text)]
    return {tuple(words[i : i + n]) for i in range(max(len(words) - n + 1, 0))}


def copy_share(summary: str, source: str) -> float:
    """Share of the summary's word 6-grams that appear in ``source`` (0 when too short to tell)."""
    mine = _shingles(summary)
    if len(mine) < MIN_SHINGLES_FOR_COPY:
        return 0.0
    return len(mine & _shingles(source)) / len(mine)


def _check_shape(text: str, check: SummaryCheck) -> None:
    stripped = text.strip()
    if stripped[:1] in ("{", "["):
        try:
            json.loads(stripped)
        except json.JSONDecodeError:
            pass
        else:
            raise InvalidSummary("format", "the answer is JSON, not the sectioned Markdown notes")
    missing = missing_sections(text, check.required_sections)
    if missing:
        raise InvalidSummary("missing_sections", f"no heading for {', '.join(missing)}")


def _check_language(text: str, sample: str) -> None:
    expected, weight = dominant_script(sample)
    if weight < MIN_SCRIPT_WEIGHT:
        return
    weights = script_weights(text)
    total = sum(weights.values())
    if total < MIN_SCRIPT_WEIGHT:
        return
    share = weights[expected] / total
    if share < SCRIPT_SHARE:
        found = max(weights, key=lambda k: weights[k])
        raise InvalidSummary(
            "language", f"written in {found} script, the user writes {expected} ({share:.0%} of the summary)"
        )


def validate_summary(
    text: str,
    check: SummaryCheck,
    *,
    counter: TokenCounter,
    stop_reason: str = "",
    tool_calls: int = 0,
) -> None:
    """Raise :class:`InvalidSummary` when ``text`` must not be persisted; return when it is fine."""
    if tool_calls:
        raise InvalidSummary("tool_calls", f"the summarizer called {tool_calls} tool(s) instead of answering")
    if stop_reason == "max_tokens":
        raise InvalidSummary("truncated", "generation stopped at the output limit")
    if not text.strip():
        raise InvalidSummary("empty", "the summarizer returned no text")
    if _TOOL_MARKUP.search(text):
        raise InvalidSummary("tool_calls", "the answer contains tool-call markup")
    _check_shape(text, check)
    if check.language_sample:
        _check_language(text, check.language_sample)
    if check.previous_summary and text.strip() == check.previous_summary.strip() and check.source_text:
        raise InvalidSummary("copy", "the previous summary came back unchanged")
    share = copy_share(text, check.source_text) if check.source_text else 0.0
    if share >= COPY_SHARE:
        raise InvalidSummary("copy", f"{share:.0%} of it is copied from its input")
    if check.source_tokens:
        size = counter.count(text)
        if size >= check.source_tokens:
            raise InvalidSummary("not_shorter", f"{size} tokens for {check.source_tokens} tokens of input")
