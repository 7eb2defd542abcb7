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

from contextwarden.assemble.manager import ContextPolicy
from contextwarden.plan.planner import PlannerSettings
from contextwarden.replay import ReplaySettings, load_inputs, replay_file
from contextwarden.replay.catalog import parse_strategy
from contextwarden.replay.engine import reference_of
from contextwarden.replay.warden import ContextWardenStrategy
from contextwarden.tokens import best_counter
from contextwarden.wire.blocks import BlockMeter

TRAJECTORY = (
    Path(__file__).parents[1] / "src/contextwarden/data/trajectories/swe-agent/ctf__i_got_id_demo.traj"
).resolve()


def _proxy_policy(tmp_path: Path) -> ContextPolicy:
    """The policy a proxy plans with."""
    from contextwarden.log.store import MemoryStore
    from contextwarden.proxy._db import ProxyDB
    from contextwarden.proxy.pipeline import Pipeline
    from contextwarden.proxy.settings import ProxySettings

    pipeline = Pipeline(ProxySettings(), MemoryStore(), ProxyDB(str(tmp_path / "proxy.db")))
    pipeline.close()
    return pipeline.manager.policy


@pytest.mark.parametrize(("share", "dearer"), [(None, False), (PlannerSettings().horizon_share, True)])
def test_the_proxys_horizon_keeps_a_short_session_at_the_cost_of_going_direct(
    share: float | None, dearer: bool, tmp_path: Path
) -> None:
    policy = _proxy_policy(tmp_path)
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
