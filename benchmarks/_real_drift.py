"""Drift and retention on the bundled real transcripts, for the structured and the local-model summarizer.

Each long bundled transcript (``src/contextwarden/data/trajectories``) is replayed event by event; before
each request (the next event is an assistant turn) whose window has passed :data:`TRIGGER` tokens the
session is compacted, as an agent's trigger would, up to five successive compactions. Arms:

- ``summary-on-summary``: each summary updates the previous one (no re-grounding, no verification,
  so the summarizer's own losses show);
- ``re-ground every 2nd``: every 2nd summary is rebuilt from the raw events of the log (no verification);
- ``defaults (verify on)``: the library's defaults (re-ground every 4th and after a repair, verification on).

After each compaction we count, in the request the model sees next (pinned block + summary + kept
tail), the facts known at the cut that it no longer shows: constraints, modified files, unresolved
errors. Every arm also gives the share of accepted summaries (not rejected and replaced by the
structured fallback, with the rejection reasons) and the probes of ``contextwarden.replay.probes`` on
that request: the retention probes, and ``next_action_evidence`` for the assistant turn that follows.
"""

from __future__ import annotations

import dataclasses
import re
import sys
import time
from collections import Counter
from importlib import resources
from pathlib import Path

from contextwarden.assemble.manager import ContextManager
from contextwarden.importers import load_transcript
from contextwarden.log.events import AssistantMessage, Compaction, Event
from contextwarden.log.store.memory import MemoryStore
from contextwarden.models import ModelProfile, get_profile
from contextwarden.plan.compaction import (
    CompactionSettings,
    LLMSummarizer,
    LLMSummarizerSettings,
    StructuredSummarizer,
    WindowCompactor,
    compact,
)
from contextwarden.plan.compaction.summarizers import Summarizer
from contextwarden.plan.compaction.truth import clean_text, current_errors, error_quote
from contextwarden.providers import OpenAICompatProvider
from contextwarden.replay.probes import RETENTION_PROBES, ProbeTracker
from contextwarden.tokens import HeuristicCounter
from contextwarden.window.policies.presets import CODING_TOOL_POLICIES
from contextwarden.window.state import derive_state
from contextwarden.wire import render_openai_chat

COUNTER = HeuristicCounter()
STEPS = 5
TRIGGER = 1_500
"""Compact before a request whose window has passed this many tokens (the bundled sessions are short)."""
BUNDLED = Path(str(resources.files("contextwarden") / "data" / "trajectories"))
TRANSCRIPTS = sorted([*BUNDLED.glob("swe-agent/*.traj"), BUNDLED / "openhands" / "basic_gui_mode.json"])
AGENT = dataclasses.replace(get_profile("gpt-4o"), name="bench-agent", context_window=32_000, max_output_tokens=1_000)
ARMS: dict[str, CompactionSettings] = {
    "summary-on-summary": CompactionSettings(
        keep_recent_tokens=300, reground_every=0, reground_after_repair=False, verify=False
    ),
    "re-ground every 2nd": CompactionSettings(
        keep_recent_tokens=300, reground_every=2, reground_after_repair=False, verify=False
    ),
    "defaults (verify on)": CompactionSettings(keep_recent_tokens=300),
}


def local_summarizer(url: str, model: str, window: int) -> LLMSummarizer:
    """The local model, asked for JSON under the server's schema-constrained decoding."""
    profile = dataclasses.replace(get_profile("gpt-4o"), name=model, context_window=window, max_output_tokens=256)
    return LLMSummarizer(
        OpenAICompatProvider(url, timeout=900, max_retries=0),
        model=profile,
        counter=COUNTER,
        settings=LLMSummarizerSettings(temperature=0.0, structured_output=True, max_output_tokens=256),
    )


def _visible(manager: ContextManager, sid: str) -> tuple[str, dict[str, object]]:
    ctx = manager.build(sid, model=AGENT)
    body = render_openai_chat(ctx)
    text = "\n".join([ctx.system, *(m.text for m in ctx.messages)])
    return " ".join(clean_text(text).split()), body


def _lost(events: list[Event], first_kept_seq: int, visible: str) -> dict[str, int]:
    state = derive_state((e for e in events if e.seq < first_kept_seq), policies=CODING_TOOL_POLICIES)
    errors = [error_quote(e) or e for e, _ in current_errors(state)]
    return {
        "constraints": sum(" ".join(c.split()) not in visible for c in state.constraints),
        "files": sum(f not in visible for f in state.files_modified),
        "errors": sum(" ".join(e.split()) not in visible for e in errors),
        "known": len(state.constraints) + len(state.files_modified) + len(errors),
    }


def _reason(fallback: str) -> str:
    """The rejection code (``summary rejected (format)``) or the error type of a fallback note."""
    m = re.search(r"rejected \(([a-z_]+)\)", fallback) or re.search(r"failed \((\w+)", fallback)
    return m.group(1) if m else "other"


def run_transcript(path: Path, summarizer: Summarizer, settings: CompactionSettings) -> dict[str, object]:
    """Up to five compactions of one transcript; per step: facts lost; overall: acceptance and probes."""
    events = list(load_transcript(path).events)
    store = MemoryStore()
    sid = store.create_session("real").id
    manager = ContextManager(
        store,
        counter=COUNTER,
        compactor=WindowCompactor(store, summarizer=summarizer, counter=COUNTER, settings=settings),
    )
    tracker = ProbeTracker()
    steps: list[dict[str, int]] = []
    accepted = 0
    probes: Counter[str] = Counter()
    rejected: Counter[str] = Counter()
    misses: list[str] = []
    started = time.perf_counter()
    for n, e in enumerate(events):
        stored = store.append(sid, [e], expected_last_seq=store.get_session(sid).last_seq)
        tracker.add(stored[0])
        upcoming = events[n + 1] if n + 1 < len(events) else None
        if not isinstance(upcoming, AssistantMessage) or manager.projection(sid).total < TRIGGER:
            continue
        event = compact(manager, sid, model=AGENT)
        if event is None:
            continue
        fallback = [str(f) for f in event.details.get("fallback", [])]  # type: ignore[union-attr]
        accepted += not fallback
        rejected.update(_reason(f) for f in fallback)
        visible, body = _visible(manager, sid)
        raw = [x for x in store.read(sid) if not isinstance(x, Compaction)]
        steps.append(_lost(raw, event.first_kept_seq, visible))
        outcome = tracker.check(body, upcoming)
        for kind, ok in outcome.results.items():
            probes[f"{kind}:applicable"] += 1
            probes[f"{kind}:kept"] += ok
        misses += [f"{kind} ({what})" for kind, what in outcome.missing.items()]
        if len(steps) == STEPS:
            break
    return {
        "transcript": path.name,
        "compactions": len(steps),
        "accepted": accepted,
        "steps": steps,
        "probes": dict(probes),
        "misses": misses,
        "rejected": dict(rejected),
        "seconds": round(time.perf_counter() - started, 1),
    }


def run_real(
    summarizers: dict[str, object], *, only: dict[str, tuple[str, ...]] | None = None, arms: tuple[str, ...] = ()
) -> list[dict[str, object]]:
    """Every arm × summarizer × transcript; ``summarizers`` maps a name to a factory of a fresh summarizer.

    ``only`` limits a summarizer to the transcripts whose names start with one of its prefixes (a CPU
    model takes minutes a summary); ``arms`` limits the arms of the summarizers ``only`` names.
    """
    rows: list[dict[str, object]] = []
    for name, make in summarizers.items():
        prefixes = (only or {}).get(name, ())
        paths = [p for p in TRANSCRIPTS if not prefixes or p.name.startswith(prefixes)]
        for arm, settings in ARMS.items():
            if prefixes and arms and arm not in arms:
                continue
            runs = []
            for p in paths:
                runs.append(run_transcript(p, make(), settings))  # type: ignore[operator]
                done = runs[-1]
                print(
                    f"  {name} / {arm} / {p.name}: {done['compactions']} compactions, {done['accepted']} accepted, "
                    f"{done['seconds']}s",
                    file=sys.stderr,
                    flush=True,
                )
            rows.append(summarize_runs(name, arm, runs))
    return rows


def summarize_runs(name: str, arm: str, runs: list[dict[str, object]]) -> dict[str, object]:
    """One table row: facts lost at each compaction step (summed over transcripts), acceptance, probes."""
    per_step = []
    for k in range(STEPS):
        at = [r["steps"][k] for r in runs if len(r["steps"]) > k]  # type: ignore[arg-type, index]
        per_step.append("/".join(str(sum(s[key] for s in at)) for key in ("constraints", "files", "errors")))
    compactions = sum(int(r["compactions"]) for r in runs)  # type: ignore[call-overload]
    accepted = sum(int(r["accepted"]) for r in runs)  # type: ignore[call-overload]
    probes: Counter[str] = Counter()
    rejected: Counter[str] = Counter()
    for r in runs:
        probes.update(r["probes"])  # type: ignore[arg-type]
        rejected.update(r["rejected"])  # type: ignore[arg-type]
    kept = sum(probes[f"{k}:kept"] for k in RETENTION_PROBES)
    applicable = sum(probes[f"{k}:applicable"] for k in RETENTION_PROBES)
    checked = sum(s["known"] for r in runs for s in r["steps"])  # type: ignore[attr-defined, index]
    return {
        "summarizer": name,
        "arm": arm,
        "transcripts": len(runs),
        "compactions": compactions,
        "per_transcript": " ".join(str(r["compactions"]) for r in runs),
        "facts_checked": checked,
        **{f"lost@{k + 1}": v for k, v in enumerate(per_step)},
        "accepted": f"{accepted}/{compactions}",
        "rejected": ", ".join(f"{k} {v}" for k, v in rejected.most_common()) or "-",
        "probes": f"{kept}/{applicable}",
        "next_action": f"{probes['next_action_evidence:kept']}/{probes['next_action_evidence:applicable']}",
        "seconds": f"{sum(float(r['seconds']) for r in runs):.1f}",  # type: ignore[arg-type]  # text: the table shows floats < 1 as shares
        "runs": runs,
    }


def make_structured() -> StructuredSummarizer:
    return StructuredSummarizer(counter=COUNTER)


def local_factory(url: str, model: str, window: int) -> object:
    return lambda: local_summarizer(url, model, window)


__all__ = ["ARMS", "Event", "ModelProfile", "local_factory", "make_structured", "run_real"]
