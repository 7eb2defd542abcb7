"""The real CLIs through the proxy: Claude Code, Codex and Gemini CLI on the long task, direct, observe and manage.

Each CLI (installed by ``scripts/clis.sh``; the binaries from ``CONTEXTWARDEN_CLAUDE_BIN`` and
``CONTEXTWARDEN_CODEX_BIN``) runs the conformance task (:mod:`contextwarden.proxy.agenttask`)
against the strict scripted upstream in each arm, and the table shows per CLI and arm: whether the
task finished, fall-backs, upstream errors, window events and their causes, forwarded tokens and
the stand-in's bill against direct, and the proxy's added latency p50/p99 (the ledger's
``added_ms``). The ``recall`` arm is ``manage`` with ``contextwarden mcp`` configured in the client:
``recall_ok`` says whether a read the proxy masked came back byte for byte through the client.
``gemini-cli`` runs its own form of the task (:mod:`contextwarden.proxy.agentgemini`) in the same arms.

    while read -r l; do export "$l"; done < <(bash scripts/clis.sh)
    python benchmarks/bench_clis.py [--clients claude-code,codex,gemini-cli] [--arms direct,manage,recall] [--json]
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

from contextwarden.log.events import ToolResult
from contextwarden.proxy import agentcli, agentgemini
from contextwarden.proxy.agentscript import mcp_answer
from contextwarden.proxy.agenttask import make_repo, repo_state
from contextwarden.proxy.app import Proxy
from contextwarden.proxy.conformance import (
    ARMS,
    RECALL_ARM,
    ArmResult,
    cause,
    cause_kind,
    prefix_breaks,
    run_arm,
    uncovered_supersessions,
    unexplained_breaks,
)
from contextwarden.proxy.serve import BackgroundServer
from contextwarden.proxy.settings import ProxySettings


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
    if result.arm == RECALL_ARM:
        calls = result.agent.recall_calls
        original = result.first_output(result.agent.recall_of)
        answer = mcp_answer(result.first_output(calls[0][0]) or "") if calls else ""
        out["recall_ok"] = bool(calls and original and answer == original == result.agent.recalled_as_seen())
    if direct is not None:
        base_tokens = sum(r.usage.input_tokens for r in direct.task_requests() if r.usage is not None)
        out["tokens_vs_direct"] = round(forwarded / base_tokens, 3) if base_tokens else None
        out["bill_vs_direct"] = round(bill / direct.bill_usd(), 3) if direct.bill_usd() else None
    return out


def gemini_row(binary: str, arm: str, workdir: Path, direct: dict[str, Any] | None) -> dict[str, Any]:
    """One row for Gemini CLI on its form of the task: ``direct``, ``observe``, ``manage`` or ``recall``.

    Through the proxy the CLI has ``contextwarden mcp`` configured; in ``recall`` (``manage`` otherwise)
    the agent recalls the first output shown as a placeholder, by line ranges that stay under the
    CLI's own cut, and ``recall_ok`` says whether the pieces the CLI sent back are that output.
    """
    repo = make_repo(workdir / "repo")
    agent = agentgemini.GeminiTaskAgent(agentgemini.task_commands(), recall=arm == RECALL_ARM)
    upstream = agentgemini.GeminiUpstream(agent)
    rows: list[Any] = []
    events: list[Any] = []
    logged: dict[str, str] = {}
    prompt = "fix the off-by-one in engine.py total()"
    with BackgroundServer(upstream.app) as up:
        if arm == "direct":
            home = agentgemini.home(workdir / "home")
            run = agentgemini.run(binary, repo, home, up.url, "gemini-conformance-key", prompt)
        else:
            mode = "manage" if arm == RECALL_ARM else arm
            settings = ProxySettings(mode=mode, gemini_upstream=up.url, store_url=str(workdir / "store.db"))  # type: ignore[arg-type]
            proxy = Proxy(settings)
            try:
                with BackgroundServer(proxy.app) as px:
                    home = agentgemini.home(workdir / "home", settings.store_url)
                    run = agentgemini.run(binary, repo, home, px.url, "gemini-conformance-key", prompt)
                    proxy.settle()
                rows = proxy.pipeline.ledger.rows()
                history = [e for s in proxy.store.list_sessions() for e in proxy.store.read(s.id)]
                events = [e for e in history if e.is_window_event]
                logged = {e.id: e.output for e in history if isinstance(e, ToolResult)}
            finally:
                proxy.close()
    main = upstream.main_requests()
    bodies = [json.loads(r.body) for r in main]
    state = repo_state(repo)
    forwarded = sum(r.usage.input_tokens for r in main if r.usage is not None)
    bill = sum(r.usage.cost_usd for r in upstream.received if r.usage is not None)
    added = [row.added_ms for row in rows]
    causes = Counter(cause_kind(e) for e in events)
    unexplained = [
        k
        for k in agentgemini.breaks(bodies)
        if not any(main[k - 1].at <= e.created_at <= main[k].at for e in events if cause(e))
    ]
    issued = set(agent.issued)
    out: dict[str, Any] = {
        "client": "gemini-cli",
        "arm": arm,
        "finished": run.returncode == 0 and state["fixed"] and state["clean"],
        "requests": len(bodies),
        "fallbacks": sum(row.outcome == "fallback" for row in rows),
        "upstream_errors": sum(r.status != 200 for r in upstream.received),
        "window_events": sum(causes.values()),
        "causes": dict(causes),
        "prefix_breaks": len(agentgemini.breaks(bodies)),
        "unexplained_breaks": len(unexplained) if arm != "direct" else 0,
        "signatures_intact": all(
            set(agentgemini.signatures(b)) - issued <= {agentgemini.SKIP_SIGNATURE}
            and agent.issued[k] in agentgemini.signatures(b)
            for k, b in enumerate(bodies[1:])
        ),
        "forwarded_tokens": forwarded,
        "bill_usd": round(bill, 4),
        "added_ms_p50": round(statistics.median(added), 2) if added else None,
        "added_ms_p99": round(_pct(added, 0.99), 2) if added else None,
    }
    if arm == RECALL_ARM:
        # the output as the proxy logged it from the CLI's request (what is forwarded may be cut)
        original = logged.get(str(agent.recall_calls[0]["id"]), "") if agent.recall_calls else ""
        wrapped = agentgemini.as_wrapped(original)
        out["recall_ok"] = bool(agent.pieces and original and agent.recalled_as_sent() == wrapped)
    if direct is not None:
        out["tokens_vs_direct"] = (
            round(forwarded / direct["forwarded_tokens"], 3) if direct["forwarded_tokens"] else None
        )
        out["bill_vs_direct"] = round(bill / direct["bill_usd"], 3) if direct["bill_usd"] else None
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
        if client == "gemini-cli":
            gemini = agentgemini.binary()
            if gemini is None:
                print(
                    "gemini-cli: not installed (CONTEXTWARDEN_GEMINI_BIN unset); run scripts/clis.sh", file=sys.stderr
                )
                continue
            base = None
            for arm in args.arms.split(","):
                with tempfile.TemporaryDirectory(prefix=f"cw-gemini-{arm}-") as tmp:
                    rows.append(gemini_row(gemini, arm, Path(tmp), base))
                    base = rows[-1] if arm == "direct" else base
                    print(json.dumps(rows[-1]), file=sys.stderr)
            continue
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
        "recall_ok",
        "signatures_intact",
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
