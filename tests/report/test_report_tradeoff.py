"""The tokens-versus-cost chart: frontier, knee, escaping, and its place in the replay report."""

from __future__ import annotations

from contextwarden.log.events import AssistantMessage, Event, ToolCall, ToolResult, UserMessage
from contextwarden.replay import ReplayInput, ReplaySettings, replay
from contextwarden.report import render_report
from contextwarden.report.scatter import TradeoffPoint, frontier, knee, tradeoff_chart


def test_frontier_keeps_only_points_no_other_beats_on_both() -> None:
    points = [
        TradeoffPoint(label="raw", tokens=1.0, cost=1.0),
        TradeoffPoint(label="mask", tokens=0.4, cost=1.7),
        TradeoffPoint(label="a", tokens=0.5, cost=0.74),
        TradeoffPoint(label="b", tokens=0.6, cost=0.8),  # beaten by a on both
        TradeoffPoint(label="c", tokens=0.45, cost=0.73),
    ]
    assert [p.label for p in frontier(points)] == ["mask", "c"]
    best = knee(points)
    assert best is not None and best.label == "c"
    assert knee([]) is None


def test_a_point_that_forgets_what_the_next_action_needs_is_off_the_frontier() -> None:
    points = [
        TradeoffPoint(label="mask", tokens=0.4, cost=1.7),
        TradeoffPoint(label="a", tokens=0.5, cost=0.74),
        TradeoffPoint(label="c", tokens=0.45, cost=0.73, next_action_evidence=0.98),
        TradeoffPoint(label="d", tokens=0.44, cost=0.72, retention=0.99),
    ]
    assert [p.sufficient for p in points] == [True, True, False, False]
    assert [p.label for p in frontier(points)] == ["mask", "a"]
    best = knee(points)
    assert best is not None and best.label == "a"
    svg = tradeoff_chart(points, title="t")
    hollow = [c for c in svg.split("<circle")[1:] if 'fill="none" stroke="#1f77b4"' in c]
    assert len(hollow) == 2 and all("insufficient" in c for c in hollow)
    assert knee(points[2:]) is None  # nothing sufficient: no knee


def test_chart_escapes_labels_and_marks_the_knee() -> None:
    points = [
        TradeoffPoint(label="<script>x</script>", tokens=0.5, cost=0.7, highlight=True),
        TradeoffPoint(label="raw", tokens=1.0, cost=1.0),
    ]
    svg = tradeoff_chart(points, title="t & u")
    assert "<script>" not in svg and "&lt;script&gt;" in svg and "t &amp; u" in svg
    assert "(knee)" in svg and svg.count("<circle") == 3  # two points and the knee's ring


def session() -> tuple[Event, ...]:
    events: list[Event] = [UserMessage(text="Read every module and fix the bug.")]
    for n in range(12):
        call = ToolCall(id=f"c{n}", name="bash", arguments={"command": f"cat src/m{n}.py"})
        events.append(AssistantMessage(text=f"Reading {n}.", tool_calls=(call,)))
        events.append(ToolResult(call_id=f"c{n}", tool_name="bash", output=f"def f{n}(): pass\n" * 400, exit_code=0))
    events.append(AssistantMessage(text="Done."))
    return tuple(events)


def test_the_report_plots_tokens_against_cost_for_every_strategy() -> None:
    results = replay(
        [ReplayInput(name="s", source="s", events=session())],
        ["raw", "mask-last-n:2", "contextwarden"],
        settings=ReplaySettings(model="gpt-5", optimum=False),
    )
    html = render_report(results)
    assert 'data-chart="tradeoff"' in html and "Tokens against cost" in html
    assert "The knee of the frontier" in html
    only_raw = replay(
        [ReplayInput(name="s", source="s", events=session())], ["raw"], settings=ReplaySettings(optimum=False)
    )
    assert 'data-chart="tradeoff"' not in render_report(only_raw)


def test_a_point_that_pays_on_short_sessions_is_off_the_frontier() -> None:
    points = [
        TradeoffPoint(label="a", tokens=0.5, cost=0.74, short_session_cost=1.0),
        TradeoffPoint(label="cheap-long", tokens=0.45, cost=0.73, short_session_cost=1.08),
        TradeoffPoint(label="unmeasured", tokens=0.6, cost=0.8),
    ]
    assert [p.admissible for p in points] == [True, False, True]
    assert points[1].sufficient and points[1].why_not == "pays on short sessions"
    assert [p.label for p in frontier(points)] == ["a"]
    best = knee(points)
    assert best is not None and best.label == "a"
    hollow = [c for c in tradeoff_chart(points, title="t").split("<circle")[1:] if 'fill="none" stroke="#1f77b4"' in c]
    assert len(hollow) == 1 and "pays on short sessions: up to 1.08" in hollow[0]
    same_but_measured_at_raw = [points[0], TradeoffPoint(label="cheap-long", tokens=0.45, cost=0.73)]
    best = knee(same_but_measured_at_raw)
    assert best is not None and best.label == "cheap-long"
