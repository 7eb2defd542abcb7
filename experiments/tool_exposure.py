"""Experiment 8: dynamic tool exposure — 30 tools against the 5 the task needs.

The same scripted coding session (it only ever calls read_file, grep, edit_file and bash) is replayed
with contextwarden exposing all 30 registered tools on every request, only the 5 the phase needs, the
5 plus the lazy ``tool_catalog`` (the other 25 load on demand), and 30 switched to 5 a third of the way
in (one recorded tool-set change, which breaks the cached prefix once). Tokens per request, cache hits
and cache-adjusted cost are measured under OpenAI-style automatic caching and Anthropic-style
breakpoints. Wrong-tool calls and task success need a live model: a replay keeps the transcript's own
calls, so they are not measured here.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from _common import Experiment, coding_session, counter, main, table
from _tools import NEEDED_TOOLS, tool_registry

from contextwarden.assemble.manager import ContextManager, ContextPolicy
from contextwarden.context import ToolDefinition
from contextwarden.log.events import Event
from contextwarden.replay import Built, ReplayInput, ReplaySettings, RunEnv, StrategyRun, replay
from contextwarden.tools import TOOL_CATALOG

MODELS = ("gpt-4o", "claude-sonnet-4-5")


@dataclass(frozen=True)
class Exposure:
    """contextwarden's builder offering ``tools``; from request ``switch_at`` on, only ``then`` (a tool-set change)."""

    name: str
    tools: tuple[ToolDefinition, ...]
    switch_at: int | None = None
    then: tuple[str, ...] = ()

    def start(self, env: RunEnv) -> StrategyRun:
        """Begin one transcript."""
        manager = ContextManager(env.store, counter=env.counter, policy=ContextPolicy(retrieval_tools=False))
        return _Run(env, manager, self)


class _Run:
    def __init__(self, env: RunEnv, manager: ContextManager, spec: Exposure) -> None:
        self.env, self.manager, self.spec = env, manager, spec
        self.requests = 0

    def observe(self, event: Event) -> None:
        """The manager reads the store itself."""

    def build(self) -> Built:
        store, sid = self.env.store, self.env.session_id
        before = store.get_session(sid).last_seq
        if self.spec.switch_at is not None and self.requests == self.spec.switch_at:
            registry = tool_registry()
            change = registry.exposed_set_change(
                [t.name for t in self.spec.tools], self.spec.then, reason="the task needs only these"
            )
            if change is not None:
                store.append(sid, [change], expected_last_seq=before)
        self.requests += 1
        ctx = self.manager.build(sid, model=self.env.profile, tools=self.spec.tools)
        kinds = tuple(e.kind for e in store.read(sid, since_seq=before) if e.is_window_event)
        return Built(context=ctx, window_event_kinds=kinds, reports_window_events=True)


def exposures(switch_at: int) -> list[Exposure]:
    """The four ways of offering tools compared."""
    registry = tool_registry()
    every = registry.all()
    needed = tuple(registry.get(n) for n in registry.ordered(NEEDED_TOOLS))
    return [
        Exposure(name="all 30 tools", tools=every),
        Exposure(name="the 5 needed", tools=needed),
        Exposure(name="5 + tool_catalog (lazy)", tools=(*needed, TOOL_CATALOG)),
        Exposure(
            name=f"30, then 5 from request {switch_at + 1}",
            tools=every,
            switch_at=switch_at,
            then=tuple(t.name for t in needed),
        ),
    ]


def _rows(model: str, strategies: Sequence[Exposure], events: Sequence[Event]) -> list[list[Any]]:
    results = replay(
        [ReplayInput(name="session", source="scripted coding session", events=tuple(events))],
        list(strategies),
        settings=ReplaySettings(model=model, optimum=False),
        counter=counter(),
    )
    base = next(s.figures() for s in results.strategies if s.name == "the 5 needed")
    rows: list[list[Any]] = []
    for s in results.strategies:
        f = s.figures()
        reqs = s.per_file[0].requests
        tools = sum(r.sections.get("tools", 0) for r in reqs) / len(reqs)
        rows.append(
            [
                model,
                s.name,
                round(tools),
                round(f["input_tokens_mean"]),
                f"{f['cache_hit_ratio']:.1%}",
                f["prefix_breaks"],
                f["cost_usd"],
                f"{f['cost_usd'] / base['cost_usd']:.3f}×",
                f"{f['input_tokens_mean'] / base['input_tokens_mean']:.3f}×",
            ]
        )
    return rows


def run(*, small: bool = False) -> Experiment:
    """Experiment 8: tokens and cache behaviour with 30 tools exposed against the 5 needed."""
    rounds = 6 if small else 16
    events = coding_session(rounds)
    requests = sum(1 for e in events if type(e).__name__ == "AssistantMessage")
    strategies = exposures(requests // 3)
    rows = [row for model in MODELS for row in _rows(model, strategies, events)]
    t1 = table(
        f"The same {requests}-request session, four ways of offering tools",
        [
            "model",
            "tools offered",
            "tool tokens / request",
            "input / request",
            "cache hit",
            "prefix breaks",
            "cost (USD)",
            "cost vs 5",
            "tokens vs 5",
        ],
        rows,
        note="Tool schemas are counted as the rendered OpenAI tools JSON. Wrong-tool calls and success "
        "rates need a live model and are not measured by a replay.",
    )
    by = {(r[0], r[1]): r for r in rows}
    switched = strategies[3].name
    findings = (
        tuple(
            f"{model}: 30 tools cost {by[(model, 'all 30 tools')][2] - by[(model, 'the 5 needed')][2]:,} more tokens "
            f"on every request ({by[(model, 'all 30 tools')][8]} the tokens of the 5), but "
            f"{by[(model, 'all 30 tools')][7]} the cost: the schemas sit in the cached prefix, read at the cache price."
            for model in MODELS
        )
        + tuple(
            f"{model}: switching 30 → 5 at request {requests // 3 + 1} is one recorded tool-set change "
            f"(one more prefix break); it cost {by[(model, switched)][6]:.4f} USD "
            f"against {by[(model, 'all 30 tools')][6]:.4f} for keeping "
            f"all 30: {'it paid' if by[(model, switched)][6] < by[(model, 'all 30 tools')][6] else 'it did not pay'} "
            "over the rest of the session."
            for model in MODELS
        )
        + ("The lazy catalog costs one small tool and keeps the other 25 reachable on demand.",)
    )
    return Experiment(
        name="tool_exposure",
        title="Experiment 8: dynamic tool exposure (30 tools against 5)",
        setup=f"A 30-tool registry in capability groups (explore, edit, execute, release, web, browser, data, "
        f"comms, meta); a scripted {rounds}-round coding session that only calls read_file, grep, edit_file "
        "and bash. Replayed with contextwarden's builder offering each tool set, priced for gpt-4o "
        "(automatic prefix caching) and claude-sonnet-4-5 (explicit breakpoints).",
        shows="What exposing tools the task does not need costs per request in tokens and in cache-adjusted "
        "cost, and what a tool-set change does to the cache.",
        tables=(t1,),
        findings=findings,
    )


if __name__ == "__main__":
    sys.exit(main(run))
