"""The tokens-versus-cost frontier of the planner's settings on long sessions.

Every setting below is the ``contextwarden`` strategy with planner options, replayed on the generated
long sessions of ``generate_sessions.py`` under both cache models. For each setting: mean input tokens
per request and cache-adjusted cost, both relative to raw, retention and next-action evidence (over the
set and on the worst session). The bundled real transcripts (all under 30 requests) are replayed too,
for each setting's highest cost relative to raw on one of them. Only admissible settings make the
frontier: retention 1.0 and at least 99% of next-action evidence on every long session, and
never above raw's cost on a short real one (short sessions never pay); the others are listed
with the reason and drawn hollow. The Pareto frontier of the admissible settings and its knee (least
tokens + cost) are printed, with how far the default sits from the knee, and the plot written as SVG.
The goal: at most 0.60x raw tokens at at most 0.80x raw cost, retention 1.0.

    .venv/bin/python benchmarks/bench_frontier.py [--sessions 8] [--svg out/frontier.svg] [--json out/frontier.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_replay import REAL
from generate_sessions import generate

from contextwarden.replay import ReplayResults, ReplaySettings, default_counter, load_inputs, replay
from contextwarden.report.frontier import charts_document, cost_above_frontier, tradeoff_points
from contextwarden.report.scatter import frontier, knee, tradeoff_chart

SETTINGS = (
    # the default: keep 1; batches of >= 45% of what a batch can change under an explicit cache (the payback
    # rule alone under an automatic one); 1 working-set file, the 3 files changed last, the working set's
    # recent reads; exploration reads
    "contextwarden",
    "contextwarden:keep=3,min-batch-share=0.4",
    "contextwarden:no-exploration-reads",
    "contextwarden:no-working-set-reads",
    "contextwarden:keep=2",
    "contextwarden:keep=3",
    "contextwarden:keep=5",
    "contextwarden:keep=10",
    "contextwarden:min-batch-share=0.2",
    "contextwarden:min-batch-share=0.3",
    "contextwarden:min-batch-share=0.4",
    "contextwarden:min-batch-share=0.5",
    "contextwarden:min-batch-share=0.6",
    "contextwarden:keep=2,min-batch-share=0.3",
    "contextwarden:keep=3,min-batch-share=0.3",
    "contextwarden:keep=5,min-batch-share=0.5",
    "contextwarden:working-set-files=2",
    "contextwarden:working-set-files=3",
    "contextwarden:working-set-reads=4",
    "contextwarden:working-set-reads=12",
    "contextwarden:working-set-files=2,min-batch-share=0.3",
    "contextwarden:no-cache-aware",
    "mask-last-n:10",
)
MODELS = ("gpt-5", "claude-sonnet-4-5")


def short_session_costs(results: ReplayResults) -> dict[str, float]:
    """Each strategy's highest cost relative to raw's on one transcript of ``results`` (the short real ones)."""
    raw = {r.file: r.figures()["cost_usd"] for r in results.strategy("raw").per_file}
    return {
        s.name: max((r.figures()["cost_usd"] / raw[r.file] for r in s.per_file if raw[r.file]), default=1.0)
        for s in results.strategies
        if not s.skipped
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--models", nargs="+", default=list(MODELS))
    parser.add_argument("--svg", default=None, help="write the plot (one chart per model) here")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    counter = default_counter()
    out: dict[str, Any] = {"command": " ".join(sys.argv), "counter": counter.name, "models": {}}
    charts = []
    with tempfile.TemporaryDirectory() as tmp:
        files = []
        for k in range(args.sessions):
            path = Path(tmp) / f"generated-{args.seed + k:03d}.json"
            path.write_text(json.dumps(generate(args.seed + k)), encoding="utf-8")
            files.append(str(path))
        inputs = load_inputs(files)
        short_inputs = load_inputs([str(p) for p in REAL])
        for model in args.models:
            started = time.perf_counter()
            settings = ReplaySettings(model=model, optimum=False)
            results = replay(inputs, ["raw", *SETTINGS], settings=settings, counter=counter)
            raw = results.strategy("raw").figures()
            short = short_session_costs(replay(short_inputs, ["raw", *SETTINGS], settings=settings, counter=counter))
            points = [
                replace(p, short_session_cost=short[p.label])
                for p in tradeoff_points(results, default=SETTINGS[0])
                if p.label != "raw"
            ]
            rows = []
            for name, point in zip(SETTINGS, points, strict=True):
                f = results.strategy(name).figures()
                rows.append(
                    {
                        "setting": name,
                        "tokens": point.tokens,
                        "cost": point.cost,
                        "retention": f["retention"],
                        "retention_worst": point.retention,
                        "next_action_evidence_misses": f["probe_misses"].get("next_action_evidence", 0),
                        "next_action_evidence": f["probe_retention"].get("next_action_evidence", 1.0),
                        "next_action_evidence_worst": point.next_action_evidence,
                        "sufficient": point.sufficient,
                        "short_session_cost_worst": point.short_session_cost,
                        "admissible": point.admissible,
                        "why_not": point.why_not,
                        "reread_rate": f["reread_rate"],
                        "window_events": f["window_events"],
                    }
                )
            front = {p.label for p in frontier(points)}
            best = knee(points)
            seconds = time.perf_counter() - started
            print(
                f"\n{model} ({results.cache_style}), {len(files)} sessions, {raw['requests']} requests, {seconds:.0f} s"
            )
            print(
                f"{'setting':<56}{'tokens×raw':>11}{'cost×raw':>10}{'retention':>10}"
                f"{'NAE kept':>9}{'worst':>7}{'NAE miss':>9}{'re-read':>9}{'short max':>10}  frontier"
            )
            for r in rows:
                mark = (
                    "knee"
                    if best is not None and r["setting"] == best.label
                    else "yes"
                    if r["setting"] in front
                    else ""
                )
                print(
                    f"{r['setting']:<56}{r['tokens']:>11.2f}{r['cost']:>10.2f}{r['retention']:>10.3f}"
                    f"{r['next_action_evidence']:>9.1%}{r['next_action_evidence_worst']:>7.1%}"
                    f"{r['next_action_evidence_misses']:>9}{r['reread_rate']:>9.1%}"
                    f"{r['short_session_cost_worst']:>10.2f}  {mark or r['why_not']}"
                )
            default = rows[0]
            goal = default["tokens"] <= 0.60 and default["cost"] <= 0.80 and default["retention"] >= 1.0
            print(
                f"default: {default['tokens']:.2f}x tokens, {default['cost']:.2f}x cost, retention "
                f"{default['retention']:.3f} -> goal (<=0.60x, <=0.80x, 1.0) {'PASS' if goal else 'FAIL'}"
            )
            if best is None:
                print("knee: none (no setting is sufficient on every long session and at most raw on every short one)")
            else:
                print(
                    f"knee of the admissible settings: {best.label} "
                    f"({best.tokens:.2f}x tokens, {best.cost:.2f}x cost); "
                    f"the default is {'at it' if best.label == SETTINGS[0] else 'not'}"
                    f"{'' if default['admissible'] else ' and is itself ' + default['why_not']}: "
                    f"{default['tokens'] - best.tokens:+.3f}x tokens, {default['cost'] - best.cost:+.3f}x cost; "
                    f"+{cost_above_frontier(points[0], points):.3f}x cost above the frontier at its tokens"
                )
            out["models"][model] = {
                "rows": rows,
                "knee": best.label if best else None,
                "default_cost_above_frontier": cost_above_frontier(points[0], points),
                "default_minus_knee": (
                    {"tokens": default["tokens"] - best.tokens, "cost": default["cost"] - best.cost} if best else None
                ),
                "seconds": seconds,
            }
            charts.append(tradeoff_chart(points, title=f"Planner settings on {len(files)} long sessions, {model}"))
    if args.svg:
        Path(args.svg).parent.mkdir(parents=True, exist_ok=True)
        Path(args.svg).write_text(charts_document(charts), encoding="utf-8")
        print(f"\nwrote {args.svg}")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(out, indent=1), encoding="utf-8")
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
