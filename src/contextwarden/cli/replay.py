"""``contextwarden replay``: real transcripts under several context strategies, side by side.

Each argument is a transcript file (any format ``contextwarden import`` reads) or the id of a stored
session. Prints one table of totals over every file (and a per-file table for several files),
notes skipped peers and probe misses, and on request writes the JSON figures, every rendered request
(``--dump-requests``) and the HTML report.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from ..importers import FORMATS
from ..replay import (
    DEFAULT_MODEL,
    DEFAULT_STRATEGIES,
    FileResult,
    ReplayResults,
    ReplaySettings,
    load_inputs,
    replay,
)
from ..store import open_store
from ._common import store_option


@click.command(name="replay")
@click.argument("sources", nargs=-1, required=True)
@click.option(
    "--strategy",
    "strategies",
    multiple=True,
    help="raw, mask-last-n:N, contextwarden[:options], or a peer (repeatable; default: "
    + ", ".join(DEFAULT_STRATEGIES)
    + ").",
)
@click.option(
    "--model",
    default=None,
    help="Price and budget every request as this model profile (default: each request's own model from the "
    f"transcript; {DEFAULT_MODEL} for a transcript that names none). An unknown name is an error.",
)
@click.option(
    "--json",
    "json_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write the figures as JSON to this file.",
)
@click.option("--per-request", is_flag=True, help="Include every request's figures in the --json output.")
@click.option(
    "--dump-requests",
    "dump_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Write DIR/<strategy>/<file>.jsonl, one rendered OpenAI Chat request per line.",
)
@click.option(
    "--report",
    "report_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write the HTML report to this file.",
)
@click.option(
    "--interval",
    type=float,
    default=30.0,
    show_default=True,
    help="Seconds between requests when the transcript has no timestamps.",
)
@click.option(
    "--cache-ttl",
    type=click.Choice(["5m", "1h"]),
    default="5m",
    show_default=True,
    help="Lifetime explicit cache breakpoints are written with (Anthropic-style caching).",
)
@click.option(
    "--format",
    "format_name",
    type=click.Choice(list(FORMATS)),
    default=None,
    help="Read every file as this format instead of detecting it.",
)
@click.option("--no-optimum", is_flag=True, help="Skip the offline optimum (faster).")
@store_option
def command(
    sources: tuple[str, ...],
    strategies: tuple[str, ...],
    model: str | None,
    json_path: Path | None,
    per_request: bool,
    dump_dir: Path | None,
    report_path: Path | None,
    interval: float,
    cache_ttl: str,
    format_name: str | None,
    no_optimum: bool,
    store_url: str | None,
) -> None:
    """Replay transcripts (files or stored session ids) and compare tokens, cost and retention."""
    write_report = _report_writer() if report_path is not None else None
    needs_store = any(not Path(s).exists() for s in sources)
    store = open_store(store_url) if needs_store else None
    try:
        inputs = load_inputs(sources, store=store, format=format_name)
    finally:
        if store is not None:
            store.close()
    settings = ReplaySettings(
        model=model, interval_seconds=interval, cache_ttl="1h" if cache_ttl == "1h" else "5m", optimum=not no_optimum
    )
    names = list(strategies or DEFAULT_STRATEGIES)
    err = Console(stderr=True)
    total = sum(i.requests for i in inputs) * len(names)
    with Progress(
        TextColumn("replaying"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=err,
        transient=True,
        disable=total < 200,
    ) as bar:
        task = bar.add_task("replay", total=total)
        results = replay(inputs, names, settings=settings, dump_dir=dump_dir, progress=lambda n: bar.advance(task, n))
    _print(results)
    if json_path is not None:
        json_path.write_text(json.dumps(results.to_dict(per_request=per_request), indent=2) + "\n", encoding="utf-8")
        click.echo(f"wrote {json_path}")
    if write_report is not None and report_path is not None:
        write_report(results, report_path, transcripts={i.source: i.events for i in inputs})
        click.echo(f"wrote {report_path}")


LISTED = 10
"""next-action evidence misses printed per transcript and strategy (--json has them all)."""


def _report_writer() -> Any:
    try:
        from ..report import write_report
    except ImportError as exc:
        raise click.ClickException(
            f"--report needs contextwarden.report, which is not available here ({exc})"
        ) from None
    return write_report


def _ratio(value: float, base: float) -> str:
    return f"{value / base:.2f}×" if base else "-"


def _print(results: ReplayResults) -> None:
    console = Console()
    if not console.is_terminal:
        console = Console(width=160)  # piped output has no width to respect; 80 columns would crop figures
    runs = [s for s in results.strategies if not s.skipped]
    raw = next((s.figures() for s in runs if s.name == "raw"), None)
    table = Table(
        title=f"{len(results.files)} transcript(s), model {results.model} ({results.cache_style}), "
        f"tokens by {results.counter_label or results.counter}"
    )
    for column in (
        "strategy",
        "requests",
        "mean input",
        "× raw",
        "peak",
        "cost $",
        "× raw",
        "× optimum",
        "cache hit",
        "breaks",
        "window ev.",
        "retention",
        "re-reads",
        "overflows",
    ):
        table.add_column(column, justify="left" if column == "strategy" else "right")
    for s in runs:
        f = s.figures()
        ratio = f["optimum_ratio"]
        table.add_row(
            s.name,
            str(f["requests"]),
            f"{f['input_tokens_mean']:,.0f}",
            _ratio(f["input_tokens_mean"], raw["input_tokens_mean"]) if raw else "-",
            f"{f['input_tokens_peak']:,}",
            f"{f['cost_usd']:.4f}",
            _ratio(f["cost_usd"], raw["cost_usd"]) if raw else "-",
            f"{ratio:.2f}×" if ratio else "-",
            f"{f['cache_hit_ratio']:.0%}",
            str(f["prefix_breaks"]),
            str(f["window_events"]),
            f"{f['retention']:.3f}",
            f"{f['rereads']}/{f['file_reads']}",
            str(f["overflows"]),
        )
    console.print(table)
    if len(results.files) > 1:
        _print_per_file(console, results)
    for s in runs:
        misses = {k: v for k, v in s.figures()["probe_misses"].items() if v}
        if misses:
            console.print(f"{s.name}: probe misses " + ", ".join(f"{k} {v}" for k, v in misses.items()))
        for result in s.per_file:
            listed = result.evidence_misses[:LISTED]
            for line in listed:
                console.print(f"  {result.name}: next-action evidence missed at {line}", markup=False)
            if len(result.evidence_misses) > len(listed):
                console.print(f"  {result.name}: ... {len(result.evidence_misses) - len(listed)} more (see --json)")
    for s in runs:
        for result in s.per_file:
            if result.usage is not None:
                _print_usage(console, result)
    for note in results.notes:
        console.print(f"note: {note}")


def _print_usage(console: Console, result: FileResult) -> None:
    """Real against predicted for one transcript with provider usage (the raw strategy)."""
    u = result.usage
    assert u is not None
    console.print(
        f"{result.name}: billed usage ({u.source}, {u.requests} request(s), {', '.join(u.models)}) against the "
        "raw strategy's prediction",
        markup=False,
    )
    rows = (
        ("input", u.real_input_tokens, u.predicted_input_tokens, u.input_error),
        ("cache read", u.real_cache_read_tokens, u.predicted_cache_read_tokens, u.cache_read_error),
        ("cache write", u.real_cache_write_tokens, u.predicted_cache_write_tokens, u.cache_write_error),
        ("output", u.real_output_tokens, u.predicted_output_tokens, u.output_error),
    )
    for label, real, predicted, error in rows:
        console.print(f"  {label:<12}{real:>12,} real {predicted:>12,} predicted {error:+8.1%}", markup=False)
    console.print(
        f"  {'cost $':<12}{u.real_cost_usd:>12.4f} real {u.predicted_cost_usd:>12.4f} predicted {u.cost_error:+8.1%}",
        markup=False,
    )
    if result.hidden_prefix_tokens:
        console.print(
            f"  hidden prefix: {result.hidden_prefix_tokens:,} tokens, {result.hidden_prefix_method}", markup=False
        )
    console.print(f"  tokens: {result.counter.get('label', '')}; request times: {result.clock}", markup=False)


def _print_per_file(console: Console, results: ReplayResults) -> None:
    runs = [s for s in results.strategies if not s.skipped]
    table = Table(title="per file: mean input tokens / cost $")
    table.add_column("file")
    table.add_column("requests", justify="right")
    for s in runs:
        table.add_column(s.name, justify="right")
    for index, source in enumerate(results.files):
        cells = []
        for s in runs:
            f = s.per_file[index].figures()
            cells.append(f"{f['input_tokens_mean']:,.0f} / {f['cost_usd']:.4f}")
        table.add_row(
            runs[0].per_file[index].name if runs else source,
            str(len(runs[0].per_file[index].requests)) if runs else "-",
            *cells,
        )
    console.print(table)
