"""The six rules for model-visible context (``docs/behaviours.md``, rows 44-49), checked over a sequence of requests.

- **R1 history rewrite**: request t+1 does not extend request t, and no recorded window event
  (compaction, context edits, tool-set change) explains it. Reported per break, with the first
  differing item.
- **R2 cache churn**: more than ``max_breaks_per_10`` prefix breaks among 10 consecutive requests,
  each with what broke it (a timestamp or id in the system prompt, reordered or changed tools, an
  edited earlier message...). Planned breaks after window events count too: they cost the cache.
- **R3 unbounded items**: an item over its declared hard cap (our sessions), or, in a foreign log, an
  injected item (tool output, tagged fragment, developer message) over ``unbounded_tokens`` of a kind
  that never shows a truncation marker ("looks uncapped").
- **R4 items over 10K tokens**.
- **R5 items over 1K tokens of a new kind**: they need a person's review. Reported once per kind;
  kinds already reviewed go in ``known_kinds``.
- **R6 unregistered injected text**: in our sessions, an injected item no registered fragment type
  produced; in a foreign log, a ``<tag>...</tag>`` block in system, developer or user text whose
  body changes between requests.

The :class:`Linter` is fed one request at a time and keeps only the previous request, so it checks a
log of any length in bounded memory; findings of one rule beyond ``max_findings_per_rule`` are
counted but not kept.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

from ..fragments import REVIEW_THRESHOLD
from ..tokens import TokenCounter
from ._diff import CAUSES, PrefixBreak, find_break
from .findings import RULES, Finding, LintOptions, LintReport, RuleId
from .requests import BadLine, Request, RequestItem, read_requests

__all__ = [
    "RULES",
    "TRUNCATION_MARKER",
    "Finding",
    "LintOptions",
    "LintReport",
    "Linter",
    "RuleId",
    "lint_file",
    "lint_requests",
    "tagged_blocks",
]

TRUNCATION_MARKER = re.compile(
    r"truncat|omitted|cut from the middle|elided|\[\.\.\.|\.\.\.\s*\[|…\[|\d+ (?:more )?(?:lines|chars|characters|"
    r"bytes|tokens) (?:removed|hidden|skipped)",
    re.IGNORECASE,
)
"""Words by which a harness tells the model that an output was cut."""

_TAG = re.compile(r"<([A-Za-z][\w.:-]{0,63})(?:\s[^<>]{0,300})?>")
# R3 and R5 are about what a harness injects: not the model's own output, the schemas, the user's
# own words or the base system prompt (R4 still bounds them all).
_NOT_INJECTED = frozenset({"assistant", "reasoning", "tool_schema", "user", "system"})
_MAX_TAGS = 1_000
_MAX_BLOCKS_PER_ITEM = 50


def tagged_blocks(text: str, *, limit: int = _MAX_BLOCKS_PER_ITEM) -> list[tuple[str, str]]:
    """``(tag, body)`` of the outermost ``<tag ...>body</tag>`` blocks in ``text``, at most ``limit``."""
    blocks: list[tuple[str, str]] = []
    pos = 0
    for match in _TAG.finditer(text):
        if match.start() < pos:
            continue
        tag = match.group(1)
        end = text.find(f"</{tag}>", match.end())
        if end < 0:
            continue
        blocks.append((tag, text[match.end() : end]))
        pos = end + len(tag) + 3
        if len(blocks) >= limit:
            break
    return blocks


def _short(digest_of: str) -> bytes:
    return hashlib.blake2b(digest_of.encode("utf-8", "surrogatepass"), digest_size=8).digest()


class Linter:
    """Checks requests one at a time; call :meth:`feed` in call order, then :meth:`report`."""

    def __init__(self, options: LintOptions | None = None, *, source: str = "") -> None:
        self.options = options or LintOptions()
        self.source = source
        self._prev: Request | None = None
        self._requests = 0
        self._findings: list[Finding] = []
        self._kept: dict[RuleId, int] = {}
        self._counts: dict[RuleId, int] = dict.fromkeys(RULES, 0)
        self._by_key: dict[str, int] = {}
        self._window: list[PrefixBreak] = []
        self._window_start = 1
        self._breaks = 0
        self._unchecked = 0
        self._bad: list[BadLine] = []
        self._bad_count = 0
        self._flagged: set[bytes] = set()
        self._capped_kinds: set[str] = set()
        self._tags: dict[str, tuple[bytes, int]] = {}

    # ------------------------------------------------------------------ feeding

    def bad_line(self, bad: BadLine) -> None:
        """Record a line that was not a request."""
        self._bad_count += 1
        if len(self._bad) < 100:
            self._bad.append(bad)

    def add(self, finding: Finding) -> None:
        """Record a finding made outside the request stream (for example about a session's setup)."""
        self._add(finding)

    def feed(self, request: Request) -> None:
        """Check one request against the one before it and record what it finds."""
        self._requests += 1
        while request.number >= self._window_start + 10:
            self._close_window()
        prev = self._prev
        if prev is not None:
            if not request.comparable:
                self._unchecked += 1
            brk = find_break(prev, request)
            if brk is not None:
                self._on_break(brk)
        seen = {item.digest for item in prev.items} if prev is not None else set()
        for item in request.items:
            if item.digest not in seen:
                self._check_item(request, item)
        if not request.unreadable:  # the next request is compared with the last one that was read
            self._prev = request

    def report(self) -> LintReport:
        """The findings so far (closes the open churn window)."""
        self._close_window()
        findings = tuple(
            replace(f, occurrences=self._by_key.get(_key(f), 1)) if _key(f) in self._by_key else f
            for f in self._findings
        )
        return LintReport(
            source=self.source,
            requests=self._requests,
            findings=findings,
            counts=dict(self._counts),
            breaks=self._breaks,
            unchecked_pairs=self._unchecked,
            bad_lines=tuple(self._bad),
            bad_line_count=self._bad_count,
        )

    # ------------------------------------------------------------------ recording

    def _add(self, finding: Finding | Callable[[], Finding], *, rule: RuleId | None = None, key: str = "") -> None:
        """Record a finding; ``finding`` may be a callable so findings past the cap cost nothing."""
        if key:
            if key in self._by_key:
                self._by_key[key] += 1
                return
            self._by_key[key] = 1
        if rule is None:
            if not isinstance(finding, Finding):
                raise TypeError("a deferred finding needs its rule")
            rule = finding.rule
        self._counts[rule] += 1
        if self._kept.get(rule, 0) >= self.options.max_findings_per_rule:
            return
        made = finding if isinstance(finding, Finding) else finding()
        if key:
            made.details["key"] = key
        self._kept[rule] = self._kept.get(rule, 0) + 1
        self._findings.append(made)

    # ------------------------------------------------------------------ R1, R2

    def _on_break(self, brk: PrefixBreak) -> None:
        self._breaks += 1
        self._window.append(brk)
        if brk.explained:
            return
        self._add(
            lambda: Finding(
                rule="R1",
                request=brk.request,
                line=brk.line,
                item=brk.item,
                message=f"request {brk.request} does not extend request {brk.request - 1}: "
                f"{CAUSES[brk.cause]} ({brk.describe()})",
                details={"cause": brk.cause, "section": brk.section, "shared_tokens": brk.shared_tokens},
            ),
            rule="R1",
        )

    def _close_window(self) -> None:
        start, end = self._window_start, self._window_start + 9
        breaks, self._window = self._window, []
        self._window_start += 10
        if len(breaks) <= self.options.max_breaks_per_10:
            return
        first = breaks[0]
        self._add(
            lambda: Finding(
                rule="R2",
                request=first.request,
                line=first.line,
                item=first.item,
                message=f"{len(breaks)} prefix breaks in requests {start}-{end} "
                f"(more than {self.options.max_breaks_per_10} per 10): "
                f"{'; '.join(sorted({CAUSES[b.cause] for b in breaks}))}",
                details={
                    "window": [start, end],
                    "breaks": [
                        {
                            "request": b.request,
                            "item": b.item,
                            "cause": b.cause,
                            "detail": b.describe(),
                            "window_events": list(b.window_events),
                        }
                        for b in breaks
                    ],
                },
            ),
            rule="R2",
        )

    # ------------------------------------------------------------------ R3-R6

    def _at(
        self, rule: RuleId, request: Request, item: RequestItem, message: str, details: dict[str, Any], *, key: str = ""
    ) -> None:
        self._add(
            Finding(
                rule=rule, request=request.number, line=request.line, item=item.label, message=message, details=details
            ),
            key=key,
        )

    def _check_item(self, request: Request, item: RequestItem) -> None:
        self._check_bounds(request, item)
        if item.injected is None:
            self._check_foreign_size(request, item)
            self._check_foreign_fragments(request, item)
        elif item.injected and self.options.registry is not None:
            self._check_registered(request, item)

    def _check_bounds(self, request: Request, item: RequestItem) -> None:
        if item.digest in self._flagged:
            return
        facts: dict[str, Any] = {"kind": item.kind, "tokens": item.tokens}
        if item.tokens > self.options.max_item_tokens:
            self._flagged.add(item.digest)
            self._at(
                "R4",
                request,
                item,
                f"{item.kind} item of {item.tokens} tokens exceeds the {self.options.max_item_tokens}-token maximum",
                facts,
            )
        if item.cap is not None and item.tokens > item.cap:
            self._flagged.add(item.digest)
            self._at(
                "R3",
                request,
                item,
                f"{item.kind} item of {item.tokens} tokens exceeds its hard cap of {item.cap}",
                {**facts, "cap": item.cap},
            )

    def _check_foreign_size(self, request: Request, item: RequestItem) -> None:
        opts = self.options
        if item.kind in _NOT_INJECTED:
            return
        facts: dict[str, Any] = {"kind": item.kind, "tokens": item.tokens}
        if item.tokens > opts.unbounded_tokens:
            if TRUNCATION_MARKER.search(item.text):
                self._capped_kinds.add(item.kind)
            elif item.kind not in self._capped_kinds:
                self._at(
                    "R3",
                    request,
                    item,
                    f"{item.kind} item of {item.tokens} tokens with no truncation marker: looks uncapped",
                    facts,
                    key=f"R3:{item.kind}",
                )
        if item.tokens > opts.review_tokens and item.kind not in opts.known_kinds:
            self._at(
                "R5",
                request,
                item,
                f"new kind of item {item.kind!r} reaches {item.tokens} tokens "
                f"(over {opts.review_tokens}): needs review",
                facts,
                key=f"R5:{item.kind}",
            )

    def _check_foreign_fragments(self, request: Request, item: RequestItem) -> None:
        if item.role not in ("system", "developer", "user") or item.kind.startswith("tool_output:"):
            return
        for tag, body in tagged_blocks(item.text):
            digest = _short(body)
            last = self._tags.get(tag)
            if last is None:
                if len(self._tags) < _MAX_TAGS:
                    self._tags[tag] = (digest, request.number)
                continue
            if last[0] != digest:
                self._at(
                    "R6",
                    request,
                    item,
                    f"fragment-like block <{tag}> changed since request {last[1]}: "
                    "injected text that changes between requests must be a registered, capped fragment "
                    "type",
                    {"tag": tag, "previous_request": last[1]},
                    key=f"R6:{tag}",
                )
            self._tags[tag] = (digest, request.number)

    def _check_registered(self, request: Request, item: RequestItem) -> None:
        registry = self.options.registry
        assert registry is not None
        ftype = registry.find(item.text)
        if ftype is None:
            self._at(
                "R6",
                request,
                item,
                f"injected {item.kind} text is not a registered fragment type",
                {"kind": item.kind, "source": item.source},
                key=f"R6:{item.kind}",
            )
            if item.tokens > self.options.review_tokens and item.kind not in self.options.known_kinds:
                self._at(
                    "R5",
                    request,
                    item,
                    f"unregistered injected {item.kind} reaches {item.tokens} tokens "
                    f"(over {self.options.review_tokens}): needs review",
                    {"kind": item.kind, "tokens": item.tokens},
                    key=f"R5:{item.kind}",
                )
        elif ftype.needs_review and not {ftype.name, f"fragment:{ftype.name}"} & self.options.known_kinds:
            self._at(
                "R5",
                request,
                item,
                f"fragment type {ftype.name!r} may reach {ftype.max_tokens} tokens "
                f"(over {REVIEW_THRESHOLD}): needs review",
                {"fragment": ftype.name, "cap": ftype.max_tokens},
                key=f"R5:fragment:{ftype.name}",
            )


def _key(finding: Finding) -> str:
    key = finding.details.get("key", "")
    return key if isinstance(key, str) else ""


def lint_requests(
    requests: Iterable[Request | BadLine], *, options: LintOptions | None = None, source: str = ""
) -> LintReport:
    """Check a stream of requests (in call order) against the six rules."""
    linter = Linter(options, source=source)
    for request in requests:
        if isinstance(request, BadLine):
            linter.bad_line(request)
        else:
            linter.feed(request)
    return linter.report()


def lint_file(
    path: str | os.PathLike[str], *, options: LintOptions | None = None, counter: TokenCounter | None = None
) -> LintReport:
    """Check a JSONL file of rendered requests (one payload per line, in call order), streaming it."""
    return lint_requests(read_requests(path, counter=counter), options=options, source=str(path))
