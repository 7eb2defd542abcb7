"""The ``contextwarden`` strategy: the library's own builder, and named variants of it.

``contextwarden`` is :class:`~contextwarden.assemble.manager.ContextManager` with the default
:class:`~contextwarden.assemble.manager.ContextPolicy` and the structured compactor (so summarizer tokens are
counted). Variants take comma-separated options after a colon:

- any :class:`~contextwarden.plan.planner.PlannerSettings` or :class:`~contextwarden.plan.protection.Protection`
  field as ``name=value`` (dashes for underscores), ``no-<flag>`` for a boolean one (``no-cache-aware``,
  ``no-mask``, ``no-working-set-reads``); ``keep=N`` and ``min-batch=N`` are
  short for ``keep-recent-tool-results`` and ``min-batch-tokens``; ``trigger=N`` sets the budget
  trigger; ``tools=PRESET`` uses a tool-policy preset (``coding-bytes``: 10,000 bytes from the middle under a header);
  ``no-compact`` runs without the compactor; ``task=NAME`` starts from a task preset
  (:func:`~contextwarden.plan.taskpolicies.get_task_policy`: ``coding``, ``research``, ``browser``,
  ``proxy``)
  instead of the default policy, the other options varying it;
- a what-if that changes how the builder's request is sent, not the builder, so a proposed change can be
  measured before it is made: ``frontier`` adds a cache breakpoint right before the oldest tool result a
  later batch could still change, unless the builder placed one there already.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field, replace
from typing import Any

from ..assemble.manager import ContextManager, ContextPolicy
from ..context import ModelContext
from ..errors import BudgetExceededError, UsageError
from ..log.events import Compaction
from ..plan.planner import PlannerSettings
from ..plan.protection import Protection
from ..plan.taskpolicies import get_task_policy
from ..window.policies.presets import tool_policy_preset
from ..window.projection import Projection
from .strategies import Built, RunEnv, StrategyRun, convert_option, plain_context


@dataclass(frozen=True)
class ContextWardenStrategy:
    """contextwarden's own builder: :class:`ContextManager` with a policy, and the compactor when available."""

    name: str = "contextwarden"
    policy: ContextPolicy = field(default_factory=ContextPolicy)
    compact: bool = True
    frontier_breakpoint: bool = False
    """What-if: a cache breakpoint before the oldest tool result a later batch could change."""

    def start(self, env: RunEnv) -> StrategyRun:
        """Begin one transcript."""
        compacting = self.compact and self.policy.compact
        manager = ContextManager(
            env.store, counter=env.counter, policy=self.policy, compactor="structured" if compacting else None
        )
        return _WardenRun(env, manager, self)


def _with_frontier(ctx: ModelContext, projection: Projection) -> ModelContext:
    changeable = {i.id for i in projection.items if i.evictable and i.message.role == "tool"}
    first = next((n for n, m in enumerate(ctx.messages) if m.source_ids and m.source_ids[0] in changeable), None)
    if not first:
        return ctx
    if first - 1 in ctx.cache_breakpoints or len(ctx.cache_breakpoints) >= 4:
        return ctx  # the builder placed it already, or there is no room left (at most 4)
    return replace(ctx, cache_breakpoints=tuple(sorted({*ctx.cache_breakpoints, first - 1})))


class _WardenRun:
    def __init__(self, env: RunEnv, manager: ContextManager, strategy: ContextWardenStrategy) -> None:
        self.env = env
        self.manager = manager
        self.strategy = strategy

    def observe(self, event: object) -> None:
        """The manager reads the store itself."""

    def build(self) -> Built:
        store, sid = self.env.store, self.env.session_id
        before = store.get_session(sid).last_seq
        note = ""
        try:
            ctx = self.manager.build(sid, model=self.env.profile)
        except BudgetExceededError as exc:
            # Replay keeps going: the request that would not fit is measured as the builder left it.
            projection = self.manager.projection(sid)
            items = [i.message for i in projection.items]
            ctx = plain_context(self.env.profile, projection.system, items, self.env.counter)
            note = f"over budget: {exc}"
        if self.strategy.frontier_breakpoint:
            ctx = _with_frontier(ctx, self.manager.projection(sid))
        kinds: list[str] = []
        read = written = 0
        for event in store.read(sid, since_seq=before):
            if event.is_window_event:
                kinds.append(event.kind)
            if isinstance(event, Compaction):
                read += event.summarizer_input_tokens
                written += event.summarizer_output_tokens
        return Built(
            context=ctx,
            window_event_kinds=tuple(kinds),
            reports_window_events=True,
            summarizer_input_tokens=read,
            summarizer_output_tokens=written,
            note=note,
        )


_SHORT = {"keep": "keep_recent_tool_results", "min_batch": "min_batch_tokens"}


def contextwarden_variant(options: str, *, name: str | None = None) -> ContextWardenStrategy:
    """The ``contextwarden`` strategy with comma-separated options (see the module docstring)."""
    given = [o for o in (o.strip() for o in options.split(",")) if o]
    tasks = [o.partition("=")[2] for o in given if o.startswith("task=")]
    base = get_task_policy(tasks[-1]) if tasks else ContextPolicy()
    planner, budget, tools = base.planner, base.budget, base.tool_policies
    compact, frontier = True, False
    fields = {f.name for f in dataclasses.fields(PlannerSettings)} - {"protection"}
    guards = {f.name for f in dataclasses.fields(Protection)}
    for option in given:
        key, _, value = option.partition("=")
        attr = _SHORT.get(key.replace("-", "_"), key.replace("-", "_"))
        if key == "task" and value:
            continue  # applied first, whatever its place
        elif option == "no-compact":
            compact = False
        elif option == "frontier":
            frontier = True
        elif key == "trigger" and value:
            budget = replace(budget, trigger_tokens=convert_option(value, 0, option))
        elif key == "tools" and value:
            tools = tool_policy_preset(value)
        elif key.startswith("no-") and not value and attr[3:] in fields | guards:
            planner = _vary(planner, attr[3:], False)
        elif attr in fields | guards and value:
            owner = planner if attr in fields else planner.protection
            planner = _vary(planner, attr, convert_option(value, getattr(owner, attr), option))
        else:
            known = [
                "no-compact",
                "frontier",
                "keep=N",
                "min-batch=N",
                "trigger=N",
                "task=NAME",
                "tools=PRESET",
                *(f"{f.replace('_', '-')}=..." for f in sorted(fields | guards)),
            ]
            raise UsageError(f"unknown contextwarden option {option!r}; known: {', '.join(known)}")
    label = name or (f"contextwarden:{options}" if options else "contextwarden")
    policy = replace(base, name=label, planner=planner, budget=budget, compact=compact, tool_policies=tools)
    return ContextWardenStrategy(name=label, policy=policy, compact=compact, frontier_breakpoint=frontier)


def _vary(planner: PlannerSettings, name: str, value: Any) -> PlannerSettings:
    """``planner`` with its field ``name``, or its protection's, set to ``value``."""
    change: dict[str, Any] = {name: value}
    if name in {f.name for f in dataclasses.fields(Protection)}:
        return replace(planner, protection=replace(planner.protection, **change))
    return replace(planner, **change)
