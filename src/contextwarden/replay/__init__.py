"""Replay real transcripts under context strategies and compare tokens, cache-adjusted cost and retention.

::

    from contextwarden.replay import load_inputs, replay, ReplaySettings

    inputs = load_inputs(["session.jsonl"])
    results = replay(inputs, ["raw", "mask-last-n:10", "contextwarden"], settings=ReplaySettings(model="gpt-4o"))
    for s in results.strategies:
        print(s.name, s.figures()["cost_usd"])

Every request a strategy would have sent is rendered (OpenAI Chat), measured with the exact o200k
counter when installed, priced with the cache model of :mod:`.costmodel`, and checked with the
retention probes of :mod:`.probes`; :mod:`.optimum` gives the best any batch schedule could have done.
"""

from __future__ import annotations

from .catalog import parse_strategy
from .costmodel import Block, BlockMeter, CacheSimulator, CostSettings, RequestCost
from .engine import DEFAULT_MODEL, default_counter, replay, replay_file
from .inputs import ReplayInput, load_inputs
from .optimum import Optimum, offline_optimum, schedule_cost
from .peers import PEERS, PeerStrategy, PeerUnavailable
from .probes import PROBE_KINDS, ProbeOutcome, ProbeTracker
from .results import FileResult, ReplayResults, RequestRecord, StrategyResult, UsageCheck
from .settings import ReplaySettings
from .strategies import (
    DEFAULT_STRATEGIES,
    Built,
    MaskLastN,
    RawStrategy,
    RunEnv,
    Strategy,
    StrategyRun,
)
from .warden import ContextWardenStrategy, contextwarden_variant

__all__ = [
    "DEFAULT_MODEL",
    "DEFAULT_STRATEGIES",
    "PEERS",
    "PROBE_KINDS",
    "Block",
    "BlockMeter",
    "Built",
    "CacheSimulator",
    "ContextWardenStrategy",
    "CostSettings",
    "FileResult",
    "MaskLastN",
    "Optimum",
    "PeerStrategy",
    "PeerUnavailable",
    "ProbeOutcome",
    "ProbeTracker",
    "RawStrategy",
    "ReplayInput",
    "ReplayResults",
    "ReplaySettings",
    "RequestCost",
    "RequestRecord",
    "RunEnv",
    "Strategy",
    "StrategyResult",
    "StrategyRun",
    "UsageCheck",
    "contextwarden_variant",
    "default_counter",
    "load_inputs",
    "offline_optimum",
    "parse_strategy",
    "replay",
    "replay_file",
    "schedule_cost",
]
