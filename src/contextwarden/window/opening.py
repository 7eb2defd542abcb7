"""The window a compaction opens: its pinned block and its summary, rendered from the event.

A compaction event carries everything the new window needs (the summary, and a snapshot of the
task state with the goal, constraints and latest steering), so resuming reads nothing older.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Literal

from ..context import Message
from ..fragments import DEFAULT_REGISTRY
from ..log.events import Compaction, Event
from ..tokens import TokenCounter
from .accounting import message_tokens
from .items import ContextItem, Tier
from .state import TaskState

PINNED_START = DEFAULT_REGISTRY.get("pinned_context").start_marker
SUMMARY_START = DEFAULT_REGISTRY.get("conversation_summary").start_marker


def latest_compaction(events: Sequence[Event]) -> Compaction | None:
    """The newest compaction among ``events``, if any."""
    for event in reversed(events):
        if isinstance(event, Compaction):
            return event
    return None


def pinned_text(state: TaskState, counter: TokenCounter) -> str:
    """The anchors kept verbatim outside any summary: goal, constraints, latest steering."""
    lines = [
        "These stay true whatever the summary below says.",
        "",
        "Original task (verbatim):",
        state.goal or "(none recorded)",
    ]
    # A rule stated in the task is already shown, verbatim, in it: list it once.
    constraints = [c for c in state.constraints if c not in state.goal]
    if constraints:
        lines += ["", "User constraints (verbatim):"]
        lines += [f"- {c}" for c in constraints]
    if state.latest_steering:
        lines += ["", "Latest steering (verbatim):", state.latest_steering]
    return DEFAULT_REGISTRY.render("pinned_context", "\n".join(lines), counter).text


def summary_text(summary: str, covered_to_seq: int, counter: TokenCounter) -> str:
    """The summary as the model sees it, framed so it reads as history, not instructions."""
    body = (
        f"The conversation up to event {covered_to_seq} was compacted. Full details stay in the session log."
        f"\n\n{summary}"
    )
    return DEFAULT_REGISTRY.render("conversation_summary", body, counter).text


def compaction_blocks(compaction: Compaction, counter: TokenCounter) -> list[ContextItem]:
    """The pinned block and the summary block that open the compaction's window."""
    state = TaskState.from_dict(compaction.state)
    blocks: list[ContextItem] = []
    opening: tuple[tuple[Literal["pinned", "summary"], str, Tier], ...] = (
        ("pinned", pinned_text(state, counter), Tier.GOAL),
        ("summary", summary_text(compaction.summary, compaction.covered_to_seq, counter), Tier.TASK_STATE),
    )
    for kind, text, tier in opening:
        message = Message(role="user", text=text, section=kind, source_ids=(compaction.id,))
        tokens = message_tokens(message, counter)
        message = replace(message, tokens=tokens)
        blocks.append(
            ContextItem(
                id=f"{kind}:{compaction.id}",
                kind=kind,
                message=message,
                tokens=tokens,
                tier=tier,
                source_ids=(compaction.id,),
                recency=compaction.seq,
                original_tokens=tokens,
            )
        )
    return blocks
