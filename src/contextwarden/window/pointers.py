"""Results that point back: a client's short answer that refers the model to an earlier tool result.

Some clients do not run a tool again when they think the model already holds its answer. Claude
Code answers a second ``Read`` of an unchanged file with a one-line note ("file unchanged since your
last Read; refer to that earlier tool_result"), not the file. That is true of the client's own
history, but not of a window that has since masked that earlier result: the model would be sent
back to a placeholder. So when such a pointer arrives and the earlier result on the same file is
no longer shown as it was read, the new result shows that earlier output (bounded as it was at
ingestion) under one line saying where it comes from. The new result has never been sent, so
this changes no cached prefix; and it is the file's latest read, so the rules that keep the
working set's current reads visible keep it while it stands.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from ..context import Decision
from ..log.events import ToolResult
from ..tokens import TokenCounter
from .ingest import EarlierOutput, ProjectionConfig
from .items import REDUCED, ContextItem
from .policies.placeholders import Retrievable
from .policies.presets import ToolPolicy, apply_policy
from .policies.resources import Resource
from .policies.truncate import Truncation

POINTER_PATTERNS = (
    re.compile(r"\bunchanged since (?:your|the) (?:last|previous|earlier) read\b", re.IGNORECASE),
    re.compile(r"\brefer to (?:that|the) (?:earlier|previous) tool_result\b", re.IGNORECASE),
)
"""What a pointer back says (Claude Code's answer to a re-read of an unchanged file)."""

MAX_POINTER_CHARS = 600
"""A pointer is a short note; a longer output that happens to contain the words is content."""


def points_back(output: str) -> bool:
    """Whether a tool output is a pointer to an earlier result rather than content."""
    return len(output) <= MAX_POINTER_CHARS and any(p.search(output) for p in POINTER_PATTERNS)


@dataclass(frozen=True)
class PointerRead:
    """How a result that points back is projected."""

    resources: tuple[Resource, ...]
    """What it counts as having touched (no read of the file unless the earlier output is shown)."""
    cut: Truncation | None = None
    """The earlier output shown in its place, when the window no longer shows it."""
    decisions: tuple[Decision, ...] = ()
    """The ``recall`` decision saying so, when it does."""
    pointed: tuple[str, ...] = ()
    """Files whose current read it points the model to (protected while it stands)."""


def read_pointer(
    event: ToolResult,
    resources: tuple[Resource, ...],
    items: Sequence[ContextItem],
    policy: ToolPolicy,
    config: ProjectionConfig,
) -> PointerRead:
    """Project a result that points back: the earlier output shown when the window lost it, else a pointer kept."""
    if config.earlier_output is not None:
        found = recalled(event, resources, items, policy, earlier_output=config.earlier_output, counter=config.counter,
                         max_tokens=config.max_item_tokens, retrievable=config.retrieval)  # fmt: skip
        if found is not None:
            return PointerRead(resources=resources, cut=found[0], decisions=(found[1],))
    reads = tuple(r for r in resources if r.kind == "file" and r.access == "read")
    return PointerRead(resources=tuple(r for r in resources if r not in reads), pointed=tuple(r.key for r in reads))


def recalled(
    event: ToolResult,
    resources: Sequence[Resource],
    items: Sequence[ContextItem],
    policy: ToolPolicy,
    *,
    earlier_output: EarlierOutput,
    counter: TokenCounter,
    max_tokens: int,
    retrievable: Retrievable,
) -> tuple[Truncation, Decision] | None:
    """The earlier output a pointer refers to, when the window no longer shows it, and the decision saying so."""
    files = {r.key for r in resources if r.kind == "file" and r.access == "read"}
    if not files:
        return None
    earlier = next(
        (
            i
            for i in reversed(items)
            if i.kind == "tool_result" and any(r.kind == "file" and r.key in files for r in i.resources)
        ),
        None,
    )
    if earlier is None or earlier.state not in REDUCED or any(r.key in files and r.part for r in earlier.resources):
        return None  # shown as read (the pointer is right), or never a whole read of the file
    output = earlier_output(earlier.recency)
    if output is None:
        return None
    cut = apply_policy(
        output, policy, counter=counter, artifact_id=earlier.id, max_tokens=max_tokens, retrievable=retrievable
    )
    call = earlier.message.tool_call_id
    note = f"[this file is unchanged since call {call}; its output then, which the context no longer shows there:]"
    shown = replace(cut, text=f"{note}\n{cut.text}")
    decision = Decision(
        action="recall",
        target=event.id,
        reason=f"the client pointed back to call {call}'s result, which the window shows as a placeholder",
    )
    return shown, decision
