"""Drift and retention on the bundled real transcripts, for the structured and the local-model summarizer.

Each long bundled transcript (``src/contextwarden/data/trajectories``) is replayed in five slices;
after each slice the session is compacted (five successive compactions, a small window). Two arms:

- ``summary-on-summary``: each summary updates the previous one (no re-grounding, no verification,
  so the summarizer's own losses show);
- ``re-ground``: every 2nd summary is rebuilt from the raw events of the log (no verification).

After each compaction we count, in the request the model sees next (pinned block + summary + kept
tail), the facts known at the cut that it no longer shows: constraints, modified files, unresolved
errors. A third run with the library's defaults (verification on) gives the share of accepted
summaries (not rejected and replaced by the structured fallback) and the retention probes of
``contextwarden.replay.probes`` on the request right after each compaction.
"""

from __future__ import annotations

import dataclasses
from importlib import resources
from pathlib import Path

from contextwarden.assemble.manager import ContextManager
from contextwarden.importers import load_transcript
from contextwarden.log.events import Compaction, Event
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
from contextwarden.replay.probes import ProbeTracker
from contextwarden.tokens import HeuristicCounter
from contextwarden.window.state import derive_state
from contextwarden.wire import render_openai_chat

COUNTER = HeuristicCounter()
STEPS = 5
BUNDLED = Path(str(resources.files("contextwarden") / "data" / "trajectories"))
TRANSCRIPTS = sorted([*BUNDLED.glob("swe-agent/*.traj"), BUNDLED / "openhands" / "basic_gui_mode.json"])
AGENT = dataclasses.replace(get_profile("gpt-4o"), name="bench-agent", context_window=32_000, max_output_tokens=1_000)
ARMS: dict[str, CompactionSettings] = {
    "summary-on-summary": CompactionSettings(keep_recent_tokens=300, reground_every=0, reground_after_repair=False,
                                             verify=False),
    "re-ground every 2nd": CompactionSettings(keep_recent_tokens=300, reground_every=2, reground_after_repair=False,
                                              verify=False),
    "defaults (verify on)": CompactionSettings(keep_recent_tokens=300),
}


def local_summarizer(url: str, model: str, window: int) -> LLMSummarizer:
    """The local model, asked for JSON under the server's schema-constrained decoding."""
    profile = dataclasses.replace(get_profile("gpt-4o"), name=model, context_window=window, max_output_tokens=256)
    return LLMSummarizer(OpenAICompatProvider(url, timeout=900, max_retries=0), model=profile, counter=COUNTER,
                         settings=LLMSummarizerSettings(temperature=0.0, structured_output=True,
                                                        max_output_tokens=256))


def _visible(manager: ContextManager, sid: str) -> tuple[str, dict[str, object]]:
    ctx = manager.build(sid, model=AGENT)
    body = render_openai_chat(ctx)
    text = "\n".join([ctx.system, *(m.text for m in ctx.messages)])
    return " ".join(clean_text(text).split()), body


def _lost(events: list[Event], first_kept_seq: int, visible: str) -> dict[str, int]:
    state = derive_state(e for e in events if e.seq < first_kept_seq)
    errors = [error_quote(e) or e for e, _ in current_errors(state)]
    return {
        "constraints": sum(" ".join(c.split()) not in visible for c in state.constraints),
        "files": sum(f not in visible for f in state.files_modified),
        "errors": sum(" ".join(e.split()) not in visible for e in errors),
        "known": len(state.constraints) + len(state.files_modified) + len(errors),
    }


def run_transcript(path: Path, summarizer: Summarizer, settings: CompactionSettings) -> dict[str, object]:
    """Five compactions of one transcript; per step: facts lost; overall: accepted share and probe retention."""
    events = list(load_transcript(path).events)
    store = MemoryStore()
    sid = store.create_session("real").id
    manager = ContextManager(store, counter=COUNTER,
                             compactor=WindowCompactor(store, summarizer=summarizer, counter=COUNTER,
                                                       settings=settings))
    tracker = ProbeTracker()
    size = max(len(events) // STEPS, 1)
    steps: list[dict[str, int]] = []
    accepted = compactions = kept = applicable = 0
    for k in range(STEPS):
        chunk = events[k * size : (k + 1) * size] if k < STEPS - 1 else events[k * size :]
        stored = store.append(sid, chunk, expected_last_seq=store.get_session(sid).last_seq)
        for e in stored:
            tracker.add(e)
        event = compact(manager, sid, model=AGENT)
        if event is None:
            continue
        compactions += 1
        accepted += not event.details.get("fallback")
        visible, body = _visible(manager, sid)
        raw = [e for e in store.read(sid) if not isinstance(e, Compaction)]
        steps.append(_lost(raw, event.first_kept_seq, visible))
        outcome = tracker.check(body)
        kept, applicable = kept + outcome.kept, applicable + outcome.applicable
    return {"transcript": path.name, "compactions": compactions, "accepted": accepted, "steps": steps,
            "probes_kept": kept, "probes_applicable": applicable}


def run_real(summarizers: dict[str, object], *, limit: dict[str, int] | None = None) -> list[dict[str, object]]:
    """Every arm × summarizer × transcript; ``summarizers`` maps a name to a factory of a fresh summarizer."""
    rows: list[dict[str, object]] = []
    for name, make in summarizers.items():
        paths = TRANSCRIPTS[: (limit or {}).get(name, len(TRANSCRIPTS))]
        for arm, settings in ARMS.items():
            runs = [run_transcript(p, make(), settings) for p in paths]  # type: ignore[operator]
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
    kept = sum(int(r["probes_kept"]) for r in runs)  # type: ignore[call-overload]
    applicable = sum(int(r["probes_applicable"]) for r in runs)  # type: ignore[call-overload]
    checked = sum(s["known"] for r in runs for s in r["steps"])  # type: ignore[attr-defined, index]
    return {"summarizer": name, "arm": arm, "transcripts": len(runs), "compactions": compactions,
            "facts_checked": checked,
            **{f"lost@{k + 1}": v for k, v in enumerate(per_step)},
            "accepted": f"{accepted}/{compactions}", "probes": f"{kept}/{applicable}",
            "runs": runs}


def make_structured() -> StructuredSummarizer:
    return StructuredSummarizer(counter=COUNTER)


def local_factory(url: str, model: str, window: int) -> object:
    return lambda: local_summarizer(url, model, window)


__all__ = ["ARMS", "Event", "ModelProfile", "local_factory", "make_structured", "run_real"]
