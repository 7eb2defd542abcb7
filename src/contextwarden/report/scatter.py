"""The tokens-versus-cost chart: one point per strategy (or planner setting), relative to raw.

Fewer tokens per request mean less context rot and lower latency; a lower cache-adjusted cost is
the bill. The two pull apart (masking every request cuts tokens and breaks the cache), so the
useful picture is the trade-off: x is mean input tokens per request as a multiple of raw, y the
cost as a multiple of raw, and the Pareto frontier (no other point is lower on both) is drawn as
a line. Its *knee* is the frontier point with the smallest sum of the two ratios.

Fewer tokens bought by forgetting what the agent needs next are no gain, and a saving on long
sessions bought by paying more than raw on short ones is no default either, so only *admissible*
points make the frontier: those that keep every fact probe (retention 1.0) and at least
:data:`SUFFICIENT_EVIDENCE` of the next-action evidence on every transcript,
and, where short sessions were measured, cost at most raw on each of them. The others are
drawn hollow, off the frontier. Inline SVG like :mod:`.svg`: no scripts, every label
escaped, hover details in ``<title>``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .svg import HEIGHT, WIDTH, esc, nice_ticks

_LEFT, _RIGHT, _TOP, _BOTTOM = 64, 24, 34, 48

SUFFICIENT_EVIDENCE = 0.99
"""The share of next-action evidence a point must keep on every transcript to count."""


@dataclass(frozen=True, kw_only=True)
class TradeoffPoint:
    """One strategy's position: tokens and cost relative to raw."""

    label: str
    """The strategy or setting (escaped when drawn)."""
    tokens: float
    """Mean input tokens per request, as a multiple of raw's."""
    cost: float
    """Cache-adjusted cost, as a multiple of raw's."""
    highlight: bool = False
    """Draw it larger (the default setting)."""
    retention: float = 1.0
    """The fact probes' retention on the transcript that kept the fewest (1.0: every probe, every request)."""
    next_action_evidence: float = 1.0
    """The share of next-action evidence kept on the transcript that kept the least."""
    short_session_cost: float | None = None
    """Its cost as a multiple of raw's on the short session where that is highest (None: not measured)."""

    @property
    def sufficient(self) -> bool:
        """Whether it keeps every fact probe and :data:`SUFFICIENT_EVIDENCE` of next-action evidence."""
        return self.retention >= 1.0 and self.next_action_evidence >= SUFFICIENT_EVIDENCE

    @property
    def pays_on_short_sessions(self) -> bool:
        """Whether it costs more than raw on some short session (where those were measured)."""
        return self.short_session_cost is not None and self.short_session_cost > 1.0

    @property
    def admissible(self) -> bool:
        """Sufficient, and never above raw's cost on a short session: the points the frontier is made of."""
        return self.sufficient and not self.pays_on_short_sessions

    @property
    def why_not(self) -> str:
        """Why it is off the frontier, in a few words ("" when admissible)."""
        if not self.sufficient:
            return "insufficient"
        return "pays on short sessions" if self.pays_on_short_sessions else ""


def frontier(points: Sequence[TradeoffPoint]) -> list[TradeoffPoint]:
    """The Pareto-optimal admissible points (none other is at most as high on both and lower on one), by tokens."""
    best: list[TradeoffPoint] = []
    for p in sorted((q for q in points if q.admissible), key=lambda q: (q.tokens, q.cost)):
        if not best or p.cost < best[-1].cost:
            best.append(p)
    return best


def knee(points: Sequence[TradeoffPoint]) -> TradeoffPoint | None:
    """The frontier point with the least ``tokens + cost`` (both relative to raw); None when none is admissible."""
    front = frontier(points)
    return min(front, key=lambda p: p.tokens + p.cost, default=None)


def tradeoff_chart(
    points: Sequence[TradeoffPoint], *, title: str, width: int = WIDTH, height: int = HEIGHT + 60
) -> str:
    """The scatter of ``points`` with raw's position (1, 1) marked, the frontier line and the knee ringed."""
    x_ticks = nice_ticks(max([1.0, *(p.tokens for p in points)]) * 1.05)
    y_ticks = nice_ticks(max([1.0, *(p.cost for p in points)]) * 1.05)
    plot_w, plot_h = width - _LEFT - _RIGHT, height - _TOP - _BOTTOM

    def x(value: float) -> float:
        return _LEFT + plot_w * value / x_ticks[-1]

    def y(value: float) -> float:
        return _TOP + plot_h * (1 - value / y_ticks[-1])

    body = [
        f'<text class="ct" x="{_LEFT}" y="20">{esc(title)}</text>',
        f'<text class="tl" x="{width - _RIGHT}" y="{_TOP - 4}" text-anchor="end">hollow: under '
        f"{SUFFICIENT_EVIDENCE:.0%} next-action evidence, a fact probe lost, or above raw on a short session "
        "(off the frontier)</text>",
    ]
    for tick in y_ticks:
        body.append(f'<line class="grid" x1="{_LEFT}" x2="{width - _RIGHT}" y1="{y(tick):.1f}" y2="{y(tick):.1f}"/>')
        body.append(f'<text class="tl" x="{_LEFT - 6}" y="{y(tick) + 4:.1f}" text-anchor="end">{tick:g}×</text>')
    for tick in x_ticks:
        body.append(f'<line class="grid" x1="{x(tick):.1f}" x2="{x(tick):.1f}" y1="{_TOP}" y2="{y(0):.1f}"/>')
        body.append(f'<text class="tl" x="{x(tick):.1f}" y="{y(0) + 16:.1f}" text-anchor="middle">{tick:g}×</text>')
    body.append(
        f'<text class="al" x="{_LEFT + plot_w / 2:.1f}" y="{height - 8}" text-anchor="middle">'
        "mean input tokens per request × raw</text>"
    )
    body.append(
        f'<text class="al" transform="translate(14 {_TOP + plot_h / 2:.1f}) rotate(-90)" text-anchor="middle">'
        "cache-adjusted cost × raw</text>"
    )
    front = frontier(points)
    if len(front) > 1:
        line = " ".join(f"{x(p.tokens):.1f},{y(p.cost):.1f}" for p in front)
        body.append(f'<polyline class="ln" points="{line}" stroke="#2ca02c" stroke-dasharray="6 4"/>')
    best = knee(points)
    for p in points:
        radius = 6 if p.highlight else 4
        color = "#d62728" if p.highlight else "#1f77b4"
        tip = f"{p.label}: tokens {p.tokens:.2f}× raw, cost {p.cost:.2f}× raw" + (" (knee)" if p is best else "")
        # an inadmissible point is hollow: it forgets what the agent needs, or pays on short sessions
        paint = f'fill="{color}"' if p.admissible else f'fill="none" stroke="{color}" stroke-width="1.5"'
        if not p.sufficient:
            tip += f" (insufficient: retention {p.retention:.3f}, next-action evidence {p.next_action_evidence:.1%})"
        elif p.pays_on_short_sessions:
            tip += f" (pays on short sessions: up to {p.short_session_cost:.2f}× raw's cost)"
        body.append(
            f'<circle cx="{x(p.tokens):.1f}" cy="{y(p.cost):.1f}" r="{radius}" {paint}>'
            f"<title>{esc(tip)}</title></circle>"
        )
        if p.highlight or p is best:
            body.append(
                f'<text class="lg" x="{x(p.tokens) + 8:.1f}" y="{y(p.cost) - 8:.1f}">{esc(p.label[:48])}</text>'
            )
    if best is not None:
        body.append(
            f'<circle cx="{x(best.tokens):.1f}" cy="{y(best.cost):.1f}" r="10" fill="none" stroke="#2ca02c" '
            'stroke-width="2"/>'
        )
    label = f"{title}: {len(points)} point(s)"
    return (
        f'<svg class="chart" data-chart="tradeoff" role="img" aria-label="{esc(label)}" '
        f'xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}" height="{height}">'
        f"<title>{esc(label)}</title>{''.join(body)}</svg>"
    )
