"""Predicted against billed dollars on real sessions: the raw replay of each transcript, priced by its own model.

For every transcript with per-call usage, the replay's raw strategy (the agent's own history, as sent)
is priced under the cache model of the transcript's own model, and compared with the usage the
provider reported, priced at the model's published prices, and with the run's own recorded bill
where it has one (mini-swe-agent's ``info.model_stats.instance_cost``). Prints the total, the
per-session spread of predicted / billed, and the cache reads on both sides.

    .venv/bin/python benchmarks/bench_bills.py ../shared/data/mini-swe-agent-gemini3/trajs/*.traj.json
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

from contextwarden.replay import ReplaySettings, default_counter, load_inputs, replay


def _recorded_bill(path: str) -> float | None:
    """The run's own recorded cost, when the file is a mini-swe-agent trajectory that has one."""
    try:
        info = json.loads(Path(path).read_text(encoding="utf-8")).get("info", {})
    except (OSError, ValueError, AttributeError):
        return None
    cost = info.get("model_stats", {}).get("instance_cost") if isinstance(info, dict) else None
    return float(cost) if isinstance(cost, (int, float)) else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="+")
    args = parser.parse_args()
    started = time.perf_counter()
    inputs = load_inputs(args.files)
    results = replay(inputs, ["raw"], settings=ReplaySettings(optimum=False), counter=default_counter())
    rows = []
    for path, file in zip(args.files, results.strategy("raw").per_file, strict=True):
        if file.usage is None or file.usage.source != "per-call":
            continue
        rows.append((path, file.usage, _recorded_bill(path)))
    print(f"machine: {platform.machine()}, {platform.python_implementation()} {platform.python_version()}")
    print(
        f"{len(rows)} transcripts with per-call usage ({time.perf_counter() - started:.0f} s); models: "
        f"{', '.join(sorted({m for _, u, _ in rows for m in u.models}))}"
    )
    real = sum(u.real_cost_usd for _, u, _ in rows)
    predicted = sum(u.predicted_cost_usd for _, u, _ in rows)
    recorded = [b for _, _, b in rows if b is not None]
    print(f"usage at published prices ${real:.2f}; predicted ${predicted:.2f} ({predicted / real:.3f}x)")
    if len(recorded) == len(rows):
        total = sum(recorded)
        print(f"the runs' own recorded bills ${total:.2f}; predicted {predicted / total:.3f}x")
    read_real = sum(u.real_cache_read_tokens for _, u, _ in rows)
    read_predicted = sum(u.predicted_cache_read_tokens for _, u, _ in rows)
    print(f"cache reads: real {read_real:,}, predicted {read_predicted:,} ({read_predicted / max(read_real, 1):.3f}x)")
    ratios = sorted(u.predicted_cost_usd / u.real_cost_usd for _, u, _ in rows if u.real_cost_usd)
    if ratios:
        n = len(ratios)
        within = sum(abs(r - 1) <= 0.05 for r in ratios)
        print(
            f"per session predicted / billed: min {ratios[0]:.3f}, p10 {ratios[n // 10]:.3f}, "
            f"median {statistics.median(ratios):.3f}, p90 {ratios[(9 * n) // 10]:.3f}, max {ratios[-1]:.3f}; "
            f"{within} of {n} within 5%"
        )


if __name__ == "__main__":
    sys.exit(main())
