from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path

import pytest

from _paths import ROOT
from contextwarden.cli import main
from contextwarden.errors import UsageError
from contextwarden.importers import load_transcript
from contextwarden.log.events import AssistantMessage, Event, ToolCall, ToolResult, UsageReport, UserMessage
from contextwarden.log.store import SQLiteStore
from contextwarden.models import get_profile
from contextwarden.replay import (
    BlockMeter,
    ContextWardenStrategy,
    MaskLastN,
    ReplayInput,
    ReplaySettings,
    load_inputs,
    offline_optimum,
    parse_strategy,
    replay,
    schedule_cost,
)
from contextwarden.replay.strategies import MASK_TEMPLATE
from contextwarden.tokens import HeuristicCounter

DATA = ROOT / "src" / "contextwarden" / "data" / "trajectories"
PYDICOM = DATA / "swe-agent" / "gpt4__pydicom-1458.traj"
OPENHANDS = DATA / "openhands" / "basic_gui_mode.json"
COUNTER = HeuristicCounter()
FAST = ReplaySettings(model="gpt-4o", optimum=False)


def coding_session(turns: int, lines: int) -> tuple[Event, ...]:
    """A task, then ``turns`` reads of distinct files with ``lines`` lines of output each."""
    events: list[Event] = [UserMessage(text="Fix the failing import in the package. Do not modify the tests.")]
    for n in range(turns):
        call = ToolCall(id=f"c{n}", name="bash", arguments={"command": f"cat src/module_{n}.py"})
        events.append(AssistantMessage(text=f"Reading module {n}.", tool_calls=(call,)))
        output = "\n".join(f"def function_{n}_{k}(value): return value * {k} + {n}" for k in range(lines))
        events.append(ToolResult(call_id=f"c{n}", tool_name="bash", output=output, exit_code=0))
    events.append(AssistantMessage(text="Done."))
    return tuple(events)


def one(events: tuple[Event, ...], name: str = "synthetic") -> list[ReplayInput]:
    return [ReplayInput(name=name, source=name, events=events)]


def test_raw_replay_of_a_real_trajectory_only_grows_and_matches_its_usage_totals() -> None:
    results = replay(load_inputs([str(PYDICOM)]), ["raw"], settings=FAST)
    figures = results.strategy("raw").figures()
    assert figures["requests"] == 12
    assert figures["prefix_breaks"] == 0 and figures["window_events"] == 0
    assert figures["retention"] == 1.0
    assert figures["cache_hit_ratio"] > 0.5
    usage = results.strategy("raw").per_file[0].usage
    assert usage is not None and usage.source == "totals"
    assert abs(usage.input_error) < 0.05  # the run's own token totals, within 5%
    assert results.counter in ("o200k_base", "heuristic")


def test_dumped_requests_recompute_every_figure(tmp_path: Path) -> None:
    results = replay(
        load_inputs([str(PYDICOM)]), ["raw", "mask-last-n:2"], settings=FAST, counter=COUNTER, dump_dir=tmp_path
    )
    meter = BlockMeter(COUNTER)
    for strategy in results.strategies:
        lines = (tmp_path / strategy.name / "gpt4__pydicom-1458.jsonl").read_text().splitlines()
        records = strategy.per_file[0].requests
        assert len(lines) == len(records)
        for line, record in zip(lines, records, strict=True):
            body = json.loads(line)
            assert set(body) >= {"model", "messages"}
            assert sum(b.tokens for b in meter.blocks(body)) == record.input_tokens
            assert sum(record.sections.values()) == record.input_tokens


def test_mask_last_n_masks_every_result_but_the_last_n_at_every_request(tmp_path: Path) -> None:
    events = coding_session(turns=6, lines=20)
    results = replay(one(events), [MaskLastN(2)], settings=FAST, counter=COUNTER, dump_dir=tmp_path)
    last = json.loads((tmp_path / "mask-last-n:2" / "synthetic.jsonl").read_text().splitlines()[-1])
    tool_texts = [m["content"] for m in last["messages"] if m["role"] == "tool"]
    assert tool_texts[:4] == [MASK_TEMPLATE.format(lines=20)] * 4
    assert all(t.startswith("def function_") for t in tool_texts[4:])
    figures = results.strategies[0].figures()
    assert figures["prefix_breaks"] == figures["window_events"] == 4  # every request from the 4th result on
    assert figures["retention"] == 1.0


def test_contextwarden_makes_a_window_event_for_every_prefix_break() -> None:
    events = coding_session(turns=40, lines=220)
    results = replay(one(events), ["raw", "contextwarden"], settings=ReplaySettings(model="gpt-4o"), counter=COUNTER)
    raw, warden = (s.per_file[0] for s in results.strategies)
    assert any(r.window_event for r in warden.requests)
    for record in warden.requests:
        assert record.prefix_break == record.window_event, record.index
        assert all(record.probes.values()), record.probes
    ratio = warden.figures()["input_tokens_mean"] / raw.figures()["input_tokens_mean"]
    assert ratio < 0.8
    assert warden.optimum_cost_usd is not None and warden.optimum_cost_usd < raw.figures()["cost_usd"]


def test_what_if_options_drive_the_builder_and_keep_every_probe() -> None:
    events = coding_session(turns=60, lines=220)
    names = [
        "contextwarden:keep=3,min-batch-share=0",
        # The share is of what a batch could still change; in a session of reads nearly all of that is
        # reducible, so only a share near 1 holds batches back here.
        "contextwarden:keep=3,min-batch-share=0.95",
        "contextwarden:keep=3,min-batch-share=0.95,frontier",
    ]
    results = replay(
        one(events), names, settings=ReplaySettings(model="claude-sonnet-4-5", optimum=False), counter=COUNTER
    )
    plain, share, frontier = (s.figures() for s in results.strategies)
    assert share["window_events"] < plain["window_events"]  # fewer, bigger batches
    assert frontier["window_events"] == share["window_events"]  # same batches...
    # ...and a batch re-writes only from the frontier (equal when the builder places that breakpoint itself)
    assert frontier["cost_usd"] <= share["cost_usd"]
    assert plain["retention"] == share["retention"] == frontier["retention"] == 1.0


@pytest.mark.parametrize("model", ["gpt-4o", "claude-sonnet-4-5"])
def test_offline_optimum_is_the_cheapest_schedule(model: str) -> None:
    events = coding_session(turns=7, lines=300)
    settings = ReplaySettings(model=model)
    profile, meter = get_profile(model), BlockMeter(COUNTER)
    best = offline_optimum(events, profile=profile, meter=meter, settings=settings)
    assert best.requests == 8
    costs = {
        points: schedule_cost(events, points, profile=profile, meter=meter, settings=settings)
        for k in range(8)
        for points in itertools.combinations(range(1, 8), k)
    }
    assert best.cost_usd == pytest.approx(costs[best.batch_points], rel=1e-9)
    assert best.cost_usd <= min(costs.values()) * (1 + 1e-9)
    assert best.never_cost_usd == pytest.approx(costs[()], rel=1e-9)


def test_session_ids_replay_like_files(tmp_path: Path) -> None:
    store = SQLiteStore(str(tmp_path / "s.db"))
    transcript = load_transcript(PYDICOM)
    store.create_session("pydicom", metadata={"transcript": transcript.metadata})
    store.append("pydicom", list(transcript.events), expected_last_seq=0)
    from_store = replay(load_inputs(["pydicom"], store=store), ["raw"], settings=FAST, counter=COUNTER)
    store.close()
    from_file = replay(load_inputs([str(PYDICOM)]), ["raw"], settings=FAST, counter=COUNTER)
    assert from_store.strategy("raw").figures() == from_file.strategy("raw").figures()
    with pytest.raises(UsageError, match="neither a file nor a session"):
        load_inputs(["no-such-thing"], store=SQLiteStore(str(tmp_path / "t.db")))


def test_real_usage_and_timestamps_are_used_when_the_transcript_has_them() -> None:
    inputs = load_inputs([str(OPENHANDS)])
    results = replay(inputs, ["raw"], settings=FAST, counter=COUNTER)
    result = results.strategy("raw").per_file[0]
    reports = [e for e in inputs[0].events if isinstance(e, UsageReport)]
    assert result.usage is not None and result.usage.source == "per-call"
    assert result.usage.requests == len(reports)
    assert result.usage.real_input_tokens == sum(r.input_tokens for r in reports)
    times = [r.at for r in result.requests]
    assert times == sorted(times) and any(t % 30 for t in times)  # real seconds, not the 30 s grid
    assert sum(1 for r in result.requests if r.usage_input_tokens is not None) == len(reports)


def test_strategy_names_and_variants() -> None:
    assert parse_strategy("raw").name == "raw"
    assert parse_strategy("mask-last-n") == MaskLastN(10)
    variant = parse_strategy("contextwarden:keep=3,no-cache-aware,min-batch=4096,trigger=50000")
    assert isinstance(variant, ContextWardenStrategy)
    assert variant.name == "contextwarden:keep=3,no-cache-aware,min-batch=4096,trigger=50000"
    planner = variant.policy.planner
    assert (planner.keep_recent_tool_results, planner.cache_aware, planner.min_batch_tokens) == (3, False, 4096)
    assert variant.policy.budget.trigger_tokens == 50_000
    assert parse_strategy("contextwarden:no-compact").policy.compact is False
    what_if = parse_strategy("contextwarden:keep=3,min-batch-share=0.4,frontier")
    assert isinstance(what_if, ContextWardenStrategy) and what_if.frontier_breakpoint
    assert what_if.policy.planner.min_batch_share == 0.4
    with pytest.raises(UsageError, match="unknown contextwarden option"):
        parse_strategy("contextwarden:fast")
    with pytest.raises(UsageError, match="unknown strategy"):
        parse_strategy("summarize-everything")


def test_cli_replay_prints_the_table_and_writes_json_and_dumps(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, dumps = tmp_path / "r.json", tmp_path / "dump"
    main(
        [
            "replay",
            str(PYDICOM),
            str(OPENHANDS),
            "--strategy",
            "raw",
            "--strategy",
            "mask-last-n:3",
            "--model",
            "gpt-4o",
            "--output",
            str(out),
            "--per-request",
            "--dump-requests",
            str(dumps),
        ]
    )
    printed = capsys.readouterr().out
    assert "mask-last-n:3" in printed and "retention" in printed
    doc = json.loads(out.read_text())
    assert doc["files"] == [str(PYDICOM), str(OPENHANDS)]
    assert doc["model"] == "gpt-4o" and doc["counter"]
    raw = doc["strategies"][0]
    for key in (
        "requests",
        "input_tokens_total",
        "input_tokens_mean",
        "input_tokens_peak",
        "cost_usd",
        "cache_hit_ratio",
        "prefix_breaks",
        "window_events",
        "summarizer_tokens",
        "retention",
        "overflows",
    ):
        assert key in raw and key in raw["per_file"][0]
    assert raw["requests"] == sum(f["requests"] for f in raw["per_file"])
    assert len(raw["per_file"][0]["per_request"]) == raw["per_file"][0]["requests"]
    assert (dumps / "mask-last-n:3" / "basic_gui_mode.jsonl").exists()


def test_cli_replay_rejects_an_unknown_strategy(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["replay", str(PYDICOM), "--strategy", "nope", "--no-optimum"])
    assert done.value.code == 1
    assert "unknown strategy 'nope'" in capsys.readouterr().err


def test_cli_replay_writes_the_html_report(tmp_path: Path) -> None:
    report = tmp_path / "out" / "replay.html"
    main(["replay", str(PYDICOM), "--strategy", "raw", "--no-optimum", "--report", str(report)])
    assert "<html" in report.read_text(encoding="utf-8").lower()


def test_cli_replay_report_without_the_report_module_is_one_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "contextwarden.report", None)  # what a missing module looks like
    with pytest.raises(SystemExit) as done:
        main(["replay", str(PYDICOM), "--no-optimum", "--report", str(tmp_path / "r.html")])
    assert done.value.code == 1
    assert "--report needs contextwarden.report" in capsys.readouterr().err
    assert not (tmp_path / "r.html").exists()


def test_the_plain_history_keeps_a_user_messages_opaque_items() -> None:
    from contextwarden.log.events import OpaquePart, UserMessage
    from contextwarden.replay.strategies import History

    item = OpaquePart(format="openai_responses", raw_json='{"type":"compaction","encrypted_content":"x"}', position=1)
    history = History()
    history.add(UserMessage(text="go on", opaque=(item,)))
    assert history.messages[0].opaque == (item,)  # sent back to its provider, and paid for, as the raw agent does


def _reread_session(same: bool) -> tuple[Event, ...]:
    """Six module reads, then the first module read again: unchanged (``same``) or with one digit changed."""
    events = list(coding_session(turns=6, lines=300)[:-1])
    first = events[2]
    assert isinstance(first, ToolResult)
    output = first.output if same else first.output.replace("* 1 +", "* 7 +", 1)
    call = ToolCall(id="c_again", name="bash", arguments={"command": "cat src/module_0.py"})
    events += [AssistantMessage(text="Reading module 0 again.", tool_calls=(call,))]
    events += [
        ToolResult(call_id="c_again", tool_name="bash", output=output, exit_code=0),
        AssistantMessage(text="Done."),
    ]
    return tuple(events)


@pytest.mark.parametrize("model", ["gpt-4o", "claude-sonnet-4-5"])
def test_offline_optimum_sends_an_unchanged_reread_as_a_reference(model: str) -> None:
    settings = ReplaySettings(model=model)
    profile, meter = get_profile(model), BlockMeter(COUNTER)
    events = _reread_session(True)
    same = offline_optimum(events, profile=profile, meter=meter, settings=settings)
    changed = offline_optimum(_reread_session(False), profile=profile, meter=meter, settings=settings)
    assert same.never_cost_usd < changed.never_cost_usd * 0.97  # the re-read costs a line, not 300
    costs = {
        points: schedule_cost(events, points, profile=profile, meter=meter, settings=settings)
        for k in range(8)
        for points in itertools.combinations(range(1, 8), k)
    }
    assert same.cost_usd == pytest.approx(costs[same.batch_points], rel=1e-9)
    assert same.cost_usd <= min(costs.values()) * (1 + 1e-9)
    # a batch that masked the twin before the re-read came shows the re-read in full: it costs what it would unchanged
    late = schedule_cost(events, (6,), profile=profile, meter=meter, settings=settings)
    late_changed = schedule_cost(_reread_session(False), (6,), profile=profile, meter=meter, settings=settings)
    assert late == pytest.approx(late_changed, rel=0.01)
