"""The one way a compaction enters a session log: :func:`compact`.

Every path that compacts calls it, saying why:

=============  ====================================================================================
``budget``     a build's planner found that its reductions do not bring the window under the trigger
``tokens`` …   the agent loop's :class:`~.triggers.CompactionHook` (``tokens``, ``model_switch``,
               ``subtask``, ``phase``, ``steps``, ``age``, or ``explicit`` for a pending request)
``overflow``   the provider refused a request as too long (the agent loop, the proxy)
``explicit``   a caller asked for one (the default)
=============  ====================================================================================

:func:`compact` asks the manager's compactor for the event under the policy in force (its budget
sizes the kept tail and the summary), records the trigger and the reason on the event, and
appends it after the window's last event. The compaction is its own record: a window event whose
``details["trigger"]`` and ``details["reason"]`` say who decided and why. :func:`compaction_decision`
turns it into the decision a build returns and ``contextwarden inspect`` lists.
"""

from __future__ import annotations

from dataclasses import replace

from ...context import Decision
from ...errors import UsageError
from ...log.events import Compaction
from ...models import ModelProfile, get_profile
from ..seams import PolicyLike, WindowManager
from ..taskpolicies import get_task_policy
from ._base import SummaryOptions
from .compactor import WindowCompactor
from .statements import compaction_reason

PLANNER_TRIGGER = "budget"
"""The trigger of a build's own compaction. A replay of the log re-derives these; a compaction with
any other trigger was decided by something the log only records (a hook, an overflow, a caller)."""

OVERFLOW_TRIGGER = "overflow"
"""The trigger of a compaction after the provider refused a request as too long."""


def compact(
    manager: WindowManager,
    session_id: str,
    *,
    model: str | ModelProfile,
    trigger: str = "explicit",
    reason: str = "",
    focus: str = "",
    options: SummaryOptions | None = None,
    reground: bool = False,
    policy: PolicyLike | None = None,
) -> Compaction | None:
    """Compact the session's window now, record why, and return the stored event.

    ``trigger`` and ``reason`` say who decided and why (see the module docstring); ``focus`` tells
    the summarizer what matters most; ``policy`` is the one the window is built under (default:
    the manager's). Returns None when nothing is old enough to summarize or the summary would not
    be smaller. A failure or a cancellation raises and leaves the log unchanged; a manager without
    a compactor is a :class:`~contextwarden.errors.UsageError`.
    """
    compactor = manager.compactor
    if compactor is None:
        raise UsageError("compaction is off: this manager was built with compactor=None")
    resolved = manager.policy if policy is None else get_task_policy(policy) if isinstance(policy, str) else policy
    profile = model if isinstance(model, ModelProfile) else get_profile(model)
    projection = manager.projection(session_id, policy=resolved)
    if isinstance(compactor, WindowCompactor):
        event = compactor.prepare(
            session_id,
            projection,
            profile=profile,
            trigger=trigger,
            reason=reason,
            focus=focus,
            options=options,
            reground=reground,
            budget=resolved.budget,
        )
    elif focus or reground:
        raise UsageError(f"focus and reground need a WindowCompactor; {type(compactor).__name__} takes a reason only")
    else:
        (options or SummaryOptions()).check_cancelled("before it started")
        event = compactor.compact_window(session_id, projection, profile=profile, reason=reason)
    if event is None:
        return None
    event = replace(event, details={**event.details, "trigger": trigger, "reason": reason})
    stored = manager.store.append(session_id, [event], expected_last_seq=projection.last_seq)[0]
    assert isinstance(stored, Compaction)
    return stored


def recorded_only(event: Compaction) -> bool:
    """Whether only the log knows why this compaction ran (a replay copies it instead of re-deriving it).

    That is one recorded through :func:`compact` with a trigger other than the planner's.
    """
    return event.details.get("trigger", PLANNER_TRIGGER) != PLANNER_TRIGGER and "reason" in event.details


def compaction_decision(event: Compaction) -> Decision:
    """The decision-log entry of a recorded compaction: its reason, plus any fallback and correction it needed."""
    why = event.details.get("reason")
    return Decision(
        action="compact",
        target=event.id,
        reason=compaction_reason(event, why if isinstance(why, str) else ""),
        tokens_saved=max(event.tokens_before - event.tokens_after, 0),
    )
