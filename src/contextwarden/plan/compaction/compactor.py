"""The compactor: turns a window that no longer fits into one :class:`~contextwarden.log.events.Compaction`.

:class:`WindowCompactor` implements the manager's ``Compactor`` seam. For a window it

1. finds the cut (:func:`~contextwarden.plan.compaction.cutpoint.find_cut`); nothing old enough → None,
   with no model call and no event;
2. snapshots the task state at the cut as the new window's anchors (goal, constraints, latest
   steering, project rules stay verbatim outside the summary);
3. summarizes the leaving history: the update path gives the previous summary apart from the
   transcript, plus every item newly leaving (the previous window's kept tail included, since the
   new window's events start where the old tail started); every K compactions, or after a
   compaction that needed repair, it re-grounds from the raw events of the log instead;
4. summarizes the start of a split turn separately;
5. falls back to the structured summarizer when the model's summary is rejected or its call
   fails (a cancellation is never a fallback: it propagates and nothing is written);
6. verifies the result against the derived state and appends what is missing, and checks every
   statement it makes about the log (:mod:`.statements`), relabelling or dropping what is untrue;
7. returns the event. :func:`~contextwarden.plan.compaction.entry.compact` records why and appends
   it; a failed compaction appends nothing.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, replace

from ...budget import BudgetPolicy
from ...errors import (
    Cancelled,
    CompactionError,
    ProviderError,
    SummaryFallbackWarning,
    SummaryRejected,
)
from ...log.events import Compaction, Event, JSONValue, SettingChange, ToolResult
from ...log.store._protocol import SessionStore
from ...models import ModelProfile
from ...tokens import TokenCounter, best_counter
from ...window.items import ContextItem
from ...window.opening import compaction_blocks, pinned_text
from ...window.outcome import result_failed
from ...window.projection import Projection
from ...window.references import referenced_call
from ...window.taskstate import TaskState
from ._base import Summarizer, SummaryInput, SummaryOptions, SummaryResult
from .cutpoint import CutPoint, find_cut
from .serialize import entries_from_events, entries_from_items
from .structured import StructuredSummarizer
from .verify import anchor_state, reground_reason, verify_summary

MIN_SUMMARY_TOKENS = 96
"""A summary may always take at least this many tokens, however full the window."""
TURN_HEADING = "## Current Turn (started before the kept messages)"
"""Heading joining a split turn's prefix summary to the history summary."""


@dataclass(frozen=True, kw_only=True)
class CompactionSettings:
    """How compaction cuts, summarizes and checks. Vary it with ``dataclasses.replace``."""

    keep_recent_tokens: int = 20_000
    """At least this many tokens of the newest conversation stay verbatim."""
    keep_recent_max_share: float = 0.35
    """...but never more than this share of the model's compaction trigger, so a small window
    still has something old enough to summarize and room for it (no effect above ~90K-token windows)."""
    reground_every: int = 4
    """Re-ground from raw events on every K-th compaction (0: never on a schedule)."""
    reground_after_repair: bool = True
    """Re-ground when the previous compaction's verification had to repair its summary."""
    verify: bool = True
    """Check each summary against the derived state and append what is missing."""
    fallback: bool = True
    """When the summarizer fails or its summary is rejected, write the summary with the fallback
    summarizer (structured by default). False: the compaction fails, raising the cause, and the
    log stays unchanged."""
    budget: BudgetPolicy | None = None
    """The policy giving the trigger ``keep_recent_max_share`` applies to (None: the budget of the
    policy the compaction runs under, which :func:`~.entry.compact` passes)."""


@dataclass(frozen=True, kw_only=True)
class _Written:
    text: str
    results: tuple[SummaryResult, ...]
    fallbacks: tuple[str, ...]
    split: bool = False
    wasted_input: int = 0
    wasted_output: int = 0


class WindowCompactor:
    """The :class:`~contextwarden.plan.seams.Compactor` of contextwarden (see the module docstring)."""

    def __init__(
        self,
        store: SessionStore,
        *,
        summarizer: Summarizer | None = None,
        fallback: Summarizer | None = None,
        counter: TokenCounter | None = None,
        settings: CompactionSettings | None = None,
    ) -> None:
        """Compact sessions of ``store`` with ``summarizer`` (default: structured, no model).

        ``fallback`` writes the summary when ``summarizer`` fails or is rejected (default: the
        structured summarizer); pass the same counter as the manager's so sizes agree.
        """
        self.store = store
        self.counter = counter or best_counter()
        self.summarizer: Summarizer = summarizer or StructuredSummarizer(counter=self.counter)
        self.fallback: Summarizer = fallback or StructuredSummarizer(counter=self.counter)
        self.settings = settings or CompactionSettings()

    # ------------------------------------------------------------------ seam

    def compact_window(
        self, session_id: str, projection: Projection, *, profile: ModelProfile, reason: str
    ) -> Compaction | None:
        """The :class:`~contextwarden.plan.seams.Compactor` seam: the event for a window over its trigger."""
        return self.prepare(session_id, projection, profile=profile, trigger="budget", reason=reason)

    def budget(self, policy: BudgetPolicy | None = None) -> BudgetPolicy:
        """The budget sizes are derived from: the settings' own, else ``policy`` (the build's), else defaults."""
        return self.settings.budget or policy or BudgetPolicy()

    def keep_recent(self, profile: ModelProfile, budget: BudgetPolicy | None = None) -> int:
        """Tokens kept verbatim for ``profile``: the setting, capped by a share of the compaction threshold.

        ``budget`` is the policy the compaction runs under (see :meth:`budget`).
        """
        limit = self.budget(budget).compaction_threshold(profile)
        return max(min(self.settings.keep_recent_tokens, int(limit * self.settings.keep_recent_max_share)), 1)

    def summary_budget(
        self, profile: ModelProfile, cut: CutPoint, anchors: TaskState, budget: BudgetPolicy | None = None
    ) -> int:
        """The most tokens the summary may take in the agent's window.

        floor(0.8 · reserve), capped by what the window has left once the kept tail, the pinned anchors
        and the system prompt are in. The agent model's max output does not bound it: the summary is the
        summarizing model's output, and a model summarizer caps it at its own model's max output.
        """
        fixed = self.counter.count(pinned_text(anchors, self.counter)) + self.counter.count("\n\n".join(anchors.system))
        sizes = self.budget(budget)
        room = sizes.usable_input(profile) - cut.kept_tokens - fixed - 256
        return max(min(sizes.summary_share(), room), MIN_SUMMARY_TOKENS)

    def prepare(
        self,
        session_id: str,
        projection: Projection,
        *,
        profile: ModelProfile,
        trigger: str,
        reason: str = "",
        focus: str = "",
        options: SummaryOptions | None = None,
        reground: bool = False,
        budget: BudgetPolicy | None = None,
    ) -> Compaction | None:
        """Build the compaction event for the session's window; the caller appends it.

        ``budget`` is the budget of the policy it runs under (it sizes the kept tail and the summary
        unless the settings fix one). None when nothing is old enough to summarize or the result
        would not be smaller.
        """
        options = options or SummaryOptions()
        options.check_cancelled("before it started")
        keep = self.keep_recent(profile, budget)
        cut = find_cut(projection.items, keep_recent=keep, keep_ids=projection.state.evidence_ids)
        if cut is None:
            return None
        previous = projection.compaction
        base = TaskState.from_dict(previous.state) if previous is not None else None
        window_events = self.store.read_window(session_id)
        anchors = anchor_state(
            window_events,
            base=base,
            first_kept_seq=cut.first_kept_seq,
            leaving=cut.leaving,
            policies=projection.config.tool_policies,
        )
        why_reground = (
            "explicit request"
            if reground
            else reground_reason(
                previous, every=self.settings.reground_every, after_repair=self.settings.reground_after_repair
            )
        )
        failed = frozenset(e.id for e in window_events if isinstance(e, ToolResult) and result_failed(e))
        written = self._write(
            session_id,
            projection,
            cut,
            anchors,
            failed=failed,
            focus=focus,
            reground=why_reground,
            options=options,
            max_tokens=self.summary_budget(profile, cut, anchors, budget),
            thinking=(thinking := _thinking_level(window_events, previous)),
        )
        options.check_cancelled("before it was recorded")
        summary, verification = written.text, {}
        if self.settings.verify:
            kept_text = _kept_text(cut.kept, window_events)
            summary, check = verify_summary(
                summary,
                state=projection.state,
                anchors=anchors,
                kept_text=kept_text,
                entries=entries_from_events(window_events),
                kept_ids=frozenset(sid for i in cut.kept for sid in i.message.source_ids),
            )
            verification = check.to_dict()
        details: dict[str, JSONValue] = {
            "trigger": trigger,
            "reason": reason,
            "focus": focus,
            "keep_recent_tokens": keep,
            "split_turn": written.split,
            "reground": why_reground,
            "fallback": list(written.fallbacks),
            "notes": [n for r in written.results for n in r.notes],
            "summarizer_calls": sum(r.calls for r in written.results),
            "rejected_input_tokens": written.wasted_input,
            "rejected_output_tokens": written.wasted_output,
            **({"thinking": thinking} if thinking else {}),
        }
        if projection.exposed_tools is not None:
            details["exposed_tools"] = list(projection.exposed_tools)
        event = Compaction(
            summary=summary,
            first_kept_seq=cut.first_kept_seq,
            covered_from_seq=previous.covered_from_seq if previous is not None else _first_seq(cut),
            covered_to_seq=cut.first_kept_seq - 1,
            tokens_before=projection.total,
            summarizer=_who(written),
            summarizer_input_tokens=sum(r.input_tokens for r in written.results) + written.wasted_input,
            summarizer_output_tokens=sum(r.output_tokens for r in written.results) + written.wasted_output,
            verification=verification,
            state=anchors.to_dict(),
            details=details,
        )
        after = sum(b.tokens for b in compaction_blocks(event, self.counter)) + cut.kept_tokens
        if after >= projection.total:
            return None
        return replace(event, tokens_after=after)

    # ------------------------------------------------------------------ writing

    def _write(
        self,
        session_id: str,
        projection: Projection,
        cut: CutPoint,
        anchors: TaskState,
        *,
        failed: frozenset[str],
        focus: str,
        reground: str,
        options: SummaryOptions,
        max_tokens: int,
        thinking: str | None,
    ) -> _Written:
        previous = projection.compaction
        summary_tokens = sum(i.tokens for i in projection.items if i.kind == "summary")
        # A split turn gets its own prefix summary only when history precedes it in this window;
        # otherwise (a session that is one long turn) the whole leaving part is the history.
        split = bool(cut.turn_prefix and cut.history)
        history = cut.history if split else cut.leaving
        if reground:
            end = cut.turn_prefix[0].recency if split else cut.first_kept_seq
            raw = [e for e in self.store.read(session_id) if e.seq < end]
            entries, prior = tuple(entries_from_events(raw)), ""
        else:
            entries, prior = (
                tuple(entries_from_items(history, failed=failed)),
                previous.summary if previous is not None else "",
            )
        wasted = [0, 0]
        data = SummaryInput(
            entries=entries,
            state=anchors,
            previous_summary=prior,
            focus=focus,
            reground=bool(reground),
            max_tokens=max_tokens * 2 // 3 if split else max_tokens,
            anchors_pinned=True,
            replaced_tokens=sum(i.tokens for i in history) + summary_tokens,
            thinking=thinking,
        )
        result, why = self._summarize(data, options, wasted)
        parts, results = [result.text], [result]
        fallbacks = [f"history: {why}"] if why else []
        if split:
            data = SummaryInput(
                entries=tuple(entries_from_items(cut.turn_prefix, failed=failed)),
                state=anchors,
                purpose="turn_prefix",
                focus=focus,
                max_tokens=max_tokens // 3,
                anchors_pinned=True,
                replaced_tokens=sum(i.tokens for i in cut.turn_prefix),
                thinking=thinking,
            )
            result, why = self._summarize(data, options, wasted)
            parts.append(f"{TURN_HEADING}\n\n{_demote(result.text)}")
            results.append(result)
            fallbacks += [f"turn prefix: {why}"] if why else []
        return _Written(
            text="\n\n".join(parts),
            results=tuple(results),
            fallbacks=tuple(fallbacks),
            split=split,
            wasted_input=wasted[0],
            wasted_output=wasted[1],
        )

    def _summarize(self, data: SummaryInput, options: SummaryOptions, wasted: list[int]) -> tuple[SummaryResult, str]:
        try:
            return self.summarizer.summarize(data, options=options), ""
        except Cancelled:
            raise
        except (SummaryRejected, ProviderError, CompactionError) as exc:
            wasted[0] += getattr(exc, "input_tokens", 0)
            wasted[1] += getattr(exc, "output_tokens", 0)
            if not self.settings.fallback or self.fallback is self.summarizer:
                raise
            options.check_cancelled("after the summarizer failed")
            result = self.fallback.summarize(data, options=options)
            why = f"{self.summarizer.name} failed ({type(exc).__name__}: {exc}); used {result.summarizer}"
            warnings.warn(f"compaction: {why}", SummaryFallbackWarning, stacklevel=2)
            return result, why


def _thinking_level(events: Sequence[Event], previous: Compaction | None) -> str | None:
    """The session's thinking level: its latest ``SettingChange`` naming one, else what the last compaction saw."""
    for event in reversed(events):
        if isinstance(event, SettingChange) and isinstance(level := event.settings.get("thinking"), str) and level:
            return level
    level = previous.details.get("thinking") if previous is not None else None
    return level if isinstance(level, str) and level else None


def _kept_text(kept: Sequence[ContextItem], window_events: Sequence[Event]) -> str:
    """The kept items' text as the window after the compaction shows it.

    A result sent as a reference to a twin the compaction takes out is ingested again in full there
    (its twin is no longer shown), so its own output is what the summary is checked against.
    """
    calls = {i.message.tool_call_id for i in kept if i.message.tool_call_id}
    outputs = {e.id: e.output for e in window_events if isinstance(e, ToolResult)}
    texts = []
    for item in kept:
        twin = referenced_call(item.message.text)
        full = [outputs[s] for s in item.message.source_ids if s in outputs] if twin not in calls else []
        texts.append(full[0] if twin is not None and full else _item_text(item))
    return "\n".join(texts)


def _item_text(item: ContextItem) -> str:
    m = item.message
    calls = " ".join(f"{c.name} {c.arguments}" for c in m.tool_calls)
    return f"{m.text}\n{calls}" if calls else m.text


def _first_seq(cut: CutPoint) -> int:
    return min((i.recency for i in cut.leaving if i.recency), default=1)


def _demote(text: str) -> str:
    """Turn a prefix summary's ``## `` headings into ``### `` so it nests under :data:`TURN_HEADING`."""
    return "\n".join(f"#{line}" if line.startswith("## ") else line for line in text.splitlines())


def _who(written: _Written) -> str:
    names = list(dict.fromkeys(r.summarizer for r in written.results))
    model = next((r.model for r in written.results if r.model), "")
    who = "+".join(names)
    return f"{who} ({model})" if model and model not in who else who
