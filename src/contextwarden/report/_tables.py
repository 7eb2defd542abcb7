"""The report's tables: figures per strategy, probe misses, usage checks and per-request numbers.

Every cell is escaped text; numbers are formatted here so the HTML layer never sees raw data.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..replay.probes import PROBE_KINDS
from ..replay.results import FileResult, StrategyResult
from .svg import esc, fmt_int, fmt_usd

FIGURE_COLUMNS: tuple[tuple[str, str], ...] = (
    ("requests", "requests"),
    ("input_tokens_mean", "input / request"),
    ("input_tokens_peak", "peak input"),
    ("input_tokens_total", "input total"),
    ("cost_usd", "cost"),
    ("cache_hit_ratio", "cache hit"),
    ("prefix_breaks", "prefix breaks"),
    ("window_events", "window events"),
    ("summarizer_tokens", "summarizer tokens"),
    ("retention", "retention"),
    ("overflows", "overflows"),
)
"""(figure key, column heading) of the figures table, in order."""


def _pct(value: float) -> str:
    return f"{value * 100:.1f}%"


def _ratio(value: float, base: float | None) -> str:
    return f"{value / base:.2f}×" if base else "–"


def _cell(key: str, value: Any) -> str:
    if value is None:
        return "–"
    if key == "cost_usd":
        return fmt_usd(float(value))
    if key in ("cache_hit_ratio", "retention"):
        return _pct(float(value))
    return fmt_int(float(value))


def table(
    headings: Sequence[str], rows: Sequence[Sequence[str]], *, cls: str = "fig", numeric: range | None = None
) -> str:
    """An HTML table from already escaped cells; ``numeric`` columns (default: all but the first) align right."""
    cols = numeric if numeric is not None else range(1, len(headings))

    def cell(tag: str, n: int, content: str) -> str:
        return f"<{tag}{' class=num' if n in cols else ''}>{content}</{tag}>"

    head = "".join(cell("th", n, h) for n, h in enumerate(headings))
    body = "".join("<tr>" + "".join(cell("td", n, c) for n, c in enumerate(row)) + "</tr>" for row in rows)
    return f'<table class="{esc(cls)}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def swatch(color: str) -> str:
    """A small colored square naming a strategy's color in tables."""
    return (
        f'<span class="sw" data-color="{esc(color)}"><svg width="10" height="10" aria-hidden="true">'
        f'<rect width="10" height="10" fill="{esc(color)}"/></svg></span>'
    )


def figures_table(figures: Sequence[tuple[str, str, Mapping[str, Any]]]) -> str:
    """Figures per strategy, with token and cost ratios to ``raw`` when raw is among them.

    ``figures`` holds (strategy name, color, figures dict) in display order.
    """
    raw = next((f for name, _, f in figures if name == "raw"), None)
    headings = ["strategy", *(esc(h) for _, h in FIGURE_COLUMNS), "tokens vs raw", "cost vs raw", "cost vs optimum"]
    rows = []
    for name, color, f in figures:
        row = [f"{swatch(color)} {esc(name)}", *(_cell(k, f.get(k)) for k, _ in FIGURE_COLUMNS)]
        row.append(_ratio(f.get("input_tokens_mean", 0.0), raw.get("input_tokens_mean") if raw else None))
        row.append(_ratio(f.get("cost_usd", 0.0), raw.get("cost_usd") if raw else None))
        opt = f.get("optimum_ratio")
        row.append(f"{opt:.2f}×" if isinstance(opt, (int, float)) else "–")
        rows.append(row)
    return table(headings, rows)


def probe_table(results: Sequence[tuple[str, FileResult]]) -> str:
    """Probe misses per strategy and kind, with what the first miss could not see (escaped verbatim)."""
    rows = []
    for name, f in results:
        for kind in PROBE_KINDS:
            misses = f.probe_misses.get(kind, 0)
            if not misses:
                continue
            example = f.miss_examples.get(kind, "")
            shown = example if len(example) <= 600 else example[:599] + "…"
            rows.append([esc(name), esc(kind), fmt_int(misses), f'<pre class="ex">{esc(shown)}</pre>'])
    if not rows:
        return '<p class="ok">Every probe was kept at every request by every strategy.</p>'
    return table(["strategy", "probe", "requests missing it", "first miss could not see"], rows, numeric=range(2, 3))


def usage_table(checks: Sequence[tuple[str, FileResult]]) -> str:
    """The raw strategy's prediction against the usage the transcript recorded, and how it was made."""
    rows = []
    for name, f in checks:
        u = f.usage
        if u is None:
            continue
        rows.append(
            [
                esc(name),
                esc(f"{u.source}, {', '.join(u.models)}"),
                fmt_int(u.requests),
                f"{fmt_int(u.real_input_tokens)} / {fmt_int(u.predicted_input_tokens)} ({_pct(u.input_error)})",
                f"{fmt_int(u.real_cache_read_tokens)} / {fmt_int(u.predicted_cache_read_tokens)}"
                f" ({_pct(u.cache_read_error)})",
                f"{fmt_int(u.real_cache_write_tokens)} / {fmt_int(u.predicted_cache_write_tokens)}"
                f" ({_pct(u.cache_write_error)})",
                f"{fmt_int(u.real_output_tokens)} / {fmt_int(u.predicted_output_tokens)}",
                f"{fmt_usd(u.real_cost_usd)} / {fmt_usd(u.predicted_cost_usd)} ({_pct(u.cost_error)})",
                esc(f"{fmt_int(f.hidden_prefix_tokens)}: {f.hidden_prefix_method}"),
                esc(str(f.counter.get("label", ""))),
                esc(f.clock),
            ]
        )
    headings = [
        "strategy",
        "usage from",
        "requests",
        "real input / predicted",
        "cache reads",
        "cache writes",
        "output",
        "cost",
        "hidden prefix (estimated)",
        "counter",
        "request times",
    ]
    return table(headings, rows, numeric=range(2, 3))


def per_request_table(strategies: Sequence[tuple[StrategyResult, FileResult]]) -> str:
    """Every request's input, cached tokens and cost per strategy, side by side."""
    n = max((len(f.requests) for _, f in strategies), default=0)
    headings = ["request"]
    for s, _ in strategies:
        headings += [f"{esc(s.name)} input", f"{esc(s.name)} cached", f"{esc(s.name)} cost"]
    rows = []
    for i in range(n):
        row = [str(i + 1)]
        for _, f in strategies:
            if i < len(f.requests):
                r = f.requests[i]
                mark = " ▼" if r.window_event else ""
                row += [fmt_int(r.input_tokens) + mark, fmt_int(r.cache_read_tokens), fmt_usd(r.cost_usd)]
            else:
                row += ["–", "–", "–"]
        rows.append(row)
    return table(headings, rows, cls="fig req")
