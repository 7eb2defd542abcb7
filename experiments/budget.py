"""Experiment 1: the token budget — window, reserved output, tool schemas, safety margin.

Part 1 computes the budget the library derives for several real model profiles with 5 and with 30
tools exposed. Part 2 replays a long scripted coding session against a 32K-window profile and checks
that no contextwarden request passes the usable budget, where the raw history overflows the window.
"""

from __future__ import annotations

import sys
from typing import Any

from _common import Experiment, coding_session, counter, main, small_window, table
from _tools import NEEDED_TOOLS, tool_registry

from contextwarden.budget import BudgetPolicy, default_safety_margin
from contextwarden.models import get_profile
from contextwarden.replay import ReplayInput, ReplaySettings, replay

PROFILES = ("gpt-4o", "gpt-5", "claude-sonnet-4-5", "claude-haiku-4-5", "gemini-2.5-flash", "smollm2-135m")


def _budget_rows() -> list[list[Any]]:
    registry = tool_registry()
    tok = counter()
    five = registry.schema_tokens(NEEDED_TOOLS, tok)
    thirty = registry.schema_tokens([t.name for t in registry.all()], tok)
    policy = BudgetPolicy()
    rows: list[list[Any]] = []
    for name in PROFILES:
        p = get_profile(name)
        window = p.input_window or policy.fallback_window
        rows.append(
            [
                name,
                p.context_window or 0,
                policy.output_reserve(p),
                five,
                thirty,
                default_safety_margin(window),
                policy.usable_input(p, tool_schema_tokens=five),
                policy.usable_input(p, tool_schema_tokens=thirty),
                policy.trigger_for(p),
                policy.summary_max_tokens(p),
            ]
        )
    return rows


def _compaction_finding(with_compaction: list[Any], without: list[Any]) -> str:
    if without[4] == 0:
        return (
            "Compaction was not needed here: masking and supersession alone kept every request under the budget "
            f"(with compaction allowed: {with_compaction[6]} window events, without: {without[6]})."
        )
    return (
        f"Without compaction, reductions alone left {without[4]} request(s) over budget: masking has a floor "
        "(the kept tail and pinned items); compaction is the last resort."
    )


def run(*, small: bool = False) -> Experiment:
    """Experiment 1: budget math per model, and the budget holding on a session that outgrows a 32K window."""
    rows = _budget_rows()
    t1 = table(
        "calculate_budget() per model profile",
        [
            "model",
            "window",
            "reserved output",
            "tools (5)",
            "tools (30)",
            "safety margin",
            "usable input (5 tools)",
            "usable input (30 tools)",
            "compaction trigger",
            "summary budget",
        ],
        rows,
        note="usable input = window − reserved output (min(max output, 8,192)) − tool schemas − safety margin "
        "(2% of the window, at most 2,048); trigger = min(⌊0.85·window⌋, window − 32,768).",
    )
    model = small_window(32_000)
    rounds = 8 if small else 20
    events = coding_session(rounds, file_lines=400, tests=600)
    results = replay(
        [ReplayInput(name="session", source=f"scripted coding session, {rounds} rounds", events=tuple(events))],
        ["raw", "mask-last-n:10", "contextwarden", "contextwarden:no-compact"],
        settings=ReplaySettings(model=model, optimum=False),
        counter=counter(),
    )
    profile = get_profile(model)
    budget = BudgetPolicy().usable_input(profile)
    rows2 = []
    for s in results.strategies:
        reqs = s.per_file[0].requests
        f = s.figures()
        rows2.append(
            [
                s.name,
                f["requests"],
                f["input_tokens_peak"],
                budget,
                sum(r.input_tokens > budget for r in reqs),
                f["overflows"],
                f["window_events"],
                f"{f['retention']:.1%}",
            ]
        )
    t2 = table(
        f"A {rounds}-round session against a 32,000-token window (usable input {budget:,})",
        [
            "strategy",
            "requests",
            "peak input",
            "usable budget",
            "over budget",
            "over window",
            "window events",
            "retention",
        ],
        rows2,
    )
    by = {r[0]: r for r in rows2}
    findings = (
        f"30 tools cost {rows[0][4] - rows[0][3]:,} more tokens of every request than the 5 the task needs; the "
        "budget subtracts them before anything else gets room.",
        f"Raw history passed the usable budget on {by['raw'][4]} of {by['raw'][1]} requests and the window on "
        f"{by['raw'][5]}; contextwarden on {by['contextwarden'][4]} (peak {by['contextwarden'][2]:,} ≤ {budget:,}).",
        _compaction_finding(by["contextwarden"], by["contextwarden:no-compact"]),
        f"contextwarden recorded a window event on {by['contextwarden'][6]} of {by['contextwarden'][1]} requests, "
        "each a batch the planner judged to pay back under gpt-4o's cache prices (here mostly file reads made stale "
        f"by the edit that followed them); mask-last-n:10 rewrote earlier context on {by['mask-last-n:10'][6]}.",
    )
    return Experiment(
        name="budget",
        title="Experiment 1: token budget",
        setup=f"Budget math of contextwarden.budget for {len(PROFILES)} bundled model profiles, with the 5 tools a "
        f"coding task needs and a 30-tool registry; then a scripted {rounds}-round coding session (grep, "
        "reads of 400-line files, edits, 600-test pytest runs) replayed with the replay engine against "
        "gpt-4o's profile cut to a 32K window.",
        shows="How much of the window is really usable once output, tool schemas and a margin are reserved, and "
        "that the builder never sends a request over that budget while raw history overflows.",
        tables=(t1, t2),
        findings=findings,
    )


if __name__ == "__main__":
    sys.exit(main(run))
