"""The ``Summarizer`` seam and the values that cross it."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

from ...errors import Cancelled
from ...window.taskstate import TaskState
from .serialize import Entry

Purpose = Literal["history", "turn_prefix"]
"""What a summary is for: the older history, or the start of a turn the cut splits."""


@dataclass(frozen=True, kw_only=True)
class SummaryInput:
    """Everything a summarizer gets for one summary."""

    entries: tuple[Entry, ...]
    """The messages leaving the window, as labelled entries (raw events when re-grounding)."""
    state: TaskState
    """The derived task state at the cut (goal, constraints, files, tests, errors)."""
    previous_summary: str = ""
    """The summary being updated; kept apart from ``entries``. Empty on a first or re-grounded summary."""
    purpose: Purpose = "history"
    """History summary or turn-prefix summary."""
    focus: str = ""
    """What the user asked the summary to pay attention to (explicit ``compact(focus=...)``)."""
    reground: bool = False
    """The entries are raw events read from the log, not the window's view."""
    replaced_tokens: int = 0
    """Tokens of everything the summary replaces (previous summary included): it must be shorter."""
    max_tokens: int | None = None
    """The most tokens the summary may have in the agent's window (None: the summarizer's own limit)."""
    anchors_pinned: bool = False
    """The window shows the goal and constraints verbatim in a pinned block, so the summary refers
    to them instead of repeating them."""
    thinking: str | None = None
    """The session's thinking level (its latest ``SettingChange`` with ``thinking``): a model summarizer's
    first attempt uses it unless its own settings name one."""


@dataclass(frozen=True, kw_only=True)
class SummaryOptions:
    """Per-call settings."""

    cancel: threading.Event | None = None
    """Set it to cancel; cancellation always wins (the summary is abandoned, nothing is written)."""
    timeout: float | None = None
    """Seconds per model call; None keeps the provider's timeout."""

    def check_cancelled(self, where: str) -> None:
        """Raise :class:`~contextwarden.errors.Cancelled` when the cancel event is set."""
        if self.cancel is not None and self.cancel.is_set():
            raise Cancelled(f"compaction cancelled {where}; the session log is unchanged")


@dataclass(frozen=True, kw_only=True)
class SummaryResult:
    """A summary that passed validation, with what it cost."""

    text: str
    """The summary."""
    summarizer: str
    """Who wrote it: ``structured`` or ``llm:<model>``."""
    model: str = ""
    """The summarizer model, when a model wrote it."""
    input_tokens: int = 0
    """Tokens the summarizer read (every call, retries included)."""
    output_tokens: int = 0
    """Tokens the summarizer wrote (every call, retries included)."""
    calls: int = 0
    """Model calls made."""
    notes: tuple[str, ...] = ()
    """What happened on the way (retries, trimmed transcript, chunks)."""


@runtime_checkable
class Summarizer(Protocol):
    """Turns messages leaving the window into a summary, or raises ``SummaryRejected``."""

    name: str
    """A label for the compaction record."""

    def summarize(self, data: SummaryInput, *, options: SummaryOptions) -> SummaryResult:
        """Write the summary for ``data``.

        Raises ``SummaryRejected`` when the result fails validation, a ``ProviderError`` when the
        model call failed, and ``Cancelled`` when ``options.cancel`` was set.
        """
        ...
