"""Retention probes: what must be visible in every request, checked on the rendered request.

The probes follow the transcript, not the strategy: :class:`ProbeTracker` folds the events as they
happened into the derived task state, and :meth:`ProbeTracker.check` asks of one rendered request
(OpenAI Chat body) whether the model can see

- ``task``: the original task statement (the first user message), verbatim;
- ``constraints``: every user constraint known at that point (``TaskState.constraints``), verbatim;
- ``latest_tool_result``: the most recent tool result, verbatim up to its truncation marker
  (a result cut at ingestion passes when the part before ``[... output truncated`` is its start);
- ``failing_evidence``: the latest failing test run or unresolved error output, the same way,
  until a later run passes or the error is resolved;
- ``files_modified``: the name of every file modified so far.

Texts are compared with whitespace collapsed, and tool outputs after the lossless terminal
normalization every strategy may apply (ANSI escapes, progress lines, repeated lines), so a
strategy is not penalized for reformatting, only for losing content. A probe with nothing to
check yet (no tool result, no failure, no modified file) is not applicable and not counted.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..events import Event, ToolResult
from ..policies.normalize import normalize_output
from ..state import StateBuilder, TaskState

PROBE_KINDS: tuple[str, ...] = ("task", "constraints", "latest_tool_result", "failing_evidence", "files_modified")
"""Every probe, in report order."""
TRUNCATION_MARKER = "[... output truncated"
"""How a tool output cut at ingestion announces the cut (``contextwarden.policies.truncate``)."""


def _ws(text: str) -> str:
    return " ".join(text.split())


def _canon_output(text: str) -> str:
    return _ws(normalize_output(text).text)


@dataclass(frozen=True, kw_only=True)
class ProbeOutcome:
    """The probes of one request: ``True`` kept, ``False`` missed, absent when not applicable."""

    results: dict[str, bool] = field(default_factory=dict)
    """Probe kind → kept."""
    missing: dict[str, str] = field(default_factory=dict)
    """Probe kind → what was not visible (for the report)."""

    @property
    def kept(self) -> int:
        """Probes satisfied."""
        return sum(1 for v in self.results.values() if v)

    @property
    def applicable(self) -> int:
        """Probes that had something to check."""
        return len(self.results)


def request_texts(body: Mapping[str, Any]) -> tuple[str, dict[str, str]]:
    """All visible text of a request (whitespace collapsed) and the content of each tool message by call id."""
    parts: list[str] = []
    tools: dict[str, str] = {}
    for message in body.get("messages", ()):
        content = message.get("content")
        text = (
            content
            if isinstance(content, str)
            else " ".join(str(p.get("text", "")) for p in content or () if isinstance(p, Mapping))
        )
        parts.append(text)
        for call in message.get("tool_calls") or ():
            function = call.get("function", {})
            parts.append(f"{function.get('name', '')} {function.get('arguments', '')}")
        if message.get("role") == "tool":
            tools[str(message.get("tool_call_id", ""))] = text
    return _ws("\n".join(parts)), tools


class ProbeTracker:
    """Follows a transcript's events and checks the probes against each request built from them."""

    def __init__(self) -> None:
        self._state = StateBuilder()
        self._latest: ToolResult | None = None
        self._results: dict[str, ToolResult] = {}
        self._canon: dict[str, str] = {}

    @property
    def state(self) -> TaskState:
        """The derived task state after the events so far."""
        return self._state.state

    def add(self, event: Event) -> None:
        """Fold one transcript event (as stored, with its seq)."""
        self._state.apply(event)
        if isinstance(event, ToolResult):
            self._latest = event
            self._results[event.id] = event

    def latest_evidence(self) -> ToolResult | None:
        """The newest failing test run or unresolved error output, if any."""
        found = [self._results[i] for i in self.state.evidence_ids if i in self._results]
        return max(found, key=lambda r: r.seq, default=None)

    def protected_ids(self) -> frozenset[str]:
        """Tool results a reduction must keep verbatim now for the probes to hold."""
        ids = {r.id for r in (self._latest, self.latest_evidence()) if r is not None}
        return frozenset(ids)

    def check(self, body: Mapping[str, Any]) -> ProbeOutcome:
        """Check every applicable probe against one rendered OpenAI Chat request."""
        text, tools = request_texts(body)
        state = self.state
        results: dict[str, bool] = {}
        missing: dict[str, str] = {}

        def record(kind: str, ok: bool, what: str) -> None:
            results[kind] = ok
            if not ok:
                missing[kind] = what

        if state.goal:
            goal = _ws(state.goal)
            record("task", goal in text, goal[:80])
        if state.constraints:
            lost = [c for c in state.constraints if _ws(c.rstrip("…")) not in text]
            record("constraints", not lost, "; ".join(c[:60] for c in lost))
        if self._latest is not None:
            record(
                "latest_tool_result",
                self._visible(self._latest, tools),
                f"{self._latest.tool_name} result at seq {self._latest.seq}",
            )
        evidence = self.latest_evidence()
        if evidence is not None:
            record(
                "failing_evidence", self._visible(evidence, tools), f"{evidence.tool_name} result at seq {evidence.seq}"
            )
        if state.files_modified:
            lost = [f for f in state.files_modified if posixpath.basename(f.rstrip("/")) not in text]
            record("files_modified", not lost, ", ".join(lost))
        return ProbeOutcome(results=results, missing=missing)

    def _visible(self, result: ToolResult, tools: Mapping[str, str]) -> bool:
        shown = tools.get(result.call_id)
        if shown is None:
            return False
        original = self._canon.get(result.id)
        if original is None:
            original = self._canon[result.id] = _canon_output(result.output)
        if not original:
            return True
        cut = shown.find(TRUNCATION_MARKER)
        if cut < 0:
            return original in _canon_output(shown)
        head = _canon_output(shown[:cut])
        return bool(head) and original.startswith(head)
