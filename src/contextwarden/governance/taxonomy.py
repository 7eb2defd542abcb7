"""Context failure taxonomy (``docs/behaviours.md``, row 37): detectors that tag requests and sessions.

Was a failure the model's ("could not do it") or the context's ("never saw what it needed")? Each
detector tags the request where a context failure shows, naming the item responsible:

- ``OVERFLOW``: the request is larger than the model's input window (or could not be built at all);
- ``UNDER_CONTEXT``: the agent re-ran a call whose earlier result was evicted from its view (a
  re-read of evicted content), with no change to the resource in between;
- ``STALE_CONTEXT``: a resource was changed, and its older read is still shown unmarked, as current;
- ``CONFLICTING_CONTEXT``: a user constraint forbids touching a path that an earlier, still visible
  plan says it will change;
- ``SUMMARY_DRIFT``: a constraint the user stated is missing after the history was compacted;
- ``TOOL_OUTPUT_DOMINANCE``: tool output takes more than ``dominance_share`` of the request;
- ``INSTRUCTION_LOSS``: the system prompt or the original goal is missing from a later request;
- ``PREFIX_INSTABILITY``: the prefix broke without a recorded window event;
- ``IRRELEVANT_CONTEXT``: old, large tool output about things untouched for many turns fills more
  than ``irrelevant_share`` of the request;
- ``MISSING_EVIDENCE``: the agent says the tests pass with no passing run in view, or (our sessions)
  the failing run or error it is working on was masked.

Detectors read only the current and previous request plus bounded per-resource facts, so they run
over long logs; most conditions are heuristics stated above, tuned to flag clear cases.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..log.events import ToolCall
from ..models import get_profile
from ..window.conflicts import EDIT_VERB, OVERRIDE_MARK, forbidden_paths
from ..window.policies.presets import CODING_TOOL_POLICIES, ToolPolicy, policy_for
from ..window.policies.resources import Resource, resources_of
from ..window.state import extract_constraints
from ._diff import find_break
from ._items import canonical_json
from .requests import Request, RequestItem


class Failure(str, enum.Enum):
    """The context failures of the taxonomy (``docs/behaviours.md``, row 37)."""

    OVERFLOW = "OVERFLOW"
    UNDER_CONTEXT = "UNDER_CONTEXT"
    STALE_CONTEXT = "STALE_CONTEXT"
    CONFLICTING_CONTEXT = "CONFLICTING_CONTEXT"
    SUMMARY_DRIFT = "SUMMARY_DRIFT"
    TOOL_OUTPUT_DOMINANCE = "TOOL_OUTPUT_DOMINANCE"
    INSTRUCTION_LOSS = "INSTRUCTION_LOSS"
    PREFIX_INSTABILITY = "PREFIX_INSTABILITY"
    IRRELEVANT_CONTEXT = "IRRELEVANT_CONTEXT"
    MISSING_EVIDENCE = "MISSING_EVIDENCE"


@dataclass(frozen=True, kw_only=True)
class Tag:
    """One failure seen at one request."""

    failure: Failure
    """What kind of failure."""
    request: int
    """The request (1-based) where it shows."""
    item: str
    """The item responsible (its label), or ``request`` for the request as a whole."""
    detail: str
    """What was seen, in words."""

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"failure": self.failure.value, "request": self.request, "item": self.item, "detail": self.detail}


@dataclass(frozen=True, kw_only=True)
class TaxonomySettings:
    """Thresholds of the detectors."""

    dominance_share: float = 0.6
    """TOOL_OUTPUT_DOMINANCE above this share of the request's tokens."""
    irrelevant_share: float = 0.3
    """IRRELEVANT_CONTEXT above this share of the request's tokens."""
    irrelevant_after: int = 8
    """Tool output counts as irrelevant once this many requests old with its resources untouched."""
    irrelevant_min_tokens: int = 500
    """...and only items at least this large."""
    window: int | None = None
    """OVERFLOW limit; default: the input window of the model each request names."""


@dataclass(frozen=True, kw_only=True)
class TaxonomyReport:
    """The failures found over a sequence of requests."""

    source: str
    """What was classified."""
    requests: int
    """Requests seen."""
    tags: tuple[Tag, ...]
    """Every tag, in request order."""

    @property
    def counts(self) -> dict[str, int]:
        """Tags per failure (every failure listed, zeros included)."""
        counts = {f.value: 0 for f in Failure}
        for tag in self.tags:
            counts[tag.failure.value] += 1
        return counts

    @property
    def failures(self) -> frozenset[Failure]:
        """The failures the session shows at least once (the session's tags)."""
        return frozenset(t.failure for t in self.tags)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "source": self.source,
            "requests": self.requests,
            "counts": self.counts,
            "tags": [t.to_dict() for t in self.tags],
        }


_PASS_CLAIM = re.compile(
    r"\b(?:all (?:the )?tests? (?:now )?pass|tests? (?:are |now )?passing|tests? passed)\b", re.IGNORECASE
)
_PASS_RUN = re.compile(r"\b\d+ passed\b|^OK\b|\bPASS(?:ED)?\b|\ball tests passed\b", re.IGNORECASE | re.MULTILINE)
_FAIL_RUN = re.compile(r"\b\d+ failed\b|\bFAILED\b|\bFAIL\b", re.MULTILINE)
# A later message naming the file with one of these marks the older read (an edit tool's own
# "The file X has been updated." says the file changed after that read).
_OUTDATED = re.compile(
    r"out of date|outdated|stale|changed since|has changed|has been (?:updated|modified|edited|written|changed)",
    re.IGNORECASE,
)
_MAX_TRACKED = 5_000
_USER_WORDS = frozenset({"fragment:steering", "fragment:pinned_note"})
"""Fragments that carry the user's own words: their constraints count like a user message's."""


def _call_key(call: ToolCall) -> str:
    return f"{call.name}({canonical_json(call.arguments).decode('utf-8', 'surrogatepass')})"


def _bounded_put(mapping: dict[Any, Any], key: Any, value: Any) -> None:
    if key not in mapping and len(mapping) >= _MAX_TRACKED:
        mapping.pop(next(iter(mapping)))
    mapping[key] = value


@dataclass
class _Result:
    digest: bytes
    request: int
    label: str
    resources: tuple[Resource, ...]
    tokens: int


class Classifier:
    """Feeds requests one at a time, in call order, and collects tags."""

    def __init__(
        self,
        settings: TaxonomySettings | None = None,
        *,
        source: str = "",
        tool_policies: Sequence[ToolPolicy] = CODING_TOOL_POLICIES,
    ) -> None:
        """Classify with ``settings``; ``tool_policies`` (the policy in force) say what each tool touches."""
        self.settings = settings or TaxonomySettings()
        self.source = source
        self.tool_policies = tool_policies
        """Which resource a call reads or changes follows the tool policies of the agent's own policy."""
        self.tags: list[Tag] = []
        self.requests = 0
        self._prev: Request | None = None
        self._calls: dict[str, ToolCall] = {}
        self._results: dict[str, _Result] = {}
        self._last_call: dict[str, str] = {}
        self._touched: dict[str, int] = {}
        self._written: dict[str, int] = {}
        self._reads: dict[str, list[_Result]] = {}
        self._pending_stale: dict[str, list[_Result]] = {}
        self._anchors: list[tuple[str, str]] = []
        self._constraints: dict[str, str] = {}
        self._forbidden: dict[str, str] = {}
        self._system_anchor: str | None = None

    def _resources(self, call: ToolCall) -> tuple[Resource, ...]:
        policy = policy_for(call.name, call, self.tool_policies)
        return resources_of(call, policy.category)

    def tag(self, failure: Failure, request: int, item: str, detail: str) -> None:
        """Record a tag (detectors outside this class use it too)."""
        self.tags.append(Tag(failure=failure, request=request, item=item, detail=detail))

    def report(self) -> TaxonomyReport:
        """The tags so far."""
        return TaxonomyReport(source=self.source, requests=self.requests, tags=tuple(self.tags))

    def feed(self, request: Request) -> None:
        """Classify one request against what came before."""
        self.requests += 1
        prev = self._prev
        seen = {i.digest for i in prev.items} if prev is not None else set()
        new = [i for i in request.items if i.digest not in seen]
        self._size_checks(request)
        brk = find_break(prev, request) if prev is not None else None
        if brk is not None and not brk.explained:
            self.tag(Failure.PREFIX_INSTABILITY, request.number, brk.item, f"prefix broke: {brk.cause} ({brk.detail})")
        for item in new:
            self._learn(request, item, prev)
        if brk is not None or prev is None:
            self._check_losses(request, brk.cause if brk is not None else "")
        self._check_stale(request)
        self._check_irrelevant(request)
        self._prev = request

    # ------------------------------------------------------------------ per request

    def _size_checks(self, request: Request) -> None:
        total = request.total_tokens
        window = self.settings.window or (get_profile(request.model).input_window if request.model else None)
        reported = request.usage.input_tokens if request.usage is not None else 0
        if window and max(total, reported) > window:
            self.tag(
                Failure.OVERFLOW,
                request.number,
                "request",
                f"{max(total, reported)} tokens > the {window}-token input window",
            )
        tool = [i for i in request.messages if i.role == "tool"]
        share = sum(i.tokens for i in tool) / total if total else 0.0
        if tool and share > self.settings.dominance_share:
            largest = max(tool, key=lambda i: i.tokens)
            self.tag(
                Failure.TOOL_OUTPUT_DOMINANCE,
                request.number,
                largest.label,
                f"tool output is {share:.0%} of {total} tokens (largest: {largest.tokens})",
            )

    def _learn(self, request: Request, item: RequestItem, prev: Request | None) -> None:
        for call in item.calls:
            self._on_call(request, item, call, prev)
        if item.role == "tool" and item.call_id:
            self._on_result(request, item)
        if item.role == "user" and (not item.kind.startswith("fragment:") or item.kind in _USER_WORDS):
            self._on_user(request, item)
        if item.role == "assistant" and item.text and prev is not None:
            self._check_claim(request, item, prev)

    def _on_call(self, request: Request, item: RequestItem, call: ToolCall, prev: Request | None) -> None:
        _bounded_put(self._calls, call.id, call)
        key = _call_key(call)
        earlier = self._results.get(self._last_call.get(key, ""))
        if earlier is not None and prev is not None:
            visible = {i.digest for i in prev.items}
            changed = any(self._written.get(r.key, 0) > earlier.request for r in earlier.resources)
            if earlier.digest not in visible and not changed:
                self.tag(
                    Failure.UNDER_CONTEXT,
                    request.number,
                    item.label,
                    f"re-ran {key[:120]}: its result from request {earlier.request} ({earlier.label}) was "
                    "no longer in view",
                )
        _bounded_put(self._last_call, key, call.id)

    def _on_result(self, request: Request, item: RequestItem) -> None:
        if item.call_id in self._results:
            return  # a re-rendering (masked, cut) of a result already seen: its first form is what counts
        call = self._calls.get(item.call_id)
        resources = self._resources(call) if call is not None else ()
        result = _Result(
            digest=item.digest, request=request.number, label=item.label, resources=resources, tokens=item.tokens
        )
        _bounded_put(self._results, item.call_id, result)
        failed = bool(re.match(r"\s*(?:error|failed)", item.text, re.IGNORECASE))
        for r in resources:
            _bounded_put(self._touched, r.key, request.number)
            if r.kind != "file" or failed:
                continue
            if r.access == "write":
                _bounded_put(self._written, r.key, request.number)
                older = self._reads.pop(r.key, [])
                if older:
                    _bounded_put(self._pending_stale, r.key, older)
            elif r.access == "read":
                self._reads.setdefault(r.key, []).append(result)
                self._pending_stale.pop(r.key, None)

    def _on_user(self, request: Request, item: RequestItem) -> None:
        if not self._anchors and item.kind not in _USER_WORDS:
            self._anchors.append(("the original goal", item.text.strip()[:300]))
        text, _, marked = item.text.partition(OVERRIDE_MARK)
        for sentence in extract_constraints(text)[:20]:
            if len(self._constraints) < 200:
                self._constraints.setdefault(sentence, item.label)
        for path, sentence in forbidden_paths(text)[:20]:
            self._forbidden[path] = sentence
            self._check_conflict(request, path, sentence, marked)

    def _check_conflict(self, request: Request, path: str, sentence: str, marked: str) -> None:
        for other in request.messages:
            if other.role == "assistant" and path in other.text and EDIT_VERB.search(other.text):
                if path in marked:
                    return  # the constraint itself says this plan no longer applies
                self.tag(
                    Failure.CONFLICTING_CONTEXT,
                    request.number,
                    other.label,
                    f"this earlier plan changes {path}, but the user said: {sentence[:160]!r}",
                )
                return

    def _check_claim(self, request: Request, item: RequestItem, prev: Request) -> None:
        if not _PASS_CLAIM.search(item.text):
            return
        runs = [i for i in prev.messages if i.role == "tool" and _PASS_RUN.search(i.text)]
        if not any(not _FAIL_RUN.search(i.text) for i in runs):
            self.tag(
                Failure.MISSING_EVIDENCE,
                request.number,
                item.label,
                "claims the tests pass, but no passing test run was in view",
            )

    def _check_losses(self, request: Request, cause: str) -> None:
        if self._system_anchor is None and request.system:
            self._system_anchor = request.system[0].text.strip()[:300]
        if cause == "":
            return
        text = "\n".join(i.text for i in request.items)
        anchors = [("the system prompt", self._system_anchor or ""), *self._anchors]
        for name, anchor in anchors:
            if anchor and anchor not in text:
                self.tag(Failure.INSTRUCTION_LOSS, request.number, "request", f"{name} is no longer in the request")
        compacted = cause in ("messages_removed", "history_shortened", "message_edited")
        if compacted:
            for sentence, where in self._constraints.items():
                if sentence not in text:
                    self.tag(
                        Failure.SUMMARY_DRIFT,
                        request.number,
                        where,
                        f"the user's constraint {sentence[:160]!r} is missing after the history changed",
                    )

    def _check_stale(self, request: Request) -> None:
        if not self._pending_stale:
            return
        visible = {i.digest: i for i in request.items}
        for key, older in list(self._pending_stale.items()):
            shown = [visible[r.digest] for r in older if r.digest in visible]
            if not shown:
                self._pending_stale.pop(key)
                continue
            flagged = any(
                key in i.text and _OUTDATED.search(i.text) for i in request.messages if i.index > shown[-1].index
            )
            if not flagged:
                self.tag(
                    Failure.STALE_CONTEXT,
                    request.number,
                    shown[-1].label,
                    f"{key} changed at request {self._written.get(key)}, but this older read is shown unmarked",
                )
            self._pending_stale.pop(key)

    def _check_irrelevant(self, request: Request) -> None:
        s = self.settings
        total = request.total_tokens
        if not total:
            return
        stale_tokens = 0
        for item in request.messages:
            result = self._results.get(item.call_id) if item.role == "tool" else None
            if result is None or result.digest != item.digest or item.tokens < s.irrelevant_min_tokens:
                continue
            if request.number - result.request < s.irrelevant_after:
                continue
            recent = max((self._touched.get(r.key, 0) for r in result.resources), default=result.request)
            if request.number - recent >= s.irrelevant_after:
                stale_tokens += item.tokens
        if stale_tokens / total > s.irrelevant_share:
            self.tag(
                Failure.IRRELEVANT_CONTEXT,
                request.number,
                "request",
                f"{stale_tokens} of {total} tokens are tool output untouched for {s.irrelevant_after}+ requests",
            )
