"""The proxy's planning horizon: a batch the session does not live to pay back must not make it dearer than direct.

On this real SWE-agent trajectory (21 requests, OpenAI-style caching) the proxy's policy (no retrieval
tools, thinking kept) with the library's default horizon (a session runs 0.4 as long again) batches late,
pays 4x a cache hit for it, and the session ends before it pays back: 1.05x the cost of going direct.
The proxy expects a third, waits, and costs what direct costs.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from _paths import ROOT
from contextwarden.assemble.manager import ContextPolicy
from contextwarden.plan.planner import PlannerSettings
from contextwarden.plan.taskpolicies import PROXY, get_task_policy, register_task_policy, task_policy_names
from contextwarden.proxy.policy import proxy_policy
from contextwarden.replay import ReplaySettings, load_inputs, replay_file
from contextwarden.replay.catalog import parse_strategy
from contextwarden.replay.engine import reference_of
from contextwarden.replay.warden import ContextWardenStrategy
from contextwarden.tokens import best_counter
from contextwarden.wire.blocks import BlockMeter

TRAJECTORY = (ROOT / "src/contextwarden/data/trajectories/swe-agent/ctf__i_got_id_demo.traj").resolve()


def _proxy_policy(tmp_path: Path) -> ContextPolicy:
    """The policy a proxy plans with."""
    from contextwarden.log.store import MemoryStore
    from contextwarden.proxy._db import ProxyDB
    from contextwarden.proxy.pipeline import Pipeline
    from contextwarden.proxy.settings import ProxySettings

    pipeline = Pipeline(ProxySettings(), MemoryStore(), ProxyDB(str(tmp_path / "proxy.db")))
    pipeline.close()
    return pipeline.manager.policy


def _unbounded(policy: ContextPolicy) -> ContextPolicy:
    planner = dataclasses.replace(policy.planner, uncovered_payback_turns=float("inf"))
    return dataclasses.replace(policy, planner=planner)


@pytest.mark.parametrize(("share", "dearer"), [(None, False), (PlannerSettings().horizon_share, True)])
def test_the_proxys_horizon_keeps_a_short_session_at_the_cost_of_going_direct(
    share: float | None, dearer: bool, tmp_path: Path
) -> None:
    # without the bound on uncovered batches, which at the preset's 4 turns holds this batch back too
    policy = _unbounded(_proxy_policy(tmp_path))
    if share is not None:  # the library's default horizon, for contrast
        policy = dataclasses.replace(policy, planner=dataclasses.replace(policy.planner, horizon_share=share))
    counter = best_counter()
    settings = ReplaySettings(model="gpt-5", optimum=False)
    (inp,) = load_inputs([str(TRAJECTORY)])
    reference = reference_of(inp, settings, counter)

    def cost(strategy: object) -> float:
        result = replay_file(inp, strategy, reference=reference, meter=BlockMeter(counter), settings=settings)  # type: ignore[arg-type]
        return sum(r.cost_usd for r in result.requests)

    raw = cost(parse_strategy("raw"))
    proxied = cost(ContextWardenStrategy(policy=policy, compact=False))
    assert (proxied > 1.01 * raw) is dearer


def test_the_proxy_keeps_three_results_because_its_first_batch_adds_no_tools(tmp_path: Path) -> None:
    """The library keeps 1 result because its first evicting batch pays for the retrieval tools it adds.

    The proxy adds none, so that batch looks cheap and comes early: with a keep of 1 it costs 1.02x raw on
    this short real trajectory under gpt-5; the proxy's keep of 3 stays at raw. (Both without the bound on
    uncovered batches, which at the preset's 4 turns holds this batch back too.)
    """
    keep = PROXY.planner.keep_recent_tool_results
    policy = _proxy_policy(tmp_path)
    assert policy.planner.keep_recent_tool_results == keep > PlannerSettings().keep_recent_tool_results
    policy = _unbounded(policy)
    counter = best_counter()
    settings = ReplaySettings(model="gpt-5", optimum=False)
    (inp,) = load_inputs([str(TRAJECTORY)])
    reference = reference_of(inp, settings, counter)

    def ratio(keep: int) -> float:
        planner = dataclasses.replace(policy.planner, keep_recent_tool_results=keep)
        strategy = ContextWardenStrategy(policy=dataclasses.replace(policy, planner=planner), compact=False)
        runs = [
            replay_file(inp, s, reference=reference, meter=BlockMeter(counter), settings=settings)  # type: ignore[arg-type]
            for s in (parse_strategy("raw"), strategy)
        ]
        raw, proxied = (sum(r.cost_usd for r in run.requests) for run in runs)
        return proxied / raw

    assert ratio(keep) <= 1.0 < ratio(1) - 0.01


def test_the_proxy_plans_with_the_registered_proxy_preset(tmp_path: Path) -> None:
    """The proxy's settings are the ``proxy`` task preset: listed, replayable, and what the proxy runs."""
    assert "proxy" in task_policy_names()
    assert _proxy_policy(tmp_path) == get_task_policy("proxy")
    replayed = parse_strategy("contextwarden:task=proxy")
    assert isinstance(replayed, ContextWardenStrategy)
    assert replayed.policy.planner == PROXY.planner and not replayed.policy.retrieval_tools
    tuned = dataclasses.replace(PROXY, planner=dataclasses.replace(PROXY.planner, horizon_share=0.25))
    register_task_policy(tuned, replace_existing=True)
    try:
        assert proxy_policy().planner.horizon_share == 0.25  # read from the registry, not a constant
        assert proxy_policy("coding").planner.horizon_share == 0.25
        assert proxy_policy("coding").planner.keep_recent_tool_results == 10  # the preset's own, being more
    finally:
        register_task_policy(PROXY, replace_existing=True)


def test_the_former_constants_read_the_preset_with_a_warning() -> None:
    import contextwarden.proxy.policy as module

    with pytest.warns(DeprecationWarning):
        assert module.PROXY_KEEP_RECENT == 3  # type: ignore[attr-defined]
    with pytest.warns(DeprecationWarning):
        assert PROXY.planner.horizon_share == module.PROXY_HORIZON  # type: ignore[attr-defined]
