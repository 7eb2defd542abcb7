"""What a lint run reports: the six rules by id, their thresholds, findings and the report.

The checks themselves are in :mod:`.lint`; this module is the vocabulary the CLI, the session
linter and the report share.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from ..fragments import HARD_MAX_TOKENS, REVIEW_THRESHOLD, FragmentRegistry
from .requests import BadLine

RuleId = Literal["R1", "R2", "R3", "R4", "R5", "R6"]
"""The six rules of model-visible context, by id (``docs/behaviours.md``, rows 44-49)."""

RULES: dict[RuleId, str] = {
    "R1": "history rewrite",
    "R2": "cache churn",
    "R3": "unbounded item",
    "R4": "item over 10K tokens",
    "R5": "new kind of item over 1K tokens (review)",
    "R6": "injected text no registered fragment produced",
}
"""The rules and their short names."""


@dataclass(frozen=True, kw_only=True)
class LintOptions:
    """Thresholds of the rules. Vary with ``dataclasses.replace``."""

    max_item_tokens: int = HARD_MAX_TOKENS
    """R4: no item may be larger."""
    review_tokens: int = REVIEW_THRESHOLD
    """R5: a new kind of item above this needs review."""
    unbounded_tokens: int = 2_500
    """R3 (foreign logs): an item above this with no truncation marker looks uncapped. Codex cuts
    tool output at 10,000 bytes, about 2,500 tokens; anything larger and uncut had no such cap."""
    max_breaks_per_10: int = 1
    """R2: prefix breaks allowed among 10 consecutive requests."""
    known_kinds: frozenset[str] = frozenset()
    """R5: kinds already reviewed (``tool_output:bash``, ``fragment:environment_context``; a registered
    fragment type by its name or as ``fragment:<name>``)."""
    registry: FragmentRegistry | None = None
    """R6 (our sessions): the registered fragment types injected items must come from."""
    max_findings_per_rule: int = 200
    """Findings kept per rule; more are counted only."""


@dataclass(frozen=True, kw_only=True)
class Finding:
    """One rule violation, at a request and an item."""

    rule: RuleId
    """``R1`` .. ``R6``."""
    request: int
    """The request number (1-based, call order)."""
    line: int
    """Its line in the source file (0 when not from a file)."""
    item: str
    """The item responsible (its label)."""
    message: str
    """What is wrong, in words."""
    details: dict[str, Any] = field(default_factory=dict)
    """Machine-readable facts (cause, tokens, kind, the breaks of a churn window...)."""
    occurrences: int = 1
    """How often the same problem recurred (R3, R5, R6 report a kind or tag once)."""

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "rule": self.rule,
            "name": RULES[self.rule],
            "request": self.request,
            "line": self.line,
            "item": self.item,
            "message": self.message,
            "details": self.details,
            "occurrences": self.occurrences,
        }


@dataclass(frozen=True, kw_only=True)
class LintReport:
    """Everything a lint run found."""

    source: str
    """What was linted (a file path or ``session <id>``)."""
    requests: int
    """Requests checked."""
    findings: tuple[Finding, ...]
    """Findings kept, in the order found."""
    counts: dict[RuleId, int]
    """Findings per rule, including those not kept."""
    breaks: int
    """Prefix breaks seen (explained ones included)."""
    unchecked_pairs: int
    """Consecutive requests that could not be compared (stateful continuations, unreadable items)."""
    bad_lines: tuple[BadLine, ...]
    """Lines skipped because they were not requests (the first 100)."""
    bad_line_count: int
    """All lines skipped."""

    @property
    def ok(self) -> bool:
        """Whether no rule found anything."""
        return not any(self.counts.values())

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "source": self.source,
            "requests": self.requests,
            "ok": self.ok,
            "counts": self.counts,
            "breaks": self.breaks,
            "unchecked_pairs": self.unchecked_pairs,
            "findings": [f.to_dict() for f in self.findings],
            "bad_lines": [{"line": b.line, "error": b.error} for b in self.bad_lines],
            "bad_line_count": self.bad_line_count,
        }
