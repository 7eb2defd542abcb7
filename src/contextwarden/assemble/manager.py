"""The context manager: from a session log to a model-ready, budget-true, cache-stable request.

``ContextManager.build`` runs the pipeline of docs/architecture.md on every model call:

1. bring the window's projection up to date (only events new since the last call are read);
2. record the model profile, tools and policy of the build when they changed (``buildrecord``);
3. ask the planner for a batch of reductions; record it as a window event (``_plan``);
4. if still over the trigger, compact through :func:`~contextwarden.plan.compaction.compact`, which
   records why (``_compact_if_needed``);
5. bring the retrieval tools for an output cut at ingestion when no other window event does and the
   rewrite pays (``_record_retrieval_offer``);
6. order, pairing-normalize and measure the request; refuse to return one over the budget.

The manager only ever appends its own events; it never edits or deletes events. Projections are
cached per session and policy value; builds of one session run one at a time, builds of different
sessions do not wait for each other.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from .._deprecated import renamed_attribute, renamed_kwarg, renamed_method
from ..context import SECTIONS, Decision, ModelContext, ToolDefinition
from ..errors import BudgetExceededError
from ..log.events import ContextEditBatch, Event, SettingChange, ToolCall, ToolResult, UsageReport
from ..log.store._protocol import SessionStore
from ..models import ModelProfile, resolve_profile
from ..plan.compaction.compactor import WindowCompactor
from ..plan.compaction.entry import PLANNER_TRIGGER, compact, compaction_decision
from ..plan.credit import rewrite_loss
from ..plan.exposure import cut_pending, evicted, exposed_tools, tool_json
from ..plan.planner import Plan, plan, plan_of
from ..plan.policy import ContextPolicy
from ..plan.seams import Compactor, PolicyLike
from ..plan.taskpolicies import get_task_policy
from ..tokens import TokenCounter, best_counter
from ..tools import READ_RANGE
from ..window.projection import Projection
from .breakpoints import breakpoints
from .buildrecord import BuildSettings, record_event
from .degrade import degrade_to_fit
from .project import ProjectContext
from .retrieval import answer_retrieval
from .session import Session
from .subagents import SubtaskContext, project_for_subtask
from .windows import CachedWindow, WindowCache

if TYPE_CHECKING:
    from ..plan.spend import SpendTracker

__all__ = ["Compactor", "ContextManager", "ContextPolicy"]


def _policy(policy: PolicyLike) -> ContextPolicy:
    return get_task_policy(policy) if isinstance(policy, str) else policy


class ContextManager:
    """Builds each model request of a session as a projection of its log."""

    def __init__(
        self,
        store: SessionStore,
        *,
        counter: TokenCounter | None = None,
        policy: PolicyLike | None = None,
        compactor: Compactor | Literal["structured"] | None = "structured",
        spend_tracker: SpendTracker | None = None,
        checkpoints: Literal["build", "caller"] = "build",
        tree_budget: SpendTracker | None = None,  # deprecated: spend_tracker=
    ) -> None:
        """Build requests from ``store``.

        ``policy`` is the default of every build: a :class:`ContextPolicy` or a task preset's name
        (``"research"``). ``compactor`` compacts a window that reductions cannot bring under the
        trigger; the default is contextwarden's structured compactor, which needs no model (a
        ``WindowCompactor`` without a budget of its own sizes the compaction by the build's policy).
        ``None`` turns compaction off (an over-budget window then raises
        :class:`BudgetExceededError`). ``spend_tracker`` caps what a session and its subagents spend
        together: each build checks it first (raising :class:`~contextwarden.errors.SpendLimitReached`
        once spent) and delivers its due reminder into the session. ``checkpoints`` says who saves a
        window's checkpoint when it is due: ``"build"`` (the build that finds it due), or
        ``"caller"`` (only :meth:`save_checkpoint`, for a caller with a moment off the request path,
        as the proxy has once an answer is sent).
        """
        self.store = store
        self.counter = counter or best_counter()
        self.policy = _policy(policy) if policy is not None else ContextPolicy()
        if compactor == "structured":
            compactor = WindowCompactor(store, counter=self.counter)
        self.compactor: Compactor | None = compactor
        self.spend_tracker = spend_tracker or renamed_kwarg(tree_budget, "tree_budget", "spend_tracker")  # deprecated
        self.checkpoints = checkpoints
        self._cache = WindowCache(store, self.counter)

    # ------------------------------------------------------------------ sessions

    def session(
        self,
        session_id: str,
        *,
        model: str | ModelProfile | None = None,
        tools: Sequence[ToolDefinition] = (),
        policy: PolicyLike | None = None,
        create: bool = False,
        project: str | Path | ProjectContext | None = None,
    ) -> Session:
        """A handle on one session for an agent loop: append events and build, no seq bookkeeping.

        ``model``, ``tools`` and ``policy`` are the defaults of the handle's builds. ``create``
        creates the session when it does not exist (otherwise that is ``SessionNotFound``).
        ``project`` (a working directory or a :class:`ProjectContext`) starts the log with the
        system prompt, project rules and catalogs found on disk, and delivers a rule file edited
        mid-session as a new instruction before the next build (``assemble/project.py``).
        """
        return Session(self, session_id, model=model, tools=tools, policy=policy, create=create, project=project)

    # ------------------------------------------------------------------ window

    def projection(self, session_id: str, *, policy: PolicyLike | None = None, catch_up: bool = True) -> Projection:
        """The projection of the session's current window, up to date (``catch_up=False``: as last built or read)."""
        resolved = self._resolve(policy)
        with self._session_lock(session_id):
            return self._cache.window(session_id, resolved, catch_up=catch_up).projection

    def _resolve(self, policy: PolicyLike | None) -> ContextPolicy:
        return self.policy if policy is None else _policy(policy)

    def _session_lock(self, session_id: str) -> threading.RLock:
        return self._cache.lock(session_id)

    # ------------------------------------------------------------------ build

    def build(
        self,
        session_id: str,
        *,
        model: str | ModelProfile,
        tools: Sequence[ToolDefinition] = (),
        policy: PolicyLike | None = None,
        appended: Sequence[Event] = (),
    ) -> ModelContext:
        """Build the request for the session's next model call (see the module docstring).

        ``model`` must name a registered profile (``UnknownModelError`` lists them) or be a :class:`ModelProfile`. The
        returned ``decisions`` are this build's own (the history of reductions stays in the log as window events).
        ``appended``: events the caller has just compare-and-appended, as stored: a window they extend reads nothing.
        """
        return self.build_with_last_seq(session_id, model=model, tools=tools, policy=policy, appended=appended)[0]

    build_seen = renamed_method("build_seen", "build_with_last_seq")  # deprecated
    tree_budget = renamed_attribute("tree_budget", "spend_tracker")  # deprecated

    def build_with_last_seq(
        self,
        session_id: str,
        *,
        model: str | ModelProfile,
        tools: Sequence[ToolDefinition] = (),
        policy: PolicyLike | None = None,
        appended: Sequence[Event] = (),
    ) -> tuple[ModelContext, int]:
        """Like :meth:`build`, also returning the last seq the build read or wrote.

        That is the ``expected_last_seq`` of the caller's next append when nothing else writes to the session
        in between (what :class:`.Session` keeps for you).
        """
        resolved = self._resolve(policy)
        profile = resolve_profile(model)
        settings = BuildSettings(profile=profile, tools=tuple(tools), policy=resolved)
        with self._session_lock(session_id):
            if self.spend_tracker is not None:
                self.spend_tracker.check(self.store, session_id)
                self.spend_tracker.deliver(self.store, session_id)
            window = self._cache.window(session_id, resolved, appended=appended)
            self._record_settings(session_id, window, settings)
            context = self._plan_and_assemble(session_id, window, settings)
            if self.checkpoints == "build":
                self._cache.save(session_id, resolved, window)  # the same window: a compaction re-opens it in place
            return context, window.projection.last_seq

    def save_checkpoint(self, session_id: str, *, policy: PolicyLike | None = None, catch_up: bool = True) -> bool:
        """Catch the session's window up and save its checkpoint if it is due; whether one was saved.

        Due means the window moved on by :data:`~.checkpoints.CHECKPOINT_EVERY` events since the
        last checkpoint this manager saved (see ``checkpoints`` in the constructor). ``catch_up=False``
        saves the window as the last build left it, without a read (a checkpoint may lag the log).
        """
        resolved = self._resolve(policy)
        with self._session_lock(session_id):
            return self._cache.save(session_id, resolved, self._cache.window(session_id, resolved, catch_up=catch_up))

    def follow(self, session_id: str, appended: Sequence[Event], *, policy: PolicyLike | None = None) -> None:
        """The session's cached window takes events the caller has just appended (as stored) if they extend it."""
        with self._session_lock(session_id):
            self._cache.follow(session_id, self._resolve(policy), appended)

    def _record_settings(self, session_id: str, window: CachedWindow, settings: BuildSettings) -> None:
        if window.recorded == settings:
            return
        stored = self.store.append(session_id, [record_event(settings)], expected_last_seq=window.projection.last_seq)
        window.projection.add(stored[0])
        window.recorded = settings
        window.recorded_event = stored[0] if isinstance(stored[0], SettingChange) else None

    def _plan_and_assemble(self, session_id: str, window: CachedWindow, settings: BuildSettings) -> ModelContext:
        """Plan, record what was decided, and assemble: the steps of one build after the window caught up."""
        policy, profile = settings.policy, settings.profile
        exposed = self.exposed_tools(settings.tools, window.projection, policy=policy)
        fixed = self._fixed_tokens(window.projection.system, exposed)
        planned = self._plan(window, settings, exposed, fixed)
        window.credit.spend(planned.loss)
        window_ids = [self._record_edits(session_id, window.projection, planned)] if planned.edits else []
        window, compacted = self._compact_if_needed(session_id, window, settings, planned)
        window_ids += [compacted.target] if compacted is not None else []
        if not window_ids:
            window_ids += self._record_retrieval_offer(session_id, window, settings)
        if window_ids:  # a window event changed the window; the first that evicts brings the retrieval tools
            exposed = self.exposed_tools(settings.tools, window.projection, policy=policy)
            fixed = self._fixed_tokens(window.projection.system, exposed)
        made = (compacted, plan_of(planned)) if compacted is not None else (plan_of(planned),)
        budget = policy.budget.usable_input(profile, tool_schema_tokens=0)
        return self._assemble(window, profile, exposed, fixed, budget, tuple(window_ids), made, policy)

    def _plan(
        self, window: CachedWindow, settings: BuildSettings, exposed: Sequence[ToolDefinition], fixed: int
    ) -> Plan:
        """The planner's verdict for this request: a batch of reductions, and whether they are enough."""
        policy, planner, projection = settings.policy, settings.policy.planner, window.projection
        offered = any(t.name == READ_RANGE.name for t in exposed)  # the retrieval tools, offered once evicted
        return plan(
            projection,
            total=projection.estimate(fixed).tokens,
            trigger=policy.budget.compaction_threshold(settings.profile),
            profile=settings.profile,
            turns_so_far=projection.assistant_turns,
            settings=planner,
            conversation_tokens=projection.total,
            tools_join=policy.retrieval_tools and not offered,
            cut_pending=policy.retrieval_tools and cut_pending(projection),
            credit=window.credit.observe(projection.decisions, projection.total, settings.profile),
        )

    def _compact_if_needed(
        self, session_id: str, window: CachedWindow, settings: BuildSettings, planned: Plan
    ) -> tuple[CachedWindow, Decision | None]:
        """Compact when the planner's reductions are not enough: the window (reloaded) and the decision, if any."""
        if not (planned.needs_compaction and settings.policy.compact and self.compactor is not None):
            return window, None
        stored = compact(
            self,
            session_id,
            model=settings.profile,
            policy=settings.policy,
            trigger=PLANNER_TRIGGER,
            reason=planned.reason,
        )
        if stored is None:
            return window, None
        return self._cache.window(session_id, settings.policy), compaction_decision(stored)

    def _record_retrieval_offer(self, session_id: str, window: CachedWindow, settings: BuildSettings) -> list[str]:
        """The id of an empty context-edit batch bringing the retrieval tools for a cut at ingestion, if it pays.

        The tools joining rewrite the whole request (they open the cached prefix) for no saving: they join
        when the window's credit covers it (``plan/credit.py``), else with the next window event.
        """
        projection, policy = window.projection, settings.policy
        if not (policy.retrieval_tools and cut_pending(projection)):
            return []
        tools = exposed_tools(settings.tools, projection.exposed_tools, retrieval=True)
        loss = rewrite_loss(projection.estimate(self._fixed_tokens(projection.system, tools)).tokens, settings.profile)
        if policy.planner.cache_aware and loss > window.credit.available:
            return []
        window.credit.spend(loss)
        batch = ContextEditBatch(edits=(), reason="retrieval tools offered: output truncated at ingestion")
        stored = self.store.append(session_id, [batch], expected_last_seq=projection.last_seq)
        projection.add(stored[0])
        return [stored[0].id]

    def exposed_tools(
        self, tools: Sequence[ToolDefinition], projection: Projection, *, policy: PolicyLike | None = None
    ) -> tuple[ToolDefinition, ...]:
        """The tools a request offers.

        The caller's, filtered by the last recorded tool-set change, then the retrieval tools when the policy
        enables them and a window event evicted something (``plan/exposure.py``, :meth:`_record_retrieval_offer`).
        """
        resolved = self._resolve(policy)
        return exposed_tools(
            tools, projection.exposed_tools, retrieval=resolved.retrieval_tools and evicted(projection)
        )

    def _fixed_tokens(self, system: str, tools: Sequence[ToolDefinition]) -> int:
        return self.counter.count(system) + sum(self.counter.count(tool_json(t)) for t in tools)

    def _record_edits(self, session_id: str, projection: Projection, decision: Plan) -> str:
        before = projection.total
        batch = ContextEditBatch(
            edits=decision.edits,
            reason=decision.reason,
            tokens_before=before,
            tokens_after=before - decision.saved_tokens,
        )
        stored = self.store.append(session_id, [batch], expected_last_seq=projection.last_seq)
        projection.add(stored[0])
        return stored[0].id

    def _assemble(
        self,
        window: CachedWindow,
        profile: ModelProfile,
        tools: tuple[ToolDefinition, ...],
        fixed: int,
        budget: int,
        window_ids: tuple[str, ...],
        made: tuple[Decision, ...],
        policy: ContextPolicy,
    ) -> ModelContext:
        """Measure and return the request; ``made`` are this build's own decisions (compaction, plan)."""
        projection = window.projection
        messages, pairing, measured = projection.normalized()
        sections: dict[str, int] = {k: measured.get(k, 0) for k in SECTIONS}
        sections["system"] = self.counter.count(projection.system)
        sections["tools"] = fixed - sections["system"]
        total = sum(sections.values())
        standing = (*projection.decisions, *pairing)
        own = tuple(d for d in standing if d not in window.reported)  # this build's, not the window's history
        window.reported = set(standing)
        decisions = (*own, *made)
        # The provider's last usage report is truer than our count (docs/behaviours.md, row 8): anchor on it when fresh.
        estimate = projection.estimate(fixed)
        checked = total if estimate.anchored is None else estimate.tokens
        if checked > budget:
            retrievable = any(t.name == READ_RANGE.name for t in tools)
            messages, cuts, cut_from = degrade_to_fit(
                messages, over=checked - budget, budget=budget, counter=self.counter, retrievable=retrievable
            )
            for key, saved in cut_from.items():
                sections[key] -= saved
            total, checked = total - sum(cut_from.values()), checked - sum(cut_from.values())
            decisions = (*decisions, *cuts)
        if checked > budget:
            anchored = "" if estimate.anchored is None else f" (estimated from the last usage report; counted {total})"
            raise BudgetExceededError(
                f"request for {profile.name} does not fit after every reduction{anchored}",
                budget=budget,
                total=checked,
                sections=sections,
            )
        return ModelContext(
            model=profile.name,
            system=projection.system,
            messages=messages,
            tools=tools,
            sections=sections,
            total_tokens=total,
            budget=budget,
            context_window=profile.context_window,
            counter=self.counter.name,
            cache_breakpoints=breakpoints(messages, projection, fixed=fixed, profile=profile, policy=policy),
            decisions=decisions,
            window_event_ids=window_ids,
        )

    def project_for_subtask(
        self,
        session_id: str,
        task: str,
        *,
        select: Sequence[str] = (),
        model: str | ModelProfile | None = None,
        tools: Sequence[ToolDefinition] = (),
    ) -> SubtaskContext:
        """Open a child session for ``task`` with a scoped context (see :func:`subagents.project_for_subtask`)."""
        return project_for_subtask(self, session_id, task, select=select, model=model, tools=tools)

    def retrieve(self, session_id: str, call: ToolCall, *, policy: PolicyLike | None = None) -> ToolResult:
        """Serve a ``read_range`` or ``recall`` call from the full log; the caller appends the result.

        Eviction is not forgetting: masked, superseded and truncated outputs stay in the log, and
        this reads them back (bounded like any tool output). It reads the whole log, on demand only.
        """
        resolved = self._resolve(policy)
        text = answer_retrieval(
            self.store.read(session_id),
            call,
            counter=self.counter,
            max_tokens=resolved.retrieval_max_tokens,
            policies=resolved.tool_policies,
        )
        return ToolResult(call_id=call.id, tool_name=call.name, output=text)

    def record_usage(self, session_id: str, usage: UsageReport) -> None:
        """Append a provider usage report (it anchors later size estimates)."""
        last = self.store.get_session(session_id).last_seq
        self.store.append(session_id, [usage], expected_last_seq=last)

    def forget(self, session_id: str) -> None:
        """Drop the session's cached projections (the next build reloads the window from the store)."""
        self._cache.forget(session_id)
