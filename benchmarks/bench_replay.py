"""Replay every strategy on every transcript we have, under both cache models, and check the targets.

Corpora:
- ``real``: the bundled real trajectories (``src/contextwarden/data/trajectories``: SWE-agent and OpenHands,
  MIT; the same files as ``/work/shared/data``), 2 to 21 requests each;
- ``generated``: long coding-agent sessions from ``generate_sessions.py`` (50-70 requests, calibrated
  against the Complexity Trap figures; see its docstring);
- ``swebench-gemini3`` (with ``--shared DIR``): the real long mini-swe-agent sessions with Gemini 3 Pro
  on SWE-bench Verified (``DIR/trajs/*.traj.json``, 18-145 requests; ``--shared-limit N`` takes every
  k-th file for N of them).

Models: ``gpt-5`` (OpenAI-style automatic prefix caching, reads at 0.1x) and ``claude-sonnet-4-5``
(Anthropic-style explicit breakpoints, writes 1.25x for 5 minutes, reads 0.1x).

The targets apply to transcripts of 30 or more requests, for the ``contextwarden`` strategy:
retention 1.0; mean input tokens per request <= 0.55x raw; cache-adjusted cost <= 0.85x raw under both
cache models and the lowest of all strategies (raw, masking and the peers; other contextwarden variants
are not competitors); cost <= 1.15x the offline optimum. They are checked per transcript and over all
of them, and printed with PASS/FAIL; nothing is hidden when one fails.

Besides the default ``contextwarden`` (keep the last tool result, a voluntary batch must save 45% (explicit
cache) or 20% (automatic cache) of what it could change, a cache breakpoint before the oldest tool result
a later batch could change), the table
carries the earlier planner settings (``keep=10,min-batch-share=0``) and a settings-only alternative
(``keep=3,min-batch=6000,min-batch-share=0``).

    .venv/bin/python benchmarks/bench_replay.py [--sessions 8] [--json out/bench_replay.json]
        [--shared ../shared/data/mini-swe-agent-gemini3 [--shared-limit 20]] [--corpora swebench-gemini3]
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from generate_sessions import calibration, generate

from contextwarden.replay import ReplayResults, ReplaySettings, default_counter, load_inputs, replay
from contextwarden.replay.probes import RETENTION_PROBES

ROOT = Path(__file__).resolve().parents[1]
REAL = sorted((ROOT / "src" / "contextwarden" / "data" / "trajectories").glob("*/*.traj")) + sorted(
    (ROOT / "src" / "contextwarden" / "data" / "trajectories").glob("*/*.json")
)
MODELS = ("gpt-5", "claude-sonnet-4-5")
STRATEGIES = (
    "raw",
    "mask-last-n:10",
    "contextwarden",
    "contextwarden:keep=10,min-batch-share=0",
    "contextwarden:keep=3,min-batch=6000,min-batch-share=0",
    "contextwarden:task=coding",
    "contextwarden:task=research",
    "contextwarden:task=browser",
    "contextwarden:task=proxy",
    "langchain-context-editing",
    "openai-agents-trimmer",
    "openhands-condenser",
)
TARGET_MIN_REQUESTS = 30


def _table(results: ReplayResults, title: str) -> None:
    ran = [s for s in results.strategies if not s.skipped]
    raw_strategy = next(s for s in ran if s.name == "raw")
    raw = raw_strategy.figures()
    raw_costs = [_cost(f) for f in raw_strategy.per_file]
    print(f"\n{title}")
    print(
        f"{'strategy':<52}{'req':>5}{'mean in':>9}{'×raw':>6}{'cost $':>9}{'×raw':>6}{'×opt':>6}{'hit':>6}"
        f"{'win':>5}{'ret':>7}{'nae':>7}{'reread':>7}{'ovf':>4}{'>1.01':>6}{'worst':>6}"
    )
    for s in ran:
        f = s.figures()
        opt = f["optimum_ratio"]
        per_file = [_cost(pf) / rc for pf, rc in zip(s.per_file, raw_costs, strict=True) if rc]
        print(
            f"{s.name:<52}{f['requests']:>5}{f['input_tokens_mean']:>9,.0f}"
            f"{f['input_tokens_mean'] / raw['input_tokens_mean']:>6.2f}{f['cost_usd']:>9.3f}"
            f"{f['cost_usd'] / raw['cost_usd']:>6.2f}{(opt or 0):>6.2f}{f['cache_hit_ratio']:>6.0%}"
            f"{f['window_events']:>5}{f['retention']:>7.3f}"
            f"{f['probe_retention'].get('next_action_evidence', 1.0):>7.3f}{f['reread_rate']:>7.1%}{f['overflows']:>4}"
            f"{sum(r > 1.01 for r in per_file):>6}{max(per_file, default=1.0):>6.2f}"
        )
    for s in results.strategies:
        if s.skipped:
            print(f"{s.name:<52}skipped: {s.skipped}")


def _cost(file: Any) -> float:
    """A transcript's cache-adjusted cost under one strategy (summarizer calls included)."""
    return float(file.figures()["cost_usd"])


def _checks(figures: dict[str, Any], raw: dict[str, Any], others: list[float]) -> dict[str, Any]:
    tokens = figures["input_tokens_mean"] / raw["input_tokens_mean"]
    cost = figures["cost_usd"] / raw["cost_usd"]
    opt = figures["optimum_ratio"]
    return {
        "retention": (figures["retention"], figures["retention"] >= 1.0),
        "tokens_vs_raw": (tokens, tokens <= 0.55),
        "cost_vs_raw": (cost, cost <= 0.85),
        "lowest_cost": (figures["cost_usd"], all(figures["cost_usd"] <= o for o in others)),
        "vs_optimum": (opt, opt is not None and opt <= 1.15),
    }


def targets(results: ReplayResults, strategy: str) -> list[dict[str, Any]]:
    """The target checks for ``strategy``: one row per transcript of 30+ requests, then their total."""
    ran = {s.name: s for s in results.strategies if not s.skipped}
    rows = []
    target, raw = ran[strategy], ran["raw"]
    long_files = [i for i, f in enumerate(raw.per_file) if len(f.requests) >= TARGET_MIN_REQUESTS]
    for i in long_files:
        others = [s.per_file[i].figures()["cost_usd"] for n, s in ran.items() if not n.startswith("contextwarden")]
        rows.append(
            {"file": raw.per_file[i].name, **_checks(target.per_file[i].figures(), raw.per_file[i].figures(), others)}
        )
    if long_files:

        def total(name: str) -> dict[str, Any]:
            files = [ran[name].per_file[i] for i in long_files]
            requests = [r for f in files for r in f.requests]
            n = len(requests)
            pairs = sum(1 for r in requests for k in r.probes if k in RETENTION_PROBES)
            optimum = sum(f.optimum_cost_usd or 0.0 for f in files)
            cost = sum(r.cost_usd for r in requests)
            return {
                "input_tokens_mean": sum(r.input_tokens for r in requests) / n,
                "cost_usd": cost,
                "retention": sum(1 for r in requests for k, v in r.probes.items() if v and k in RETENTION_PROBES)
                / pairs
                if pairs
                else 1.0,
                "optimum_ratio": cost / optimum if optimum else None,
            }

        others = [total(n)["cost_usd"] for n in ran if not n.startswith("contextwarden")]
        rows.append(
            {
                "file": f"all {len(long_files)} with >= {TARGET_MIN_REQUESTS} requests",
                **_checks(total(strategy), total("raw"), others),
            }
        )
    return rows


def _print_targets(model: str, strategy: str, rows: list[dict[str, Any]]) -> None:
    print(f"\ntargets for {strategy} under {model} (transcripts of {TARGET_MIN_REQUESTS}+ requests)")
    print(f"{'file':<30}{'retention':>14}{'tokens≤0.55':>16}{'cost≤0.85':>14}{'lowest':>12}{'opt≤1.15':>14}")
    for row in rows:
        cells = []
        for key, fmt in (
            ("retention", "{:.3f}"),
            ("tokens_vs_raw", "{:.2f}"),
            ("cost_vs_raw", "{:.2f}"),
            ("lowest_cost", "${:.2f}"),
            ("vs_optimum", "{:.2f}"),
        ):
            value, ok = row[key]
            cells.append(f"{fmt.format(value if value is not None else float('nan'))} {'PASS' if ok else 'FAIL'}")
        print(f"{row['file']:<30}{cells[0]:>14}{cells[1]:>16}{cells[2]:>14}{cells[3]:>12}{cells[4]:>14}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", type=int, default=8, help="generated long sessions")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--models", nargs="+", default=list(MODELS))
    parser.add_argument("--strategies", nargs="+", default=list(STRATEGIES))
    parser.add_argument("--json", default=None, help="write every figure (per file, per request) here")
    parser.add_argument("--shared", default=None, help="a mini-swe-agent-gemini3 directory (its trajs/*.traj.json)")
    parser.add_argument("--shared-limit", type=int, default=0, help="take N of the shared sessions (0: all)")
    parser.add_argument(
        "--corpora", nargs="+", default=None, help="only these corpora (real, generated, swebench-gemini3)"
    )
    args = parser.parse_args()
    counter = default_counter()
    print(
        f"machine: {platform.machine()}, {platform.python_implementation()} {platform.python_version()}; "
        f"tokens counted with {counter.name} ({'exact' if getattr(counter, 'exact', False) else 'estimate'})"
    )
    report: dict[str, Any] = {"command": " ".join(sys.argv), "counter": counter.name, "runs": [], "targets": []}
    with tempfile.TemporaryDirectory() as tmp:
        generated = []
        for k in range(args.sessions):
            doc = generate(args.seed + k)
            path = Path(tmp) / f"generated-{args.seed + k:03d}.json"
            path.write_text(json.dumps(doc), encoding="utf-8")
            generated.append(path)
            report.setdefault("calibration", []).append({"file": path.name, **calibration(doc, counter.count)})
        corpora = {"real": [str(p) for p in REAL], "generated": [str(p) for p in generated]}
        if args.shared:
            shared = sorted(Path(args.shared, "trajs").glob("*.traj.json"))
            if args.shared_limit and args.shared_limit < len(shared):
                shared = shared[:: len(shared) // args.shared_limit][: args.shared_limit]
            corpora["swebench-gemini3"] = [str(p) for p in shared]
        for corpus, files in corpora.items():
            if args.corpora and corpus not in args.corpora:
                continue
            inputs = load_inputs(files)
            for model in args.models:
                started = time.perf_counter()
                results = replay(inputs, args.strategies, settings=ReplaySettings(model=model), counter=counter)
                seconds = time.perf_counter() - started
                _table(
                    results,
                    f"{corpus} ({len(files)} transcripts, {sum(i.requests for i in inputs)} requests), "
                    f"{model} ({results.cache_style}), {seconds:.0f} s",
                )
                report["runs"].append(
                    {"corpus": corpus, "model": model, "seconds": seconds, "results": results.to_dict(per_request=True)}
                )
                for strategy in (s for s in args.strategies if s.startswith("contextwarden")):
                    rows = targets(results, strategy)
                    if rows:
                        _print_targets(model, strategy, rows)
                        report["targets"].append({"corpus": corpus, "model": model, "strategy": strategy, "rows": rows})
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(report, indent=1, default=str), encoding="utf-8")
        print(f"\nwrote {args.json}")


if __name__ == "__main__":
    main()
