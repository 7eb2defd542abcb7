"""Compaction on the bundled real transcripts: each summary is checked against the events it covers.

Two sets: the long bundled sessions (SWE-agent, OpenHands), compacted whenever their window passes a
small trigger, as an agent would; and the short importer fixtures of ``tests/data/transcripts``
(Claude Code, Codex, OpenHands SDK, mini-SWE-agent: real failing test runs, JSON-wrapped outputs),
too small to compact, summarized directly and verified. Every check reads the events, not the
summarizer's own helpers.
"""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

import pytest

from _agentlog import COUNTER, answer, profile
from _paths import DATA
from contextwarden.assemble.manager import ContextManager
from contextwarden.errors import SummaryFallbackWarning
from contextwarden.importers import load_transcript
from contextwarden.log.events import Compaction, Event, ToolResult
from contextwarden.log.store.memory import MemoryStore
from contextwarden.plan.compaction import (
    CompactionSettings,
    LLMSummarizer,
    StructuredSummarizer,
    SummaryInput,
    SummaryOptions,
    WindowCompactor,
    compact,
    verify_summary,
)
from contextwarden.plan.compaction.serialize import entries_from_events
from contextwarden.plan.compaction.truth import last_step
from contextwarden.testing import ScriptedProvider
from contextwarden.window.policies.normalize import _ANSI
from contextwarden.window.policies.presets import CODING_TOOL_POLICIES
from contextwarden.window.state import derive_state

BUNDLED = Path(str(resources.files("contextwarden") / "data" / "trajectories"))
TRANSCRIPTS = sorted([*BUNDLED.glob("swe-agent/*.traj"), BUNDLED / "openhands" / "basic_gui_mode.json"])
"""The bundled real sessions long enough to compact several times with a small window."""
FIXTURES = sorted(
    p for p in (DATA / "transcripts").glob("*/*") if p.parent.name != "malformed" and p.suffix in (".json", ".jsonl")
)
"""The importers' real-format fixtures: short sessions with failing runs and tool errors."""
ESCAPE = re.compile(r"\x1b|\[[0-9;]{1,8}m")
BANNER = re.compile(r"={4,}|-{5,}|_{5,}")
TRIGGER = 1_500
"""Compact when the window passes this many tokens (small, so each long transcript compacts often)."""


def flat(text: str) -> str:
    return " ".join(_ANSI.sub("", text).split())


def section(summary: str, title: str) -> list[str]:
    m = re.search(rf"^#+ {re.escape(title)}\n(.*?)(?=^#+ |\Z)", summary, re.MULTILINE | re.DOTALL)
    return [ln for ln in (m.group(1) if m else "").splitlines() if ln.strip()]


def stored(path: Path) -> tuple[MemoryStore, list[Event]]:
    store = MemoryStore()
    sid = store.create_session("t").id
    return store, store.append(sid, list(load_transcript(path).events), expected_last_seq=0)


def compacted(path: Path) -> tuple[MemoryStore, list[Compaction]]:
    """The transcript appended event by event, compacted whenever its window passes :data:`TRIGGER`
    (summary-on-summary, no re-grounding, so every summary builds on the one before)."""
    events = list(load_transcript(path).events)
    store = MemoryStore()
    sid = store.create_session("t").id
    settings = CompactionSettings(keep_recent_tokens=300, reground_every=0, reground_after_repair=False)
    compactor = WindowCompactor(
        store, summarizer=StructuredSummarizer(counter=COUNTER), counter=COUNTER, settings=settings
    )
    manager = ContextManager(store, counter=COUNTER, compactor=compactor)
    out: list[Compaction] = []
    for e in events:
        store.append(sid, [e], expected_last_seq=store.get_session(sid).last_seq)
        if manager.projection(sid).total >= TRIGGER:
            event = compact(manager, sid, model=profile(8_000))
            if event is not None:
                out.append(event)
    return store, out


def check_true_to(summary: str, covered: list[Event]) -> None:
    """Assert that ``summary`` (anchors pinned) says only what the ``covered`` events support."""
    state = derive_state(covered, policies=CODING_TOOL_POLICIES)
    results = {e.seq: e for e in covered if isinstance(e, ToolResult)}
    text = flat(summary)
    assert not ESCAPE.search(summary), "no terminal escapes reach a summary"
    goal = flat(state.goal)
    if len(goal.split()) >= 4:
        assert goal not in text and goal[:60] not in text, "the pinned goal is referred to, not repeated"
    for c in state.constraints:
        assert len(c.split()) < 4 or flat(c) not in text, f"the pinned constraint {c!r} is not repeated"
    for f in state.files_modified:
        assert f in summary, f"modified file {f} is named"
    for line in section(summary, "Done"):
        for n in re.findall(r"\(#(\d+)\)", line):
            result = results.get(int(n))
            assert result is not None and not (result.is_error or result.exit_code not in (None, 0)), line
    for line in section(summary, "Failed Attempts"):
        m = re.search(r"failed at #(\d+): (.*?)(?: \(later passed\))?$", line)
        if m is None:
            continue
        result = results[int(m.group(1))]
        assert result.is_error or result.exit_code not in (None, 0), f"{line}: that result did not fail"
        for quote in m.group(2).split(" | "):
            assert not BANNER.search(quote), f"{line}: a banner, not a failure line"
            assert flat(quote.rstrip("…"))[:60] in flat(result.output).replace('\\"', '"'), f"{line}: not quoted"
    for line in section(summary, "Test Status"):
        m = re.match(r"- `([^`]+)` (passed|FAILED)", line)
        if m is None:
            continue
        runs = [t for t in state.tests if t.target == m.group(1)]
        assert runs and runs[-1].passed == (m.group(2) == "passed"), f"{line}: not the latest run"
        if m.group(2) == "FAILED":
            later = [t for t in state.tests if t.passed and t.seq > runs[-1].seq and t.target.endswith(":all")]
            assert not later, f"{line}: a later passing run of the whole suite closed it"
    step = last_step(entries_from_events(covered))
    if step is not None and step.finished and len(step.text) >= 12:
        progress = flat(" ".join(section(summary, "In Progress") + section(summary, "Next Steps")))
        assert flat(step.text)[:80] not in progress, "a finished step is not in progress"
    for line in section(summary, "In Progress"):
        m = re.search(r"finished (?:successfully|with a failure) at #(\d+)", line)
        assert m is None or int(m.group(1)) in results, f"{line}: it finished with a result"


def test_the_bundled_transcripts_are_found() -> None:
    assert len(TRANSCRIPTS) >= 7 and all(p.is_file() for p in TRANSCRIPTS), TRANSCRIPTS
    assert len(FIXTURES) >= 12, FIXTURES


@pytest.mark.parametrize("path", TRANSCRIPTS, ids=lambda p: p.name)
def test_each_summary_is_true_to_the_events_it_covers(path: Path) -> None:
    store, events = compacted(path)
    assert events, f"{path.name}: nothing was compacted"
    raw = [e for e in store.read("t") if not isinstance(e, Compaction)]
    for event in events:
        check_true_to(event.summary, [e for e in raw if e.seq < event.first_kept_seq])
        assert event.verification["ok"] is True, (path.name, event.verification)


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_summary_of_each_importer_fixture_is_true_to_its_events(path: Path) -> None:
    _, events = stored(path)
    state = derive_state(events, policies=CODING_TOOL_POLICIES)
    entries = tuple(entries_from_events(events))
    data = SummaryInput(entries=entries, state=state, anchors_pinned=True)
    summary = StructuredSummarizer(counter=COUNTER).summarize(data, options=SummaryOptions()).text
    verified, check = verify_summary(summary, state=state, anchors=state, kept_text="", entries=entries)
    assert check.ok, check.to_dict()
    check_true_to(verified, events)


def test_a_json_wrapped_failure_is_quoted_by_its_failure_line() -> None:
    _, events = stored(DATA / "transcripts" / "codex" / "rollout.jsonl")
    state = derive_state(events, policies=CODING_TOOL_POLICIES)
    data = SummaryInput(entries=tuple(entries_from_events(events)), state=state, anchors_pinned=True)
    summary = StructuredSummarizer(counter=COUNTER).summarize(data, options=SummaryOptions()).text
    blocked = " ".join(section(summary, "Blocked"))
    assert "FAILED tests/test_dates.py::test_week_bounds - ValueError: invalid weekday" in blocked
    assert '{"output"' not in summary, "the JSON wrapper of the tool output is not quoted"
    assert "`shell make test` failed" in " ".join(section(summary, "Failed Attempts")), "the argv is the label"


def test_a_rejected_model_summary_falls_back_and_is_never_persisted() -> None:
    path = next(p for p in TRANSCRIPTS if p.name.startswith("ctf__i_got_id"))
    events = list(load_transcript(path).events)
    rejected = "## Goal\nREJECTED-MARKER: no other heading, so validation refuses this summary"
    provider = ScriptedProvider([answer(rejected)] * 40)
    summarizer = LLMSummarizer(provider, model=profile(100_000, name="cheap"), counter=COUNTER)
    store = MemoryStore()
    sid = store.create_session("t").id
    compactor = WindowCompactor(
        store, summarizer=summarizer, counter=COUNTER, settings=CompactionSettings(keep_recent_tokens=300)
    )
    manager = ContextManager(store, counter=COUNTER, compactor=compactor)
    made: list[Compaction] = []
    with pytest.warns(SummaryFallbackWarning, match="missing_sections"):  # every fallback is warned of
        for e in events:
            store.append(sid, [e], expected_last_seq=store.get_session(sid).last_seq)
            if manager.projection(sid).total >= TRIGGER:
                event = compact(manager, sid, model=profile(8_000))
                made += [event] if event is not None else []
    assert len(made) >= 5 and provider.requests, "the model was asked every time"
    raw = [e for e in store.read("t") if not isinstance(e, Compaction)]
    for event in made:
        assert event.summarizer == "structured" and "missing_sections" in event.details["fallback"][0]
        assert event.summarizer_input_tokens > 0, "the rejected attempt's tokens are still accounted"
        check_true_to(event.summary, [e for e in raw if e.seq < event.first_kept_seq])
    assert all("REJECTED-MARKER" not in repr(e) for e in store.read("t")), "a rejected summary is never stored"
