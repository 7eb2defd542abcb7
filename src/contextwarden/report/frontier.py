"""The tokens-versus-cost frontier in numbers, and as a stand-alone SVG document.

:mod:`.scatter` draws the trade-off; a chart alone does not say how far the default sits from the
frontier. :func:`tradeoff_points` places every strategy of a replay (the report and
``benchmarks/bench_frontier.py`` both use it, so both draw the same frontier); :func:`frontier_table`
lists every point with its ratios to raw, its worst transcript's retention and next-action evidence,
whether it is sufficient, on the Pareto frontier of the sufficient points or its knee, and how far
above the frontier it is (the cost the frontier reaches at the point's tokens or fewer, subtracted
from the point's cost). :func:`charts_document` stacks charts into one SVG file, which is how
``benchmarks/bench_frontier.py`` publishes the figure in ``docs/``.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..replay.results import ReplayResults
from ._tables import table
from .scatter import TradeoffPoint, frontier, knee
from .svg import esc

_CHART_STYLE = (
    ".ct{font:600 14px sans-serif}.tl{font:11px sans-serif;fill:#5b6475}.al{font:12px sans-serif}"
    ".lg{font:12px sans-serif}.grid{stroke:#eceef2}.ln{fill:none;stroke-width:2}"
)
"""The chart classes :mod:`.scatter` uses, for a document outside the HTML report's stylesheet."""


def tradeoff_points(results: ReplayResults, *, default: str = "contextwarden") -> list[TradeoffPoint]:
    """Every strategy that ran, relative to raw (empty without raw): tokens, cost, its worst transcript's probes."""
    ran = [s for s in results.strategies if not s.skipped]
    raw = next((s.figures() for s in ran if s.name == "raw"), None)
    if raw is None or not raw["input_tokens_mean"] or not raw["cost_usd"]:
        return []
    points = []
    for s in ran:
        f = s.figures()
        files = [r.figures() for r in s.per_file]
        points.append(
            TradeoffPoint(
                label=s.name,
                tokens=f["input_tokens_mean"] / raw["input_tokens_mean"],
                cost=f["cost_usd"] / raw["cost_usd"],
                highlight=s.name == default,
                retention=min((r["retention"] for r in files), default=1.0),
                next_action_evidence=min(
                    (r["probe_retention"].get("next_action_evidence", 1.0) for r in files), default=1.0
                ),
            )
        )
    return points


def cost_above_frontier(point: TradeoffPoint, points: Sequence[TradeoffPoint]) -> float:
    """How much more ``point`` costs (× raw) than the cheapest frontier point with no more tokens (0 on it)."""
    reachable = [p.cost for p in frontier(points) if p.tokens <= point.tokens]
    return max(point.cost - min(reachable), 0.0) if reachable else 0.0


def frontier_table(points: Sequence[TradeoffPoint]) -> str:
    """Every point by tokens: ratios to raw, its probes, frontier membership, the knee, the cost above the frontier."""
    on_front = {id(p) for p in frontier(points)}
    best = knee(points)
    rows = []
    for p in sorted(points, key=lambda q: (q.tokens, q.cost)):
        where = "knee" if p is best else "frontier" if id(p) in on_front else p.why_not
        above = cost_above_frontier(p, points)
        rows.append(
            [
                esc(p.label) + (" (default)" if p.highlight else ""),
                f"{p.tokens:.2f}×",
                f"{p.cost:.2f}×",
                f"{p.retention:.3f}",
                f"{p.next_action_evidence:.1%}",
                where,
                f"+{above:.2f}×" if above else "",
            ]
        )
    header = ["strategy", "tokens × raw", "cost × raw", "retention (worst)", "next-action evidence (worst)"]
    return table([*header, "frontier", "cost above the frontier"], rows)


def charts_document(charts: Sequence[str], *, width: int = 760) -> str:
    """One SVG document holding ``charts`` (each an ``<svg>`` of :mod:`.scatter`) stacked top to bottom."""
    y, body = 0, []
    for chart in charts:
        height = int(chart.split('height="', 1)[1].split('"', 1)[0])
        body.append(chart.replace("<svg ", f'<svg y="{y}" ', 1))
        y += height
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{y}">'
        f"<style>{_CHART_STYLE}</style>{''.join(body)}</svg>\n"
    )
