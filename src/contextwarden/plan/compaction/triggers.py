"""When to compact: the ``on_before_turn`` hook an agent loop calls before every model call.

The hook first *estimates* the next request without touching anything (system prompt and tool
schemas included, anchored on the provider's last reported usage when one describes the current
window), then checks the triggers in order:

``explicit``      a pending :meth:`CompactionHook.request` (its focus goes to the summarizer)
``tokens``        the estimate is over the threshold (strict ``>``), and the planner's cheaper
                  reductions (superseded outputs, masking) cannot bring it back under
``model_switch``  the next call uses a model with a smaller window than the last one, and the
                  estimate fills more than ``smaller_model_fill`` of the new model's threshold
``subtask``       the caller names a new subtask
``phase``         the caller enters a phase the settings name as a boundary
``steps``         this many model calls happened in the current window
``age``           the current window is older than this many seconds

The threshold is the one every compaction path compares with: the manager policy's
:meth:`BudgetPolicy.compaction_threshold <contextwarden.budget.BudgetPolicy.compaction_threshold>`
(``min(floor(0.85 * window), window - reserve)``, never above the usable input; set
``BudgetPolicy(trigger_tokens=...)`` or ``trigger_ratio`` to move it). ``TriggerSettings``'
``trigger_tokens``, ``trigger_ratio`` and ``per_model`` are deprecated aliases that map onto it.
"""

from __future__ import annotations

import json
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from ...budget import BudgetPolicy
from ...context import ToolDefinition
from ...log.events import Compaction
from ...models import ModelProfile
from ...tokens import TokenCounter
from ...window.accounting import Estimate
from ...window.projection import Projection
from ..planner import plan
from ..seams import WindowManager
from ._base import SummaryOptions
from .entry import compact


@dataclass(frozen=True, kw_only=True)
class TriggerSettings:
    """Which triggers fire and where. Vary it with ``dataclasses.replace``."""

    trigger_tokens: int | None = None
    """Deprecated: ``BudgetPolicy(trigger_tokens=...)`` on the manager's policy (this maps onto it)."""
    trigger_ratio: float | None = None
    """Deprecated: a share of the model's window, mapped onto ``BudgetPolicy.trigger_tokens``."""
    per_model: Mapping[str, float] = field(default_factory=dict)
    """Deprecated: model name → threshold (a ratio of its window when <= 1, else tokens), mapped onto
    ``BudgetPolicy.trigger_tokens`` for that model."""
    max_steps: int | None = None
    """Compact after this many model calls in the current window."""
    max_age_seconds: float | None = None
    """Compact when the current window is older than this."""
    phase_boundaries: tuple[str, ...] = ()
    """Entering one of these phases compacts first (proactive compaction)."""
    on_subtask_switch: bool = True
    """Compact before a new subtask starts."""
    on_smaller_model: bool = True
    """Compact before switching to a model with a smaller window."""
    smaller_model_fill: float = 0.5
    """...when the estimate is above this share of the smaller model's threshold."""
    consult_planner: bool = True
    """On the token trigger, leave it to the planner's cheaper reductions when they suffice."""

    def __post_init__(self) -> None:
        named = [k for k in ("trigger_tokens", "trigger_ratio") if getattr(self, k) is not None]
        named += ["per_model"] if self.per_model else []
        if named:
            warnings.warn(
                f"TriggerSettings({', '.join(named)}) is deprecated and will be removed in the next release: "
                "size triggers live in one place, ContextPolicy(budget=BudgetPolicy(trigger_tokens=...)) "
                "on the manager (the build's planner compares with the same threshold)",
                DeprecationWarning,
                stacklevel=3,
            )

    def budget_for(self, profile: ModelProfile, budget: BudgetPolicy) -> BudgetPolicy:
        """``budget`` with the deprecated size settings mapped onto its ``trigger_tokens``, if any is set."""
        window = budget.input_window_for(profile)
        ratio = self.per_model.get(profile.name)
        if ratio is not None:
            tokens = int(window * ratio) if ratio <= 1 else int(ratio)
        elif self.trigger_tokens is not None:
            tokens = self.trigger_tokens
        elif self.trigger_ratio is not None:
            tokens = int(window * self.trigger_ratio)
        else:
            return budget
        return replace(budget, trigger_tokens=max(tokens, 1))


@dataclass(frozen=True, kw_only=True)
class Turn:
    """What the caller knows about the coming model call."""

    model: ModelProfile
    """The model of the next call."""
    tools: tuple[ToolDefinition, ...] = ()
    """The tools it will be offered."""
    subtask: str | None = None
    """The subtask the agent is working on (a change triggers compaction)."""
    phase: str | None = None
    """The task phase (entering a boundary phase triggers compaction)."""


@dataclass(frozen=True, kw_only=True)
class TriggerDecision:
    """Whether to compact before this turn, and why."""

    fire: bool
    """Compact now."""
    trigger: str
    """Which trigger (see the module docstring), or ``""``."""
    reason: str
    """In words."""
    estimate: Estimate
    """The estimate it was based on."""
    focus: str = ""
    """The focus of an explicit request."""


def fixed_tokens(system: str, tools: Sequence[ToolDefinition], counter: TokenCounter) -> int:
    """Tokens of the system prompt and the tool schemas, counted the way the manager counts them."""
    schemas = (
        json.dumps(
            {"name": t.name, "description": t.description, "parameters": t.parameters},
            ensure_ascii=False,
            separators=(",", ":"),
        )
        for t in tools
    )
    return counter.count(system) + sum(counter.count(s) for s in schemas)


def estimate_request(projection: Projection, tools: Sequence[ToolDefinition], counter: TokenCounter) -> Estimate:
    """Estimate the next request: counted, and anchored on the last usage report of this window.

    A usage report older than the window's compaction described the context before it and is
    ignored. The report is recorded after the assistant message it belongs to, so the anchor is
    its input plus its output, plus whatever the window gained after it.
    """
    if projection.exposed_tools is not None:
        tools = [t for t in tools if t.name in projection.exposed_tools]
    return projection.estimate(fixed_tokens(projection.system, tools, counter))


def threshold_for(profile: ModelProfile, settings: TriggerSettings, budget: BudgetPolicy) -> int:
    """The token threshold for ``profile``: ``budget``'s compaction threshold (see the module docstring)."""
    return settings.budget_for(profile, budget).compaction_threshold(profile)


@dataclass
class _Memory:
    model: ModelProfile | None = None
    subtask: str | None = None
    phase: str | None = None
    focus: str | None = None


class CompactionHook:
    """``on_before_turn`` for an agent loop: checks the triggers, compacts when one fires."""

    def __init__(
        self,
        manager: WindowManager,
        *,
        settings: TriggerSettings | None = None,
        options: SummaryOptions | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """Watch sessions of ``manager`` (its compactor must be a ``WindowCompactor``)."""
        self.manager = manager
        self.settings = settings or TriggerSettings()
        self.options = options or SummaryOptions()
        self.clock = clock
        self._memory: dict[str, _Memory] = {}

    def request(self, session_id: str, *, focus: str = "") -> None:
        """Ask for a compaction before the session's next turn, with an optional focus."""
        self._memory.setdefault(session_id, _Memory()).focus = focus

    def check(self, session_id: str, turn: Turn) -> TriggerDecision:
        """Decide whether to compact before ``turn``; reads the session, changes nothing."""
        memory = self._memory.get(session_id, _Memory())
        projection = self.manager.projection(session_id)
        offered = self.manager.exposed_tools(turn.tools, projection)
        estimate = estimate_request(projection, offered, self.manager.counter)
        threshold = threshold_for(turn.model, self.settings, self.manager.policy.budget)

        def decide(trigger: str, reason: str, focus: str = "") -> TriggerDecision:
            return TriggerDecision(fire=bool(trigger), trigger=trigger, reason=reason, estimate=estimate, focus=focus)

        if memory.focus is not None:
            return decide("explicit", "compaction requested", memory.focus)
        if estimate.tokens > threshold and not self._planner_suffices(projection, estimate, threshold, turn):
            return decide("tokens", f"estimate {estimate.tokens} ({estimate.source}) > threshold {threshold}")
        s = self.settings
        window_of = self.manager.policy.budget.input_window_for
        if (
            s.on_smaller_model
            and memory.model is not None
            and window_of(turn.model) < window_of(memory.model)
            and estimate.tokens > s.smaller_model_fill * threshold
        ):
            return decide(
                "model_switch",
                f"switching from {memory.model.name} ({window_of(memory.model)}) "
                f"to {turn.model.name} ({window_of(turn.model)}) at {estimate.tokens}",
            )
        if s.on_subtask_switch and turn.subtask is not None and memory.subtask not in (None, turn.subtask):
            return decide("subtask", f"subtask {memory.subtask!r} ends, {turn.subtask!r} begins")
        if turn.phase is not None and turn.phase != memory.phase and turn.phase in s.phase_boundaries:
            return decide("phase", f"entering phase {turn.phase!r}")
        steps = sum(1 for i in projection.items if i.message.role == "assistant")
        if s.max_steps is not None and steps >= s.max_steps:
            return decide("steps", f"{steps} model calls in this window (limit {s.max_steps})")
        if s.max_age_seconds is not None:
            opened = (
                projection.compaction.created_at
                if projection.compaction is not None
                else self.manager.store.get_session(session_id).created_at
            )
            age = self.clock() - opened
            if age > s.max_age_seconds:
                return decide("age", f"window open for {age:.0f}s (limit {s.max_age_seconds:.0f}s)")
        return decide("", f"no trigger (estimate {estimate.tokens}, threshold {threshold})")

    def _planner_suffices(self, projection: Projection, estimate: Estimate, threshold: int, turn: Turn) -> bool:
        if not self.settings.consult_planner or not self.manager.policy.compact:
            return False
        decision = plan(
            projection,
            total=estimate.tokens,
            trigger=threshold,
            profile=turn.model,
            turns_so_far=0,
            settings=self.manager.policy.planner,
            evidence=projection.state.evidence_ids,
        )
        return not decision.needs_compaction

    def on_before_turn(self, session_id: str, turn: Turn) -> Compaction | None:
        """Check the triggers and compact when one fires; returns the stored compaction, if any."""
        decision = self.check(session_id, turn)
        memory = self._memory.setdefault(session_id, _Memory())
        compaction = None
        if decision.fire:
            compaction = compact(
                self.manager,
                session_id,
                model=turn.model,
                focus=decision.focus,
                options=self.options,
                trigger=decision.trigger,
                reason=decision.reason,
            )
        memory.focus = None if decision.trigger == "explicit" else memory.focus
        memory.model, memory.subtask = turn.model, turn.subtask if turn.subtask is not None else memory.subtask
        memory.phase = turn.phase if turn.phase is not None else memory.phase
        return compaction

    __call__ = on_before_turn
