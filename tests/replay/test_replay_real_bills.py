"""Bills that match: the transcript's own model, Gemini's implicit cache, real cache resets, a capture's preamble."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from _paths import DATA
from contextwarden.cli import main
from contextwarden.errors import ImportFormatError
from contextwarden.importers import load_transcript
from contextwarden.replay import ReplaySettings, default_counter, load_inputs, replay
from contextwarden.replay.costmodel import Block, CacheSimulator

TRANSCRIPTS = DATA / "transcripts"
GEMINI = sorted((TRANSCRIPTS.parent / "gemini3").glob("*.traj.json"))
FAST = ReplaySettings(optimum=False)
PREAMBLE = (
    "bash: cannot set terminal process group (-1): Inappropriate ioctl for device\nbash: no job control in this shell\n"
)


def test_gemini_sessions_are_priced_by_their_own_model_within_5_percent_of_the_bill() -> None:
    results = replay(load_inputs([str(p) for p in GEMINI]), ["raw"], settings=FAST, counter=default_counter())
    files = results.strategy("raw").per_file
    billed = sum(json.loads(p.read_text())["info"]["model_stats"]["instance_cost"] for p in GEMINI)
    real = sum(f.usage.real_cost_usd for f in files if f.usage)
    predicted = sum(f.usage.predicted_cost_usd for f in files if f.usage)
    assert all(f.usage is not None and f.usage.models == ("gemini-3-pro-preview",) for f in files)
    assert real == pytest.approx(billed, rel=0.001)  # the published prices reproduce the bill
    assert abs(predicted / billed - 1) <= 0.05, (predicted, billed)
    # the implicit cache is not assumed to serve every eligible prefix
    read_real = sum(f.usage.real_cache_read_tokens for f in files if f.usage)
    read_predicted = sum(f.usage.predicted_cache_read_tokens for f in files if f.usage)
    assert abs(read_predicted / read_real - 1) <= 0.06


def test_gemini_implicit_reads_whole_blocks_and_only_a_share_of_them() -> None:
    sim = CacheSimulator(_profile("gemini-3-pro-preview"))
    first = [Block(key="a", tokens=5_000)]
    sim.observe(first, at=0)
    cost = sim.observe([*first, Block(key="b", tokens=300)], at=10)
    assert cost.shared_prefix_tokens == 5_000
    assert cost.cache_read_tokens == int(4_096 * 0.93)  # two 2,048-token blocks, the measured hit share


def _profile(name: str):  # type: ignore[no-untyped-def]
    from contextwarden.models import get_profile

    return get_profile(name)


def test_a_cache_reset_in_the_usage_is_taken_from_it(tmp_path: Path) -> None:
    # The session's second call read nothing from the cache and wrote its whole prefix again.
    lines = (TRANSCRIPTS / "claude-code" / "session.jsonl").read_text().splitlines()
    out = []
    for line in lines:
        record = json.loads(line)
        usage = (record.get("message") or {}).get("usage") if isinstance(record.get("message"), dict) else None
        if usage and usage.get("cache_read_input_tokens") == 17_087:
            usage["cache_creation_input_tokens"] += usage["cache_read_input_tokens"]
            usage["cache_read_input_tokens"] = 0
        out.append(json.dumps(record))
    reset = tmp_path / "reset.jsonl"
    reset.write_text("\n".join(out) + "\n")
    results = replay(load_inputs([str(reset)]), ["raw"], settings=FAST, counter=default_counter())
    raw = results.strategy("raw").per_file[0]
    assert raw.requests[1].cache_read_tokens == 0
    assert raw.usage is not None and abs(raw.usage.cost_error) <= 0.03, raw.usage.to_dict()


def test_leading_non_json_lines_are_skipped_with_a_warning_naming_them(tmp_path: Path) -> None:
    capture = tmp_path / "capture.jsonl"
    capture.write_text(PREAMBLE + (TRANSCRIPTS / "claude-code" / "stream.jsonl").read_text())
    transcript = load_transcript(capture)
    plain = load_transcript(TRANSCRIPTS / "claude-code" / "stream.jsonl")
    assert [e.kind for e in transcript.events] == [e.kind for e in plain.events]
    assert transcript.warnings[0].startswith("skipped 2 leading line(s) that are not JSON")
    assert "line 2: 'bash: no job control in this shell'" in transcript.warnings[0]
    junk = tmp_path / "junk.jsonl"
    junk.write_text(PREAMBLE * 3)
    with pytest.raises(ImportFormatError, match=r"junk\.jsonl: not a JSON or JSON Lines transcript"):
        load_transcript(junk)


def test_replay_prints_import_warnings_and_names_a_family_stand_in(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capture = tmp_path / "capture.jsonl"
    text = (TRANSCRIPTS / "claude-code" / "stream.jsonl").read_text()
    capture.write_text(PREAMBLE + text.replace('"claude-sonnet-4-20250514"', '"claude-sonnet-4-9"'))
    main(["replay", "-q", "--no-optimum", "--strategy", "raw", str(capture)])
    printed = capsys.readouterr()
    assert "warning: " in printed.err and "skipped 2 leading line(s) that are not JSON" in printed.err
    assert "model 'claude-sonnet-4-9' is not in the model table" in " ".join(printed.out.split())


def test_a_json_document_after_a_preamble_is_read_whole(tmp_path: Path) -> None:
    doc = tmp_path / "run.traj.json"
    doc.write_text(PREAMBLE + json.dumps(json.loads(GEMINI[0].read_text()), indent=2))
    transcript = load_transcript(doc)
    assert transcript.format == "mini-swe-agent"
    assert len(transcript.events) == len(load_transcript(GEMINI[0]).events)
    assert transcript.warnings[0].startswith("skipped 2 leading line(s) that are not JSON")
