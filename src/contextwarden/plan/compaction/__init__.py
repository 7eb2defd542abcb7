"""Compaction: cut points, summarizers, validation, verification, re-grounding and triggers.

A compaction never edits history: it appends one :class:`~contextwarden.log.events.Compaction`
window event ("from here on the model sees this summary instead of the events before
``first_kept_seq``"), and every path that compacts appends it through :func:`compact`, which records
on it who decided and why (:mod:`.entry`). Wire it into a manager and an agent loop like this::

    compactor = WindowCompactor(store, summarizer=LLMSummarizer(provider, model="gpt-4o-mini"))
    manager = ContextManager(store, compactor=compactor)
    hook = CompactionHook(manager)            # on_before_turn for run_agent_loop
    compact(manager, session_id, model="gpt-4o", focus="the failing parser tests")

Without a model, the default :class:`StructuredSummarizer` builds the summary from the derived
task state, deterministically and offline.
"""

from __future__ import annotations

from ...window.accounting import Estimate
from ._base import Summarizer, SummaryInput, SummaryOptions, SummaryResult
from .compactor import CompactionSettings, WindowCompactor
from .cutpoint import CutPoint, find_cut
from .entry import OVERFLOW_TRIGGER, PLANNER_TRIGGER, compact, compaction_decision
from .remote import adopt_remote_compaction, filter_remote_items
from .serialize import Entry, entries_from_events, entries_from_items, fit_transcript
from .structured import StructuredSummarizer
from .summarizers import LLMSummarizer, LLMSummarizerSettings
from .triggers import CompactionHook, TriggerDecision, TriggerSettings, Turn, estimate_request
from .validate import InvalidSummary, SummaryCheck, validate_summary
from .verify import Verification, anchor_state, reground_reason, verify_summary

__all__ = [
    "OVERFLOW_TRIGGER",
    "PLANNER_TRIGGER",
    "CompactionHook",
    "CompactionSettings",
    "CutPoint",
    "Entry",
    "Estimate",
    "InvalidSummary",
    "LLMSummarizer",
    "LLMSummarizerSettings",
    "StructuredSummarizer",
    "Summarizer",
    "SummaryCheck",
    "SummaryInput",
    "SummaryOptions",
    "SummaryResult",
    "TriggerDecision",
    "TriggerSettings",
    "Turn",
    "Verification",
    "WindowCompactor",
    "adopt_remote_compaction",
    "anchor_state",
    "compact",
    "compaction_decision",
    "entries_from_events",
    "entries_from_items",
    "estimate_request",
    "filter_remote_items",
    "find_cut",
    "fit_transcript",
    "reground_reason",
    "validate_summary",
    "verify_summary",
]
