"""The seams between the context manager and the layers on either side of it.

Below the manager, :class:`Compactor` is what it calls when reductions are not enough (the
structured compactor in ``compaction/`` is one). Above it, the session handle, subagents and the
compaction helpers (``compact``, ``CompactionHook``) call back into a manager; they take a
:class:`WindowManager`, the part of :class:`~contextwarden.assemble.manager.ContextManager` they use, so
that they depend on this module and the manager can build on them without an import cycle.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from ..context import ModelContext, ToolDefinition
from ..log.events import Compaction, ToolCall, ToolResult
from ..log.store._protocol import SessionStore
from ..models import ModelProfile
from ..tokens import TokenCounter
from ..window.projection import Projection
from .policy import ContextPolicy

__all__ = ["Compactor", "PolicyLike", "WindowManager"]

PolicyLike = ContextPolicy | str
"""A policy, or the name of a task preset (``coding``, ``research``, ``browser``, or one registered)."""


class Compactor(Protocol):
    """Makes a compaction event for a window that no longer fits (see ``contextwarden.plan.compaction``).

    Every path calls it through ``contextwarden.plan.compaction.compact``, which records the trigger and
    the reason on the event and appends it.
    """

    def compact_window(
        self, session_id: str, projection: Projection, *, profile: ModelProfile, reason: str
    ) -> Compaction | None:
        """Return the compaction to append, or None when nothing is old enough to summarize."""
        ...


class WindowManager(Protocol):
    """What the layers above the manager use of it (``ContextManager`` is the implementation)."""

    store: SessionStore
    """The session log."""
    counter: TokenCounter
    """The counter every size is measured with."""
    policy: ContextPolicy
    """The default policy of every build."""
    compactor: Compactor | None
    """The compactor of over-budget windows (None: compaction off)."""

    def projection(self, session_id: str, *, policy: PolicyLike | None = None) -> Projection:
        """The up-to-date projection of the session's current window."""
        ...

    def exposed_tools(
        self, tools: Sequence[ToolDefinition], projection: Projection, *, policy: PolicyLike | None = None
    ) -> tuple[ToolDefinition, ...]:
        """The tools a request offers."""
        ...

    def build(
        self,
        session_id: str,
        *,
        model: str | ModelProfile,
        tools: Sequence[ToolDefinition] = (),
        policy: PolicyLike | None = None,
    ) -> ModelContext:
        """Build the request for the session's next model call."""
        ...

    def build_with_last_seq(
        self,
        session_id: str,
        *,
        model: str | ModelProfile,
        tools: Sequence[ToolDefinition] = (),
        policy: PolicyLike | None = None,
    ) -> tuple[ModelContext, int]:
        """Like :meth:`build`, also returning the last seq the build read or wrote."""
        ...

    def retrieve(self, session_id: str, call: ToolCall, *, policy: PolicyLike | None = None) -> ToolResult:
        """Serve a ``read_range`` or ``recall`` call from the full log."""
        ...
