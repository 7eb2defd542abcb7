"""Summaries that tell the truth, on real long sessions: per summarizer, what it wrote and what held.

Each session (mini-swe-agent with Gemini 3 Pro on SWE-bench Verified, ``/work/shared/data`` or the five
gzip copies in ``tests/data/long-sessions``) is replayed event by event with a 10,000-token agent window
and the library's default compaction settings, building before every model call as an agent would (the
recorded usage reports are left out: they are the real agent's 1M-token window). Per summarizer:

- **compactions**, **accepted** (the summarizer's own summary kept, no fallback to the structured one),
  and the rejection reasons;
- **model statements** checked and dropped before the summary was accepted (JSON-schema mode), and the
  **statements verification checked** and had to drop or correct in the persisted summaries;
- an **audit** of every persisted summary, independent of the library's checks: each Done / Failed
  line must name the call whose result is the event it points at, with that outcome (**wrong labels**),
  and each Test Status line must be a run that ran tests, with that verdict (**wrong test statuses**);
- **probes** after each compaction (``contextwarden.replay.probes``: task, constraints, latest tool
  result, evidence...) and **next-action evidence** (the next assistant turn's inputs are visible);
- **seconds per summary** and **per re-ground** (one ``summarize`` call; re-grounds read the raw log);
- builds that raised ``BudgetExceededError`` and builds that had to cut to fit.

    python benchmarks/bench_summaries.py [--sessions N] [--local-url URL --local-model NAME
        --local-window 2048 --local-sessions N] [--json out.json]
"""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import json
import re
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from contextwarden.assemble.manager import ContextManager
from contextwarden.errors import BudgetExceededError
from contextwarden.importers import load_transcript
from contextwarden.log.events import AssistantMessage, Compaction, Event, ToolCall, ToolResult, UsageReport
from contextwarden.log.store.memory import MemoryStore
from contextwarden.models import get_profile
from contextwarden.plan.compaction import (
    LLMSummarizer,
    LLMSummarizerSettings,
    StructuredSummarizer,
    SummaryInput,
    SummaryOptions,
    SummaryResult,
    WindowCompactor,
)
from contextwarden.plan.compaction._base import Summarizer
from contextwarden.providers import OpenAICompatProvider
from contextwarden.replay.probes import RETENTION_PROBES, ProbeTracker
from contextwarden.tokens import HeuristicCounter
from contextwarden.wire import render_openai_chat

SHARED = Path("/work/shared/data/mini-swe-agent-gemini3/trajs")
BUNDLED = Path(__file__).resolve().parent.parent / "tests" / "data" / "long-sessions"
NAMED = (
    "django__django-13933",
    "matplotlib__matplotlib-26208",
    "sympy__sympy-16597",
    "pytest-dev__pytest-7982",
    "scikit-learn__scikit-learn-10908",
)
"""The five sessions the summaries were first found wrong on."""
AGENT = dataclasses.replace(get_profile("gpt-4o"), name="agent", context_window=10_000, max_output_tokens=1_000)
COUNTER = HeuristicCounter()
DONE = re.compile(r"\[x\] `(.+?)` \(#(\d+)\)")
FAILED = re.compile(r"^- `(.+?)` failed at #(\d+)")
TEST = re.compile(r"^- `([^`]+)` (passed|FAILED)\b.* at #(\d+)$")
STATEMENT_CHECKS = ("wrong_labels", "wrong_outcomes", "wrong_test_status", "untrue_statements")


class Timed:
    """A summarizer wrapper that times every summary, re-grounds apart."""

    def __init__(self, inner: Summarizer) -> None:
        self.inner = inner
        self.name = inner.name
        self.seconds: dict[str, list[float]] = {"summary": [], "reground": []}
        self.notes: list[str] = []

    def summarize(self, data: SummaryInput, *, options: SummaryOptions) -> SummaryResult:
        started = time.perf_counter()
        try:
            result = self.inner.summarize(data, options=options)
        finally:
            self.seconds["reground" if data.reground else "summary"].append(time.perf_counter() - started)
        self.notes += result.notes
        return result


def session_names(count: int) -> list[str]:
    """The five named sessions, then the next longest of the shared set, ``count`` in all."""
    names = list(NAMED)
    if count > len(names) and SHARED.is_dir():
        sizes = sorted(SHARED.glob("*.traj.json"), key=lambda p: -p.stat().st_size)
        names += [p.name.removesuffix(".traj.json") for p in sizes if p.name.removesuffix(".traj.json") not in names]
    return names[:count]


def load(name: str, tmp: Path) -> list[Event]:
    """A session's events without its recorded usage reports."""
    path = SHARED / f"{name}.traj.json"
    if not path.exists():
        path = tmp / f"{name}.traj.json"
        path.write_bytes(gzip.decompress((BUNDLED / f"{name}.traj.json.gz").read_bytes()))
    return [e for e in load_transcript(path).events if not isinstance(e, UsageReport)]


def _failed(result: ToolResult) -> bool:
    body = re.sub(r"</?(?:returncode|output)>|(?<=<returncode>)-?\d+", "", result.output).strip()
    return (result.is_error or result.exit_code not in (None, 0)) and not (result.exit_code == 1 and not body)


def _same(label: str, command: str) -> bool:
    """Whether a label (cut or not) is the start of ``tool command``, or of the command alone."""
    head = " ".join(label.rstrip("…").split())
    first = " ".join(command.strip().splitlines()[0].split()) if command.strip() else ""
    bare = first.split(" ", 1)[-1]
    return bool(head) and (first.startswith(head) or bare.startswith(head))


def audit(summary: str, events: dict[int, Event], calls: dict[str, ToolCall]) -> Counter[str]:
    """Done / Failed / Test Status lines of a summary, checked against the events they name."""
    out: Counter[str] = Counter()
    for line in (raw.strip() for raw in summary.splitlines()):
        for pattern, failed in ((DONE, False), (FAILED, True)):
            m = pattern.search(line)
            if m is None:
                continue
            out["action lines"] += 1
            result = events.get(int(m.group(2)))
            call = calls.get(result.call_id) if isinstance(result, ToolResult) else None
            command = f"{call.name} {call.arguments.get('command', '')}" if call is not None else ""
            if not isinstance(result, ToolResult) or not _same(m.group(1), command) or _failed(result) is not failed:
                out["wrong labels"] += 1
        t = TEST.match(line)
        if t is not None:
            out["test lines"] += 1
            result = events.get(int(t.group(3)))
            call = calls.get(result.call_id) if isinstance(result, ToolResult) else None
            command = str(call.arguments.get("command", "")) if call is not None else ""
            ran = isinstance(result, ToolResult) and "--help" not in command and result.exit_code not in (5, 127)
            ran = ran and isinstance(result, ToolResult) and "No module named pytest" not in result.output
            if not ran or (t.group(2) == "passed" and isinstance(result, ToolResult) and _failed(result)):
                out["wrong test statuses"] += 1
    return out


def run_session(name: str, summarizer: Timed, tmp: Path) -> dict[str, Any]:
    """Replay one session with ``summarizer``; what its compactions wrote and what held."""
    events = load(name, tmp)
    store = MemoryStore()
    sid = store.create_session(name).id
    manager = ContextManager(
        store, counter=COUNTER, compactor=WindowCompactor(store, summarizer=summarizer, counter=COUNTER)
    )
    tracker = ProbeTracker()
    counts: Counter[str] = Counter()
    fallbacks: list[str] = []
    for n, event in enumerate(events):
        stored = store.append(sid, [event], expected_last_seq=store.get_session(sid).last_seq)
        tracker.add(stored[0])
        upcoming = events[n + 1] if n + 1 < len(events) else None
        if not isinstance(upcoming, AssistantMessage):
            continue
        try:
            ctx = manager.build(sid, model=AGENT)
        except BudgetExceededError:
            counts["builds raised"] += 1
            continue
        counts["builds cut to fit"] += any("nothing left to compact" in d.reason for d in ctx.decisions)
        if not any(d.action == "compact" for d in ctx.decisions):
            continue
        outcome = tracker.check(render_openai_chat(ctx), upcoming)
        for kind, ok in outcome.results.items():
            counts[f"{kind}:applicable"] += 1
            counts[f"{kind}:kept"] += ok
    stored_events = store.read(sid)
    by_seq = {e.seq: e for e in stored_events}
    calls = {c.id: c for e in stored_events if isinstance(e, AssistantMessage) for c in e.tool_calls}
    for c in (e for e in stored_events if isinstance(e, Compaction)):
        counts["compactions"] += 1
        counts["accepted"] += not c.details.get("fallback")
        counts["re-grounds"] += bool(c.details.get("reground"))
        for why in c.details.get("fallback") or []:  # type: ignore[union-attr]
            m = re.search(r"rejected \(([a-z_]+)\)", str(why)) or re.search(r"failed \((\w+)", str(why))
            counts[f"rejected:{m.group(1) if m else 'other'}"] += 1
            untrue = re.search(r"(\d+) of (\d+) statements fail the log", str(why))
            if untrue:  # a rejected answer's statements were checked too
                counts["model checked"] += int(untrue.group(2))
                counts["model dropped"] += int(untrue.group(1))
            fallbacks.append(str(why)[:300])
        counts["verification checked"] += int(c.verification.get("statements_checked", 0) or 0)  # type: ignore[call-overload]
        missing = c.verification.get("missing") or {}
        for key in STATEMENT_CHECKS:
            counts[f"verification {key}"] += len(missing.get(key, []))  # type: ignore[union-attr, call-overload]
        counts.update(audit(c.summary, by_seq, calls))
    dropped = [n.removeprefix("dropped ") for n in summarizer.notes if n.startswith("dropped ")]
    for note in summarizer.notes:
        m = re.match(r"model statements: (\d+) checked, (\d+) dropped", note)
        if m:
            counts["model checked"] += int(m.group(1))
            counts["model dropped"] += int(m.group(2))
    summarizer.notes.clear()
    return {"session": name, "counts": dict(counts), "fallbacks": fallbacks, "dropped": dropped}


def row(label: str, runs: list[dict[str, Any]], timed: Timed) -> dict[str, Any]:
    """One table row over every session of a summarizer."""
    c: Counter[str] = Counter()
    for r in runs:
        c.update(r["counts"])
    kept = sum(c[f"{k}:kept"] for k in RETENTION_PROBES)
    applicable = sum(c[f"{k}:applicable"] for k in RETENTION_PROBES)
    rejected = ", ".join(f"{k.split(':', 1)[1]} {v}" for k, v in c.items() if k.startswith("rejected:")) or "-"

    def per(kind: str) -> str:
        xs = timed.seconds[kind]
        return f"{sum(xs) / len(xs):.2f} (n={len(xs)})" if xs else "-"

    return {
        "summarizer": label,
        "sessions": len(runs),
        "compactions": c["compactions"],
        "accepted": f"{c['accepted']}/{c['compactions']}",
        "rejected": rejected,
        "model statements checked/dropped": f"{c['model checked']}/{c['model dropped']}",
        "verification checked": c["verification checked"],
        "verification dropped or corrected": sum(c[f"verification {k}"] for k in STATEMENT_CHECKS),
        "wrong labels": f"{c['wrong labels']}/{c['action lines']}",
        "wrong test statuses": f"{c['wrong test statuses']}/{c['test lines']}",
        "probes kept": f"{kept}/{applicable}",
        "next-action evidence": f"{c['next_action_evidence:kept']}/{c['next_action_evidence:applicable']}",
        "s per summary": per("summary"),
        "s per re-ground": per("reground"),
        "builds raised / cut to fit": f"{c['builds raised']}/{c['builds cut to fit']}",
        "runs": runs,
    }


def local(url: str, model: str, window: int) -> LLMSummarizer:
    """A model behind an OpenAI-compatible server, asked for JSON under schema-constrained decoding."""
    profile = dataclasses.replace(get_profile("gpt-4o"), name=model, context_window=window, max_output_tokens=256)
    return LLMSummarizer(
        OpenAICompatProvider(url, timeout=300, max_retries=0),
        model=profile,
        counter=COUNTER,
        settings=LLMSummarizerSettings(temperature=0.0, structured_output=True, max_output_tokens=256),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=5, help="sessions for the structured summarizer")
    parser.add_argument("--local-url", default="", help="an OpenAI-compatible server with the local model")
    parser.add_argument("--local-model", default="SmolLM2-135M-Instruct")
    parser.add_argument("--local-window", type=int, default=2048)
    parser.add_argument("--local-sessions", type=int, default=5)
    parser.add_argument("--json", default="")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        arms: list[tuple[str, Summarizer, int]] = [("structured", StructuredSummarizer(counter=COUNTER), args.sessions)]
        if args.local_url:
            label = f"{args.local_model}, JSON schema"
            arms.append((label, local(args.local_url, args.local_model, args.local_window), args.local_sessions))
        for label, inner, count in arms:
            timed = Timed(inner)
            runs = []
            for name in session_names(count):
                started = time.perf_counter()
                runs.append(run_session(name, timed, Path(tmp)))
                print(f"  {label} / {name}: {time.perf_counter() - started:.1f}s", file=sys.stderr, flush=True)
            rows.append(row(label, runs, timed))
    keys = [k for k in rows[0] if k != "runs"]
    print("| " + " | ".join(keys) + " |")
    print("|" + "---|" * len(keys))
    for r in rows:
        print("| " + " | ".join(str(r[k]) for k in keys) + " |")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
