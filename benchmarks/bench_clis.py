"""The real CLIs through the proxy: Claude Code and Codex on the long task, direct, observe and manage.

Each CLI (installed by ``scripts/clis.sh``; the binaries from ``CONTEXTWARDEN_CLAUDE_BIN`` and
``CONTEXTWARDEN_CODEX_BIN``) runs the conformance task (:mod:`contextwarden.proxy.agenttask`)
against the strict scripted upstream in each arm, and the table shows per CLI and arm: whether the
task finished, fall-backs, upstream errors, window events and their causes, forwarded tokens and
the stand-in's bill against direct, and the proxy's added latency p50/p99 (the ledger's
``added_ms``).

    while read -r l; do export "$l"; done < <(bash scripts/clis.sh)
    python benchmarks/bench_clis.py [--clients claude-code,codex] [--arms direct,observe,manage] [--json]
    python benchmarks/bench_clis.py --record tests/data/recorded   # the direct arm's requests as fixtures
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from contextwarden.proxy import agentcli
from contextwarden.proxy.conformance import (
    ARMS,
    ArmResult,
    cause_kind,
    prefix_breaks,
    run_arm,
    uncovered_supersessions,
    unexplained_breaks,
)


def _pct(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def summary(result: ArmResult, direct: ArmResult | None) -> dict[str, Any]:
    """One row of the table."""
    requests = result.task_requests()
    bodies = [json.loads(r.body) for r in requests]
    forwarded = sum(r.usage.input_tokens for r in requests if r.usage is not None)
    bill = result.bill_usd()
    added = [row.added_ms for row in result.rows]
    causes = Counter(cause_kind(e) for e in result.window_events())
    out: dict[str, Any] = {
        "client": result.client,
        "arm": result.arm,
        "finished": result.cli.returncode == 0 and result.state["fixed"] and result.state["clean"],
        "requests": len(requests),
        "fallbacks": sum(row.outcome == "fallback" for row in result.rows),
        "upstream_errors": len(result.upstream.refusals),
        "step_failures": len(result.agent.failures),
        "window_events": sum(causes.values()),
        "causes": dict(causes),
        "prefix_breaks": len(prefix_breaks(result.fmt, bodies)),
        "unexplained_breaks": len(unexplained_breaks(result)) if result.arm != "direct" else 0,
        "uncovered_supersessions": len(uncovered_supersessions(result.fmt, result.sent_task_bodies(), bodies)),
        "forwarded_tokens": forwarded,
        "bill_usd": round(bill, 4),
        "ledger_saving_usd": result.stats.get("total", {}).get("saving_usd"),
        "added_ms_p50": round(statistics.median(added), 2) if added else None,
        "added_ms_p99": round(_pct(added, 0.99), 2) if added else None,
        "seconds": round(result.cli.seconds, 1),
    }
    if direct is not None:
        base_tokens = sum(r.usage.input_tokens for r in direct.task_requests() if r.usage is not None)
        out["tokens_vs_direct"] = round(forwarded / base_tokens, 3) if base_tokens else None
        out["bill_vs_direct"] = round(bill / direct.bill_usd(), 3) if direct.bill_usd() else None
    return out


def record(result: ArmResult, directory: Path) -> Path:
    """Write the requests the upstream received (credentials scrubbed) as ``<client>-<version>.jsonl``."""
    path = directory / f"{result.client}-{result.version}.jsonl"
    with path.open("w", encoding="utf-8") as f:
        for r in result.upstream.received:
            headers = {k: "<scrubbed>" if k in ("x-api-key", "authorization") else v for k, v in r.headers.items()}
            line = {"path": r.path, "status": r.status, "headers": headers, "body": r.body.decode()}
            f.write(json.dumps(line, ensure_ascii=False) + "\n")
    return path


def main() -> int:
    """Run the arms and print the table (or JSON)."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", default="claude-code,codex")
    parser.add_argument("--arms", default=",".join(ARMS))
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--record", type=Path, help="write the direct arm's requests here and stop")
    args = parser.parse_args()
    rows = []
    for client in args.clients.split(","):
        binary = agentcli.binary(client)
        if binary is None:
            print(f"{client}: not installed ({agentcli.BIN_ENV[client]} unset); run scripts/clis.sh", file=sys.stderr)
            continue
        arms = ["direct"] if args.record else args.arms.split(",")
        direct = None
        for arm in arms:
            with tempfile.TemporaryDirectory(prefix=f"cw-{client}-{arm}-") as tmp:
                result = run_arm(client, binary, arm, Path(tmp))
                result.version = agentcli.version(binary)
                if args.record:
                    row = summary(result, None)
                    if not row["finished"] or row["upstream_errors"] or row["step_failures"]:
                        print(f"{client}: the direct run failed, nothing recorded: {row}", file=sys.stderr)
                        return 1
                    print(record(result, args.record))
                    continue
                direct = result if arm == "direct" else direct
                rows.append(summary(result, direct))
                print(json.dumps(rows[-1]), file=sys.stderr)
    if args.record:
        return 0
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    cols = ["client", "arm", "finished", "requests", "fallbacks", "upstream_errors", "window_events"]
    cols += [
        "unexplained_breaks",
        "uncovered_supersessions",
        "forwarded_tokens",
        "tokens_vs_direct",
        "bill_usd",
        "bill_vs_direct",
    ]
    cols += ["added_ms_p50", "added_ms_p99"]
    print("| " + " | ".join(cols) + " | causes |")
    print("|" + "---|" * (len(cols) + 1))
    for row in rows:
        causes = "; ".join(f"{k} x{v}" for k, v in row["causes"].items()) or "-"
        print("| " + " | ".join(str(row.get(c, "-")) for c in cols) + f" | {causes} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
