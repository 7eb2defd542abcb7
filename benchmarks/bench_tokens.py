"""Token counters: throughput and signed error against o200k on each corpus kind.

    .venv/bin/python benchmarks/bench_tokens.py [--json out.json] [--corpus DIR] [--min-bytes N] [--runs R]

For every sample in ``benchmarks/corpus`` (English prose, Python, a diff, JSON, an ANSI terminal log,
Chinese) and every counter (exact o200k_base and cl100k_base through bpe-openai, the heuristic, and
plain chars/4 for comparison) it reports the token count's signed error against exact o200k and the
throughput in MB/s (UTF-8 bytes per second, the best of ``--runs`` timings over the sample repeated to
at least ``--min-bytes``). The heuristic's target is an error in [-5%, +35%] on every sample; the
script says whether it holds. Prints a Markdown table; ``--json`` also writes the raw figures.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

from _progress import track

from contextwarden.tokens import ExactCounter, HeuristicCounter, TokenCounter

CORPUS = Path(__file__).resolve().parent / "corpus"
KINDS = {
    "prose_en.txt": "English prose",
    "python_code.py.txt": "Python code",
    "cpython_3.11.2_to_3.11.7.diff": "unified diff",
    "openhands_events.json": "JSON",
    "terminal_ansi.log": "ANSI terminal log",
    "chinese_zh.txt": "Chinese",
}
BAND = (-5.0, 35.0)


class CharsOverFour:
    """The usual rule of thumb, for comparison."""

    name = "chars/4"
    exact = False

    def count(self, text: str) -> int:
        return (len(text) + 3) // 4


def throughput(counter: TokenCounter, text: str, *, min_bytes: int, runs: int) -> float:
    """MB/s of ``counter`` on ``text`` repeated to at least ``min_bytes`` UTF-8 bytes (best run)."""
    size = len(text.encode("utf-8", "surrogatepass"))
    copies = max(1, -(-min_bytes // size))
    big = text * copies
    best = float("inf")
    for _ in range(runs):
        started = time.perf_counter()
        counter.count(big)
        best = min(best, time.perf_counter() - started)
    return size * copies / best / 1e6


def measure(corpus: Path, *, min_bytes: int, runs: int) -> list[dict[str, Any]]:
    reference = ExactCounter("o200k_base")
    counters: list[TokenCounter] = [reference, ExactCounter("cl100k_base"), HeuristicCounter(), CharsOverFour()]
    samples = [(KINDS.get(p.name, p.name), p) for p in sorted(corpus.iterdir()) if p.name in KINDS]
    texts = [(kind, path.name, path.read_bytes().decode("utf-8", "surrogateescape")) for kind, path in samples]
    texts.append(("all samples", "(concatenated)", "\n".join(t for _, _, t in texts)))
    results = []
    for kind, name, text in track(texts, "counting"):
        exact = reference.count(text)
        for counter in counters:
            tokens = counter.count(text)
            results.append(
                {
                    "kind": kind,
                    "file": name,
                    "bytes": len(text.encode("utf-8", "surrogatepass")),
                    "counter": counter.name,
                    "exact": counter.exact,
                    "tokens": tokens,
                    "o200k_tokens": exact,
                    "error_pct": round((tokens - exact) / exact * 100, 1),
                    # len() is O(1): a rate for chars/4 would measure nothing
                    "mb_per_s": None
                    if isinstance(counter, CharsOverFour)
                    else round(throughput(counter, text, min_bytes=min_bytes, runs=runs), 1),
                }
            )
    return results


def markdown(results: list[dict[str, Any]]) -> str:
    """Two Markdown tables: signed error against o200k, and throughput."""
    counters = list(dict.fromkeys(r["counter"] for r in results))
    kinds = list(dict.fromkeys(r["kind"] for r in results))
    compared = [c for c in counters if c != "o200k_base"]
    timed = [c for c in counters if any(r["mb_per_s"] is not None for r in results if r["counter"] == c)]
    by = {(r["kind"], r["counter"]): r for r in results}
    lines = [
        "| sample | bytes | o200k tokens | " + " | ".join(f"{c} error" for c in compared) + " |",
        "|---|---:|---:|" + "---:|" * len(compared),
    ]
    for kind in kinds:
        first = by[(kind, counters[0])]
        cells = [kind, f"{first['bytes']:,}", f"{first['o200k_tokens']:,}"]
        cells += [f"{by[(kind, c)]['error_pct']:+.1f}%" for c in compared]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "| sample | " + " | ".join(f"{c} MB/s" for c in timed) + " |", "|---|" + "---:|" * len(timed)]
    for kind in kinds:
        lines.append("| " + " | ".join([kind] + [f"{by[(kind, c)]['mb_per_s']:.1f}" for c in timed]) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS, help="directory of samples")
    parser.add_argument("--min-bytes", type=int, default=1_000_000, help="timing input size")
    parser.add_argument("--runs", type=int, default=3, help="timings per counter and sample (best kept)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    try:
        results = measure(args.corpus, min_bytes=args.min_bytes, runs=args.runs)
    except ImportError as exc:
        print(f"error: the o200k reference needs bpe-openai: {exc}", file=sys.stderr)
        return 1
    print(markdown(results))
    misses = [
        r
        for r in results
        if r["counter"] == "heuristic" and r["kind"] != "all samples" and not BAND[0] <= r["error_pct"] <= BAND[1]
    ]
    verdict = (
        "holds" if not misses else "MISSED on " + ", ".join(f"{r['kind']} ({r['error_pct']:+.1f}%)" for r in misses)
    )
    print(f"\nheuristic target [{BAND[0]:+.0f}%, {BAND[1]:+.0f}%] against o200k: {verdict}")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    machine = {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "load_1min": round(load, 2),
        "platform": platform.platform(),
    }
    print(f"machine: {machine['cpus']} CPUs, Python {machine['python']}, 1-minute load {load:.1f}")
    if args.json:
        args.json.write_text(json.dumps({"machine": machine, "results": results}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
