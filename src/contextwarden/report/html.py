"""The replay report as one self-contained HTML page: charts, tables, notes; no script at all.

Transcript text is untrusted, so the page is built to execute nothing whatever the data holds:

- every value that reaches the markup goes through :func:`html.escape` (text and attributes);
- no event handler, ``href`` or ``src`` is ever built from data;
- a strict Content-Security-Policy ``<meta>`` forbids scripts, objects, frames, external loads and
  form submission; the one inline stylesheet is allowed by its SHA-256 hash, not by ``unsafe-inline``.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Mapping, Sequence
from itertools import accumulate

from ..context import SECTIONS
from ..log.events import Event
from ..replay.results import FileResult, ReplayResults, StrategyResult
from . import _tables
from ._timeline import timeline
from .frontier import frontier_table, tradeoff_points
from .scatter import SUFFICIENT_EVIDENCE, knee, tradeoff_chart
from .svg import (
    SECTION_COLORS,
    STRATEGY_COLORS,
    Series,
    esc,
    fmt_int,
    fmt_usd,
    line_chart,
    stacked_area_chart,
)
from .verdict import verdict

CSS = """
:root{color-scheme:light}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
header{background:#1d2330;color:#fff;padding:18px 28px}
header h1{margin:0 0 6px;font-size:22px}
header p{margin:2px 0;color:#c9d1dd}
main{padding:8px 28px 40px;max-width:1640px}
h2{font-size:18px;margin:26px 0 10px}
h3{font-size:15px;margin:18px 0 8px}
.verdict{font-size:17px;font-weight:600;margin:18px 0 4px;max-width:1100px}
section,details{background:#fff;border:1px solid #dde1e7;border-radius:6px;padding:10px 16px;margin:14px 0}
summary{cursor:pointer;font-weight:600;font-size:16px;padding:4px 0}
.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(560px,1fr));gap:12px}
.charts figure{margin:0;border:1px solid #eef0f3;border-radius:4px;padding:4px}
svg.chart{width:100%;height:auto;display:block}
svg .ct{font-size:14px;font-weight:600;fill:#1d2330}
svg .tl{font-size:11px;fill:#5b6475}
svg .al{font-size:12px;fill:#3a4252}
svg .lg{font-size:12px;fill:#1d2330}
svg .grid{stroke:#eceef2;stroke-width:1}
svg .axis{stroke:#8a93a3;stroke-width:1}
svg .ln{fill:none;stroke-width:2;stroke-linejoin:round}
svg .band{stroke:none;opacity:.9}
svg .ev{stroke:#333;stroke-width:1;stroke-dasharray:3 3;opacity:.55}
svg .hit{fill:transparent;stroke:none}
svg .we{stroke:#fff;stroke-width:.8}
table.fig{border-collapse:collapse;margin:8px 0;font-size:13px}
table.fig th,table.fig td{border-bottom:1px solid #e3e6eb;padding:4px 9px;text-align:left;vertical-align:top}
table.fig th{background:#f0f2f5;font-weight:600}
table.tl td{max-width:640px;overflow-wrap:anywhere}
table.fig td:first-child{min-width:150px;max-width:420px;overflow-wrap:anywhere}
table.fig .num{text-align:right;font-variant-numeric:tabular-nums}
.scroll{overflow:auto;max-height:520px}
pre.ex{white-space:pre-wrap;word-break:break-word;max-width:760px;margin:0;font-size:12px;background:#f6f7f9;
padding:4px 6px}
.task{max-height:240px;overflow:auto}
.sw svg{vertical-align:-1px}
.note{color:#5b6475}
.ok{color:#2a7a3b}
ul.notes li{margin:3px 0}
""".strip()
"""The page's only stylesheet (its hash goes into the Content-Security-Policy)."""


def _csp() -> str:
    digest = base64.b64encode(hashlib.sha256(CSS.encode("utf-8")).digest()).decode("ascii")
    return (
        "default-src 'none'; script-src 'none'; object-src 'none'; frame-src 'none'; "
        f"style-src 'sha256-{digest}'; img-src 'none'; font-src 'none'; connect-src 'none'; "
        "base-uri 'none'; form-action 'none'"
    )


CONTENT_SECURITY_POLICY = _csp()
"""The policy the page declares: nothing executes, nothing loads, only the hashed stylesheet applies."""

SECTION_LABELS: dict[str, str] = {
    "system": "system",
    "tools": "tools",
    "instructions": "instructions",
    "pinned": "pinned (goal, constraints)",
    "summary": "summary",
    "conversation": "conversation",
    "tool_output": "tool output",
}


def _colors(results: ReplayResults) -> dict[str, str]:
    return {s.name: STRATEGY_COLORS[n % len(STRATEGY_COLORS)] for n, s in enumerate(results.strategies)}


def _ran(results: ReplayResults) -> list[StrategyResult]:
    return [s for s in results.strategies if not s.skipped]


def _event_notes(f: FileResult) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """Positions of the requests that carried a window event, and what each event was."""
    marked = [(n, r) for n, r in enumerate(f.requests) if r.window_event]
    notes = tuple(
        ", ".join(r.window_event_kinds) or ("prefix break" if r.prefix_break else "window event") for _, r in marked
    )
    return tuple(n for n, _ in marked), notes


def _file_charts(results: ReplayResults, file_index: int, colors: dict[str, str]) -> str:
    runs = [(s, s.per_file[file_index]) for s in _ran(results) if file_index < len(s.per_file)]
    inputs, costs, cached = [], [], []
    for s, f in runs:
        marks, notes = _event_notes(f)
        color = colors[s.name]
        inputs.append(
            Series(
                label=s.name,
                values=tuple(float(r.input_tokens) for r in f.requests),
                color=color,
                markers=marks,
                marker_notes=notes,
            )
        )
        costs.append(Series(label=s.name, values=tuple(accumulate(r.cost_usd for r in f.requests)), color=color))
        cached.append(Series(label=s.name, values=tuple(float(r.cache_read_tokens) for r in f.requests), color=color))
    charts = [
        line_chart(inputs, title="Input tokens per request (▼ window event)", y_label="input tokens", kind="input"),
        line_chart(
            costs,
            title="Cumulative cost (cache-adjusted)",
            y_label="USD",
            y_format=fmt_usd,
            tooltip_format=fmt_usd,
            kind="cost",
        ),
        line_chart(
            cached,
            title="Cached prefix per request (tokens read from the cache)",
            y_label="cached tokens",
            kind="cached",
        ),
    ]
    for s, f in runs:
        charts.append(_composition(s.name, f))
    return '<div class="charts">' + "".join(f"<figure>{c}</figure>" for c in charts) + "</div>"


def _composition(name: str, f: FileResult) -> str:
    present = [k for k in SECTIONS if any(r.sections.get(k, 0) for r in f.requests)]
    extra = sorted({k for r in f.requests for k in r.sections} - set(SECTIONS))
    bands = [
        Series(
            label=SECTION_LABELS.get(k, k),
            color=SECTION_COLORS.get(k, "#999999"),
            values=tuple(float(r.sections.get(k, 0)) for r in f.requests),
        )
        for k in (*present, *extra)
    ]
    overlay = Series(
        label="cached prefix",
        color="#111111",
        values=tuple(float(r.cache_read_tokens) for r in f.requests),
        dashed=True,
    )
    marks, notes = _event_notes(f)
    return stacked_area_chart(
        bands,
        title=f"Composition per request: {name}",
        y_label="tokens",
        overlay=overlay,
        events=tuple(zip(marks, notes, strict=True)),
        kind="composition",
    )


def _file_section(
    results: ReplayResults, file_index: int, colors: dict[str, str], events: Sequence[Event] | None
) -> str:
    runs = [(s, s.per_file[file_index]) for s in _ran(results) if file_index < len(s.per_file)]
    first = runs[0][1] if runs else None
    title = first.name if first else results.files[file_index]
    path = first.file if first else results.files[file_index]
    requests = len(first.requests) if first else 0
    parts = [
        f"<details{' open' if file_index == 0 else ''}><summary>{esc(title)} · {fmt_int(requests)} requests"
        f'</summary><p class="note">{esc(path)}</p>'
    ]
    if events is not None:
        parts.append(timeline(events))
    parts.append(_file_charts(results, file_index, colors))
    parts.append("<h3>Figures</h3>")
    parts.append(_tables.figures_table([(s.name, colors[s.name], f.figures()) for s, f in runs]))
    notes = [(s.name, f.note) for s, f in runs if f.note]
    if notes:
        parts.append('<ul class="notes">' + "".join(f"<li>{esc(n)}: {esc(t)}</li>" for n, t in notes) + "</ul>")
    parts.append("<h3>Retention probes</h3>")
    parts.append(_tables.probe_table([(s.name, f) for s, f in runs]))
    checks = [(s.name, f) for s, f in runs if f.usage is not None]
    if checks:
        parts.append("<h3>Cost model against the transcript's recorded usage</h3>")
        parts.append(_tables.usage_table(checks))
    parts.append('<details><summary>Every request</summary><div class="scroll">')
    parts.append(_tables.per_request_table(runs))
    parts.append("</div></details></details>")
    return "".join(parts)


def _header(results: ReplayResults) -> str:
    counter = results.counter_label or f"{results.counter} ({'exact' if results.counter_exact else 'estimate'})"
    settings = ", ".join(f"{k}={v}" for k, v in sorted(results.settings.items()))
    lines = [
        f"model <b>{esc(results.model)}</b> · cache {esc(results.cache_style)} · counter {esc(counter)}",
        f"{fmt_int(len(results.files))} transcript(s) · {fmt_int(len(results.strategies))} strategies",
    ]
    if settings:
        lines.append(f"settings: {esc(settings)}")
    return (
        "<header><h1>contextwarden · context replay report</h1>"
        + "".join(f"<p>{line}</p>" for line in lines)
        + "</header>"
    )


def _overview(results: ReplayResults, colors: dict[str, str]) -> str:
    figures = [(s.name, colors[s.name], s.figures()) for s in _ran(results)]
    sentence = verdict(results)
    parts = [
        '<section id="overview">',
        f'<p class="verdict">{esc(sentence)}</p>' if sentence else "",
        "<h2>Figures over all transcripts</h2>",
        _tables.figures_table(figures),
        '<p class="note">Cost is cache-adjusted under the model profile\'s cache mechanics; retention is '
        "the share of (request, probe) pairs kept: task, constraints, latest tool result, failing "
        "evidence, modified files, and the evidence the next action depends on.</p>",
    ]
    chart = _tradeoff(results)
    if chart:
        parts.append(chart)
    skipped = [(s.name, s.skipped) for s in results.strategies if s.skipped]
    # The engine also lists skipped strategies among its notes; say each thing once.
    said = {f"{n} skipped: {why}" for n, why in skipped}
    notes: Sequence[str] = [n for n in results.notes if n not in said]
    if skipped or notes:
        parts.append('<h3>Notes</h3><ul class="notes">')
        parts += [f"<li>{esc(n)} skipped: {esc(why)}</li>" for n, why in skipped]
        parts += [f"<li>{esc(n)}</li>" for n in notes]
        parts.append("</ul>")
    parts.append("</section>")
    return "".join(parts)


def _tradeoff(results: ReplayResults) -> str:
    """Tokens against cost, both relative to raw, for every strategy that ran (when raw ran too)."""
    points = tradeoff_points(results)
    if len(points) < 2:
        return ""
    best = knee(points)
    note = (
        f"The knee of the frontier (least tokens + cost among the strategies that keep retention 1.0 and "
        f"{SUFFICIENT_EVIDENCE:.0%} of next-action evidence on every transcript) is {best.label}."
        if best is not None
        else ""
    )
    return (
        "<h3>Tokens against cost</h3>"
        + tradeoff_chart(points, title="Mean input tokens and cost, relative to raw (frontier dashed)")
        + f'<p class="note">{esc(note)}</p>'
        + frontier_table(points)
    )


def render_report(results: ReplayResults, *, transcripts: Mapping[str, Sequence[Event]] | None = None) -> str:
    """The whole report as one HTML document (see the module docstring for what makes it safe).

    ``transcripts`` maps a replayed file (an entry of ``results.files``) to its events; a file
    given there gets its task statement and a request-by-request excerpt of the transcript.
    """
    colors = _colors(results)
    given = transcripts or {}
    files = [_file_section(results, n, colors, given.get(f)) for n, f in enumerate(results.files)]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{esc(CONTENT_SECURITY_POLICY)}">'
        '<meta name="referrer" content="no-referrer">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>contextwarden replay report · {esc(results.model)}</title><style>{CSS}</style></head><body>"
        f"{_header(results)}<main>{_overview(results, colors)}"
        f"<h2>Per transcript</h2>{''.join(files)}</main></body></html>\n"
    )
