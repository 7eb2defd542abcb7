"""The frontier in numbers (next to the chart in the replay report) and the stacked SVG document."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from contextwarden.log.events import AssistantMessage, Event, ToolCall, ToolResult, UserMessage
from contextwarden.replay import ReplayInput, ReplaySettings, replay
from contextwarden.report import render_report
from contextwarden.report.frontier import charts_document, cost_above_frontier, frontier_table, tradeoff_points
from contextwarden.report.scatter import TradeoffPoint, tradeoff_chart

POINTS = [
    TradeoffPoint(label="raw", tokens=1.0, cost=1.0),
    TradeoffPoint(label="mask <all>", tokens=0.4, cost=1.7),
    TradeoffPoint(label="cw", tokens=0.5, cost=0.76, highlight=True),
    TradeoffPoint(label="keep=1", tokens=0.48, cost=0.72),
    TradeoffPoint(label="keep=10", tokens=0.57, cost=0.80),
]


def test_cost_above_the_frontier_is_zero_on_it_and_the_gap_elsewhere() -> None:
    by_label = {p.label: p for p in POINTS}
    assert cost_above_frontier(by_label["keep=1"], POINTS) == 0.0
    assert cost_above_frontier(by_label["cw"], POINTS) == pytest.approx(0.04)  # keep=1 is cheaper with fewer tokens
    assert cost_above_frontier(by_label["keep=10"], POINTS) == pytest.approx(0.08)
    assert cost_above_frontier(by_label["mask <all>"], POINTS) == 0.0  # nothing has fewer tokens


def test_the_table_marks_the_knee_the_default_and_escapes_labels() -> None:
    html = frontier_table(POINTS)
    rows = html.split("<tr>")[2:]
    assert rows[0].split("<td>", 2)[1].startswith("mask &lt;all&gt;</td>")  # sorted by tokens
    keep1 = next(r for r in rows if "keep=1<" in r)
    assert "knee" in keep1
    default = next(r for r in rows if "(default)" in r)
    assert "+0.04×" in default and "knee" not in default


def test_the_stacked_document_is_one_valid_svg_with_every_chart() -> None:
    charts = [tradeoff_chart(POINTS, title=f"model {n}") for n in range(2)]
    doc = charts_document(charts)
    root = ET.fromstring(doc)
    nested = [e for e in root if e.tag.endswith("svg")]
    assert len(nested) == 2 and nested[1].get("y") == nested[0].get("height")
    assert int(root.get("height", "0")) == 2 * int(nested[0].get("height", "0"))


def _session() -> tuple[Event, ...]:
    events: list[Event] = [UserMessage(text="Read every module and fix the bug.")]
    for n in range(12):
        call = ToolCall(id=f"c{n}", name="bash", arguments={"command": f"cat src/m{n}.py"})
        events.append(AssistantMessage(text=f"Reading {n}.", tool_calls=(call,)))
        events.append(ToolResult(call_id=f"c{n}", tool_name="bash", output=f"def f{n}(): pass\n" * 400, exit_code=0))
    events.append(AssistantMessage(text="Done."))
    return tuple(events)


def test_the_replay_report_lists_the_frontier_under_its_chart() -> None:
    results = replay(
        [ReplayInput(name="s", source="s", events=_session())],
        ["raw", "mask-last-n:2", "contextwarden"],
        settings=ReplaySettings(model="gpt-5", optimum=False),
    )
    html = render_report(results)
    chart_at = html.index('data-chart="tradeoff"')
    table_at = html.index("cost above the frontier")
    assert chart_at < table_at
    assert "contextwarden (default)" in html[table_at - 2000 : table_at + 4000]


def _rerun_session() -> tuple[Event, ...]:
    """A script read first, eight large reads, then the script run: masking the oldest loses its read."""
    events: list[Event] = [UserMessage(text="Make repro.py pass.")]
    read = ToolCall(id="r", name="bash", arguments={"command": "cat repro.py"})
    events += [AssistantMessage(text="Reading.", tool_calls=(read,))]
    events += [ToolResult(call_id="r", tool_name="bash", output="assert parse('x') == 1\n", exit_code=0)]
    for n in range(8):
        call = ToolCall(id=f"c{n}", name="bash", arguments={"command": f"cat src/m{n}.py"})
        events.append(AssistantMessage(text=f"Reading {n}.", tool_calls=(call,)))
        events.append(ToolResult(call_id=f"c{n}", tool_name="bash", output=f"def f{n}(): pass\n" * 300, exit_code=0))
    run = ToolCall(id="x", name="bash", arguments={"command": "python repro.py"})
    events += [AssistantMessage(text="Running.", tool_calls=(run,))]
    return tuple(events)


def test_points_carry_their_worst_transcripts_evidence_and_the_table_says_who_is_insufficient() -> None:
    inputs = [ReplayInput(name=n, source=n, events=e) for n, e in (("rerun", _rerun_session()), ("s", _session()))]
    results = replay(inputs, ["raw", "mask-last-n:2"], settings=ReplaySettings(model="gpt-5", optimum=False))
    points = {p.label: p for p in tradeoff_points(results, default="raw")}
    masked = results.strategy("mask-last-n:2")
    worst = min(f.figures()["probe_retention"].get("next_action_evidence", 1.0) for f in masked.per_file)
    assert points["mask-last-n:2"].next_action_evidence == worst < 0.99
    assert not points["mask-last-n:2"].sufficient and points["raw"].sufficient and points["raw"].highlight
    rows = frontier_table(list(points.values())).split("<tr>")[2:]
    assert "insufficient" in next(r for r in rows if "mask-last-n:2" in r)
    assert "knee" in next(r for r in rows if ">raw (default)<" in r)
