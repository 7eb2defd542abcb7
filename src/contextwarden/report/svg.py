"""Charts drawn as inline SVG by our own code: line charts and stacked-area charts.

No JavaScript and no external files: the report must open offline and under a Content-Security-Policy
that forbids scripts. Hover details come from SVG ``<title>`` elements, which browsers show as native
tooltips. Every text that reaches the markup (labels, titles, legend entries) goes through
:func:`html.escape`, because labels can come from transcripts (file names, strategy names).

Colors are chosen by the caller from fixed palettes, never from data; they are escaped anyway.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

Formatter = Callable[[float], str]
"""Turns an axis or tooltip value into text."""

WIDTH = 760
"""Drawing width in SVG user units (the SVG scales to its container)."""
HEIGHT = 300
"""Drawing height in SVG user units."""
_LEFT, _RIGHT, _TOP, _BOTTOM = 72, 16, 34, 62

STRATEGY_COLORS: tuple[str, ...] = (
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf", "#7f7f7f",
    "#bcbd22",
)  # fmt: skip
"""One color per strategy, in the order strategies were asked for."""
SECTION_COLORS: dict[str, str] = {
    "system": "#4c72b0",
    "tools": "#8172b2",
    "instructions": "#64b5cd",
    "pinned": "#ccb974",
    "summary": "#dd8452",
    "conversation": "#55a868",
    "tool_output": "#c44e52",
}
"""One color per request section (see :data:`contextwarden.context.SECTIONS`)."""


def esc(value: object) -> str:
    """Escape any value for HTML/SVG text and double- or single-quoted attributes."""
    return html.escape(str(value), quote=True)


def fmt_int(value: float) -> str:
    """12345.6 → ``12,346``."""
    return f"{round(value):,}"


def fmt_tokens(value: float) -> str:
    """An axis label for token counts: ``850``, ``12.5K``, ``1.2M``."""
    size = abs(value)
    if size >= 1_000_000:
        return f"{value / 1_000_000:.1f}M".replace(".0M", "M")
    if size >= 1_000:
        return f"{value / 1_000:.1f}K".replace(".0K", "K")
    return fmt_int(value)


def fmt_usd(value: float) -> str:
    """Dollars to three significant digits, at least cents: ``$0.0123``, ``$0.50``, ``$1,234.50``."""
    if value == 0:
        return "$0"
    if abs(value) >= 10:
        return f"${value:,.2f}"
    digits = min(max(2, 2 - math.floor(math.log10(abs(value)))), 6)
    text = f"{value:.{digits}f}"
    whole, _, frac = text.partition(".")
    frac = frac.rstrip("0").ljust(2, "0")
    return f"${whole}.{frac}"


@dataclass(frozen=True, kw_only=True)
class Series:
    """One line (or one band of a stacked chart): a value per request."""

    label: str
    """Legend text (escaped when drawn)."""
    values: tuple[float, ...]
    """One value per request, in order."""
    color: str
    """Stroke/fill color from one of the palettes."""
    markers: tuple[int, ...] = ()
    """Request indices to mark on the line (window events)."""
    marker_notes: tuple[str, ...] = ()
    """Tooltip text for each marker, aligned with ``markers`` (escaped)."""
    dashed: bool = False
    """Draw the line dashed."""


def nice_ticks(top: float, count: int = 5) -> list[float]:
    """Round tick values from 0 to at least ``top`` (1-2-2.5-5 steps)."""
    if top <= 0:
        return [0.0, 1.0]
    raw = top / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    ticks = [0.0]
    while ticks[-1] < top - 1e-9:
        ticks.append(ticks[-1] + step)
    return ticks


def _x_ticks(n: int) -> list[int]:
    """Request numbers (1-based) to label on the x axis."""
    if n <= 1:
        return [1]
    step = max(1, int(nice_ticks(float(n - 1), 8)[1]))
    ticks = list(range(1, n + 1, step))
    return ticks if ticks[-1] == n or n - ticks[-1] < step / 2 else [*ticks, n]


class _Frame:
    """Maps request index and value to SVG coordinates."""

    def __init__(self, n: int, top: float, width: int, height: int) -> None:
        self.n = max(n, 1)
        self.ticks = nice_ticks(top)
        self.top = self.ticks[-1]
        self.width, self.height = width, height
        self.plot_w = width - _LEFT - _RIGHT
        self.plot_h = height - _TOP - _BOTTOM

    def x(self, index: int) -> float:
        if self.n == 1:
            return _LEFT + self.plot_w / 2
        return _LEFT + self.plot_w * index / (self.n - 1)

    def y(self, value: float) -> float:
        return _TOP + self.plot_h * (1 - (value / self.top if self.top else 0.0))

    def axes(self, *, title: str, y_label: str, x_label: str, y_format: Formatter) -> list[str]:
        out = [f'<text class="ct" x="{_LEFT}" y="20">{esc(title)}</text>']
        for tick in self.ticks:
            y = self.y(tick)
            out.append(f'<line class="grid" x1="{_LEFT}" x2="{self.width - _RIGHT}" y1="{y:.1f}" y2="{y:.1f}"/>')
            out.append(
                f'<text class="tl" x="{_LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{esc(y_format(tick))}</text>'
            )
        base = self.y(0)
        out.append(f'<line class="axis" x1="{_LEFT}" x2="{self.width - _RIGHT}" y1="{base:.1f}" y2="{base:.1f}"/>')
        out.append(f'<line class="axis" x1="{_LEFT}" x2="{_LEFT}" y1="{_TOP}" y2="{base:.1f}"/>')
        for req in _x_ticks(self.n):
            x = self.x(req - 1)
            out.append(f'<line class="axis" x1="{x:.1f}" x2="{x:.1f}" y1="{base:.1f}" y2="{base + 4:.1f}"/>')
            out.append(f'<text class="tl" x="{x:.1f}" y="{base + 16:.1f}" text-anchor="middle">{req}</text>')
        out.append(
            f'<text class="al" x="{_LEFT + self.plot_w / 2:.1f}" y="{base + 32:.1f}" '
            f'text-anchor="middle">{esc(x_label)}</text>'
        )
        out.append(
            f'<text class="al" transform="translate(14 {_TOP + self.plot_h / 2:.1f}) rotate(-90)" '
            f'text-anchor="middle">{esc(y_label)}</text>'
        )
        return out


def _legend(entries: Sequence[tuple[str, str, bool]], width: int, height: int) -> list[str]:
    """Legend swatches along the bottom edge, wrapping when they do not fit."""
    out: list[str] = []
    x, y = float(_LEFT), float(height - 10)
    for label, color, dashed in entries:
        text = label if len(label) <= 40 else label[:39] + "…"
        span = 26 + 7 * len(text)
        if x + span > width - _RIGHT and x > _LEFT:
            x, y = float(_LEFT), y + 14
        dash = ' stroke-dasharray="5 3"' if dashed else ""
        out.append(
            f'<line x1="{x:.1f}" x2="{x + 18:.1f}" y1="{y - 4:.1f}" y2="{y - 4:.1f}" stroke="{esc(color)}" '
            f'stroke-width="3"{dash}/>'
        )
        out.append(f'<text class="lg" x="{x + 22:.1f}" y="{y:.1f}">{esc(text)}</text>')
        x += span + 14
    return out


def _svg(body: Sequence[str], *, width: int, height: int, label: str, kind: str, legend_rows: int) -> str:
    total_h = height + 14 * max(legend_rows - 1, 0)
    return (
        f'<svg class="chart" data-chart="{esc(kind)}" role="img" aria-label="{esc(label)}" '
        f'xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {total_h}" width="{width}" height="{total_h}">'
        f"<title>{esc(label)}</title>{''.join(body)}</svg>"
    )


def _legend_rows(entries: Sequence[tuple[str, str, bool]], width: int) -> int:
    rows, x = 1, float(_LEFT)
    for label, _, _ in entries:
        span = 26 + 7 * min(len(label), 40)
        if x + span > width - _RIGHT and x > _LEFT:
            rows, x = rows + 1, float(_LEFT)
        x += span + 14
    return rows


def _empty(width: int, height: int) -> str:
    return f'<text class="al" x="{width / 2:.0f}" y="{height / 2:.0f}" text-anchor="middle">no requests</text>'


def _points(frame: _Frame, values: Sequence[float]) -> str:
    return " ".join(f"{frame.x(i):.1f},{frame.y(v):.1f}" for i, v in enumerate(values))


def _hover_points(frame: _Frame, series: Series, y_format: Formatter, limit: int = 400) -> list[str]:
    """Invisible hit targets carrying per-request tooltips (thinned on very long runs)."""
    n = len(series.values)
    step = max(1, math.ceil(n / limit))
    out: list[str] = []
    for i in range(0, n, step):
        v = series.values[i]
        out.append(
            f'<circle class="hit" cx="{frame.x(i):.1f}" cy="{frame.y(v):.1f}" r="4">'
            f"<title>{esc(series.label)}: request {i + 1}: {esc(y_format(v))}</title></circle>"
        )
    return out


def _markers(frame: _Frame, series: Series) -> list[str]:
    out: list[str] = []
    for k, i in enumerate(series.markers):
        if not 0 <= i < len(series.values):
            continue
        x, y = frame.x(i), frame.y(series.values[i])
        note = series.marker_notes[k] if k < len(series.marker_notes) else "window event"
        path = f"M{x - 5:.1f},{y - 11:.1f} L{x + 5:.1f},{y - 11:.1f} L{x:.1f},{y - 3:.1f} Z"
        out.append(
            f'<path class="we" d="{path}" fill="{esc(series.color)}">'
            f"<title>{esc(series.label)}: request {i + 1}: {esc(note)}</title></path>"
        )
    return out


def line_chart(
    series: Sequence[Series],
    *,
    title: str,
    y_label: str,
    x_label: str = "request",
    y_format: Formatter = fmt_tokens,
    tooltip_format: Formatter = fmt_int,
    kind: str = "line",
    width: int = WIDTH,
    height: int = HEIGHT,
) -> str:
    """A chart with one line per series over the requests; markers flag window events."""
    n = max((len(s.values) for s in series), default=0)
    top = max((max(s.values, default=0.0) for s in series), default=0.0)
    frame = _Frame(n, top, width, height)
    body = frame.axes(title=title, y_label=y_label, x_label=x_label, y_format=y_format)
    if n == 0:
        body.append(_empty(width, height))
    for s in series:
        if not s.values:
            continue
        dash = ' stroke-dasharray="6 4"' if s.dashed else ""
        if len(s.values) == 1:
            body.append(f'<circle cx="{frame.x(0):.1f}" cy="{frame.y(s.values[0]):.1f}" r="3" fill="{esc(s.color)}"/>')
        else:
            body.append(f'<polyline class="ln" points="{_points(frame, s.values)}" stroke="{esc(s.color)}"{dash}/>')
        body.extend(_markers(frame, s))
        body.extend(_hover_points(frame, s, tooltip_format))
    entries = [(s.label, s.color, s.dashed) for s in series]
    rows = _legend_rows(entries, width)
    body.extend(_legend(entries, width, height))
    return _svg(body, width=width, height=height, label=title, kind=kind, legend_rows=rows)


def stacked_area_chart(
    bands: Sequence[Series],
    *,
    title: str,
    y_label: str,
    overlay: Series | None = None,
    events: Sequence[tuple[int, str]] = (),
    x_label: str = "request",
    y_format: Formatter = fmt_tokens,
    kind: str = "stacked",
    width: int = WIDTH,
    height: int = HEIGHT,
) -> str:
    """Bands stacked bottom to top per request, an optional overlay line, and vertical event lines.

    ``events`` are (request index, tooltip) pairs drawn as dashed verticals (window events).
    """
    n = max((len(b.values) for b in bands), default=0)
    totals = [sum(b.values[i] if i < len(b.values) else 0.0 for b in bands) for i in range(n)]
    top = max([*totals, *(overlay.values if overlay else ())], default=0.0)
    frame = _Frame(n, top, width, height)
    body = frame.axes(title=title, y_label=y_label, x_label=x_label, y_format=y_format)
    if n == 0:
        body.append(_empty(width, height))
    below = [0.0] * n
    for band in bands:
        above = [below[i] + (band.values[i] if i < len(band.values) else 0.0) for i in range(n)]
        if n and any(band.values):
            body.append(_band(frame, below, above, band))
        below = above
    for index, note in events:
        if 0 <= index < n:
            x = frame.x(index)
            body.append(
                f'<line class="ev" x1="{x:.1f}" x2="{x:.1f}" y1="{_TOP}" y2="{frame.y(0):.1f}">'
                f"<title>request {index + 1}: {esc(note)}</title></line>"
            )
    for i in range(0, n, max(1, math.ceil(n / 400))):
        parts = "; ".join(f"{b.label} {fmt_int(b.values[i])}" for b in bands if i < len(b.values) and b.values[i])
        body.append(
            f'<rect class="hit" x="{frame.x(i) - 3:.1f}" y="{_TOP}" width="6" height="{frame.plot_h:.1f}">'
            f"<title>request {i + 1}: {fmt_int(totals[i])} tokens ({esc(parts)})</title></rect>"
        )
    entries = [(b.label, b.color, False) for b in bands]
    if overlay is not None and overlay.values:
        body.append(
            f'<polyline class="ln" points="{_points(frame, overlay.values)}" stroke="{esc(overlay.color)}" '
            f'stroke-dasharray="6 4"/>'
        )
        entries.append((overlay.label, overlay.color, True))
    if events:
        entries.append(("window event", "#333333", True))
    rows = _legend_rows(entries, width)
    body.extend(_legend(entries, width, height))
    return _svg(body, width=width, height=height, label=title, kind=kind, legend_rows=rows)


def _band(frame: _Frame, below: Sequence[float], above: Sequence[float], band: Series) -> str:
    n = len(above)
    if n == 1:
        x = frame.x(0)
        y0, y1 = frame.y(below[0]), frame.y(above[0])
        return (
            f'<rect x="{x - 12:.1f}" y="{y1:.1f}" width="24" height="{max(y0 - y1, 0):.1f}" '
            f'fill="{esc(band.color)}" class="band"/>'
        )
    upper = [f"{frame.x(i):.1f},{frame.y(above[i]):.1f}" for i in range(n)]
    lower = [f"{frame.x(i):.1f},{frame.y(below[i]):.1f}" for i in reversed(range(n))]
    return f'<polygon class="band" points="{" ".join(upper + lower)}" fill="{esc(band.color)}"/>'
