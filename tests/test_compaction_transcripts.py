"""Compaction on the bundled real transcripts: each summary is checked against the events it covers."""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

import pytest

from _agentlog import COUNTER, profile
from contextwarden.assemble.manager import ContextManager
from contextwarden.importers import load_transcript
from contextwarden.log.events import Compaction
from contextwarden.log.store.memory import MemoryStore
from contextwarden.plan.compaction import CompactionSettings, StructuredSummarizer, WindowCompactor, compact
from contextwarden.plan.compaction.serialize import entries_from_events
from contextwarden.plan.compaction.truth import is_banner, last_step
from contextwarden.window.state import derive_state

BUNDLED = Path(str(resources.files("contextwarden") / "data" / "trajectories"))
TRANSCRIPTS = sorted([*BUNDLED.glob("swe-agent/*.traj"), BUNDLED / "openhands" / "basic_gui_mode.json"])
"""The bundled real sessions long enough to compact several times with a small window."""
ESCAPE = re.compile(r"\x1b|\[[0-9;]{1,8}m")


def section(summary: str, title: str) -> list[str]:
    m = re.search(rf"^#+ {re.escape(title)}\n(.*?)(?=^#+ |\Z)", summary, re.MULTILINE | re.DOTALL)
    return [ln for ln in (m.group(1) if m else "").splitlines() if ln.strip()]


def compacted(path: Path) -> tuple[MemoryStore, list[Compaction]]:
    """The transcript appended in four slices, compacted after each (summary-on-summary, no re-grounding)."""
    events = list(load_transcript(path).events)
    store = MemoryStore()
    sid = store.create_session("t").id
    settings = CompactionSettings(keep_recent_tokens=300, reground_every=0, reground_after_repair=False)
    compactor = WindowCompactor(
        store, summarizer=StructuredSummarizer(counter=COUNTER), counter=COUNTER, settings=settings
    )
    manager = ContextManager(store, counter=COUNTER, compactor=compactor)
    out: list[Compaction] = []
    step = max(len(events) // 4, 1)
    for start in range(0, len(events), step):
        store.append(sid, events[start : start + step], expected_last_seq=store.get_session(sid).last_seq)
        event = compact(manager, sid, model=profile(8_000))
        if event is not None:
            out.append(event)
    return store, out


def test_the_bundled_transcripts_are_found() -> None:
    assert len(TRANSCRIPTS) >= 7 and all(p.is_file() for p in TRANSCRIPTS), TRANSCRIPTS


@pytest.mark.parametrize("path", TRANSCRIPTS, ids=lambda p: p.name)
def test_each_summary_is_true_to_the_events_it_covers(path: Path) -> None:
    store, events = compacted(path)
    assert events, f"{path.name}: nothing was compacted"
    raw = [e for e in store.read("t") if not isinstance(e, Compaction)]
    for event in events:
        covered = [e for e in raw if e.seq < event.first_kept_seq]
        state = derive_state(covered)
        summary = event.summary
        assert not ESCAPE.search(summary), "no terminal escapes reach a summary"
        for f in state.files_modified:
            assert f in summary, f"modified file {f} is named"
        assert state.goal.strip() not in summary or len(state.goal.split()) < 4, "the pinned goal is not repeated"
        for line in section(summary, "Failed Attempts"):
            quote = line.partition(": ")[2]
            assert not quote or not is_banner(quote.split(" | ")[0]), line
        step = last_step(entries_from_events(covered))
        if step is not None and step.finished and len(step.text) >= 12:
            progress = " ".join(section(summary, "In Progress") + section(summary, "Next Steps"))
            assert " ".join(step.text.split())[:80] not in " ".join(progress.split()), (
                "a finished step is not in progress"
            )
        assert event.verification["ok"] is True, (path.name, event.verification)
