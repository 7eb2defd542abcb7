"""``contextwarden replay``: real transcripts under several context strategies, side by side.

Each argument is a transcript file (any format ``contextwarden import`` reads) or the id of a stored
session. Prints one table of totals over every file (and a per-file table for several files),
notes skipped peers and probe misses, and on request writes the JSON figures, every rendered request
(``--dump-requests``) and the HTML report.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.measure import Measurement
from rich.table import Table

from ..errors import UsageError
from ..importers import TRANSCRIPT_FORMATS
from ..replay import (
    DEFAULT_MODEL,
    DEFAULT_STRATEGIES,
    FileResult,
    ReplayResults,
    ReplaySettings,
    StrategyResult,
    UsageCheck,
    load_inputs,
    replay,
)
from ._common import console as make_console
from ._common import echo_json, json_options, missing_store, model_option, open_existing_store, progress, store_option


def _interval(value: float) -> float:
    """``--interval``, held to the replay settings' own rule (a finite number of seconds >= 0)."""
    try:
        return ReplaySettings(interval_seconds=value).interval_seconds
    except UsageError as exc:
        raise click.BadParameter(str(exc)) from None


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
@model_option(
    default=None,
    help="Price and budget every request as this model profile (default: each request's own model from the "
    f"transcript; {DEFAULT_MODEL} for a transcript that names none, with a note).",
)
@json_options(output=True)
@click.option("--per-request", is_flag=True, help="Include every request's figures in the JSON.")
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
    callback=lambda ctx, param, value: _interval(value),
    show_default=True,
    help="Seconds between requests when the transcript has no timestamps.",
)
@click.option(
    "--cache-ttl",
    type=click.Choice(["5m", "1h"]),
    default=None,
    help="Lifetime explicit cache breakpoints are written with (Anthropic-style caching). "
    "Default: the transcript's own (1h when its usage reports mostly 1-hour writes), else 5m.",
)
@click.option(
    "--format",
    "format_name",
    type=click.Choice(list(TRANSCRIPT_FORMATS)),
    default=None,
    help="Read every file as this format instead of detecting it.",
)
@click.option("--no-optimum", is_flag=True, help="Skip the offline optimum (faster).")
@store_option
def command(
    sources: tuple[str, ...],
    strategies: tuple[str, ...],
    model: str | None,
    as_json: bool,
    output: Path | None,
    per_request: bool,
    dump_dir: Path | None,
    report_path: Path | None,
    interval: float,
    cache_ttl: str | None,
    format_name: str | None,
    no_optimum: bool,
    store_url: str | None,
) -> None:
    """Replay transcripts (files or stored session ids) and compare tokens, cost and retention."""
    write_report = _report_writer() if report_path is not None else None
    needs_store = any(not Path(s).exists() for s in sources)
    if needs_store and missing_store(store_url) is not None:
        missing = ", ".join(repr(s) for s in sources if not Path(s).exists())
        raise click.UsageError(f"no file named {missing}, and no session store at {missing_store(store_url)}")
    store = open_existing_store(store_url) if needs_store else None
    try:
        inputs = load_inputs(sources, store=store, format=format_name)
    finally:
        if store is not None:
            store.close()
    for inp in inputs:
        for warning in inp.warnings:
            click.echo(f"warning: {inp.source}: {warning}", err=True)
    settings = ReplaySettings(
        model=model,
        interval_seconds=interval,
        cache_ttl="1h" if cache_ttl == "1h" else "5m" if cache_ttl else None,
        optimum=not no_optimum,
    )
    names = list(strategies or DEFAULT_STRATEGIES)
    total = sum(i.requests for i in inputs) * len(names)
    started = time.perf_counter()
    with progress(total, "replaying", minimum=50) as advance:
        results = replay(inputs, names, settings=settings, dump_dir=dump_dir, progress=advance)
    if as_json:
        echo_json(results.to_dict(per_request=per_request))
    else:
        _print(results)
        click.echo(
            f"replayed {sum(i.requests for i in inputs)} requests from {len(inputs)} transcript(s) under "
            f"{len(names)} strategies in {time.perf_counter() - started:.1f} s"
        )
    if output is not None:
        echo_json(results.to_dict(per_request=per_request), output)
    if write_report is not None and report_path is not None:
        write_report(results, report_path, transcripts={i.source: i.events for i in inputs})
        click.echo(f"wrote {report_path}", err=as_json)


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


def _share(value: float | None) -> str:
    return f"{value:.3f}" if value is not None else "-"


def _ratio(value: float, base: float) -> str:
    return f"{value / base:.2f}×" if base else "-"


_FIGURES = (
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
    "next-action",
    "re-reads",
    "overflows",
)


def _figure_cells(f: dict[str, Any], raw: dict[str, Any] | None) -> list[str]:
    """One strategy's figures as the table shows them, in the order of ``_FIGURES[1:]``."""
    ratio = f["optimum_ratio"]
    return [
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
        _share(f["probe_retention"].get("next_action_evidence")),
        f"{f['rereads']}/{f['file_reads']}",
        str(f["overflows"]),
    ]


def _print(results: ReplayResults) -> None:
    console = make_console()
    if not console.is_terminal:
        console = make_console(width=160)  # piped output has no width to respect; 80 columns would crop figures
    runs = [s for s in results.strategies if not s.skipped]
    raw = next((s.figures() for s in runs if s.name == "raw"), None)
    counter = results.counter_label or f"{results.counter} ({'exact' if results.counter_exact else 'estimate'})"
    title = f"{len(results.files)} transcript(s), model {results.model} ({results.cache_style}), tokens by {counter}"
    rows = [(s.name, _figure_cells(s.figures(), raw)) for s in runs]
    table = Table(title=title)
    for column in _FIGURES:
        table.add_column(column, justify="left" if column == "strategy" else "right")
    for name, cells in rows:
        table.add_row(name, *cells)
    if Measurement.get(console, console.options.update_width(10_000), table).maximum > console.width:
        # Too wide for this terminal (13 figures at 80 columns): one row per figure, one column per strategy.
        table = Table(title=title)
        table.add_column("figure")
        for name, _ in rows:
            table.add_column(name, justify="right")
        for index, figure in enumerate(_FIGURES[1:]):
            label = {"× raw": f"{_FIGURES[index]} × raw"}.get(figure, figure)  # the figure it divides
            table.add_row(label, *(cells[index] for _, cells in rows))
    console.print(table)
    if len(results.files) > 1:
        _print_per_file(console, results)
    for s in runs:
        _print_misses(console, s)
    for s in runs:
        checked = [result for result in s.per_file if result.usage is not None]
        for result in checked:
            _print_usage(console, result)
        total = UsageCheck.total([r.usage for r in checked if r.usage is not None])
        if len(checked) > 1 and total is not None:
            console.print(f"all {len(checked)} transcripts with usage: billed against predicted", markup=False)
            _print_rows(console, total)
    for note in results.notes:
        console.print(f"note: {note}")


def _print_misses(console: Console, s: StrategyResult) -> None:
    """One strategy's probe misses, and the first next-action evidence misses of each transcript."""
    misses = {k: v for k, v in s.figures()["probe_misses"].items() if v}
    if misses:
        console.print(f"{s.name}: probe misses " + ", ".join(f"{k} {v}" for k, v in misses.items()))
    for result in s.per_file:
        listed = result.evidence_misses[:LISTED]
        for line in listed:
            console.print(f"  {result.name}: next-action evidence missed at {line}", markup=False)
        if len(result.evidence_misses) > len(listed):
            console.print(f"  {result.name}: ... {len(result.evidence_misses) - len(listed)} more (see --json)")


def _print_usage(console: Console, result: FileResult) -> None:
    """Real against predicted for one transcript with provider usage (the raw strategy)."""
    u = result.usage
    assert u is not None
    console.print(
        f"{result.name}: billed usage ({u.source}, {u.requests} request(s), {', '.join(u.models)}) against the "
        "raw strategy's prediction"
        + (f" ({u.left_out} later request(s) follow the agent's own compaction: not compared)" if u.left_out else ""),
        markup=False,
    )
    _print_rows(console, u)
    if result.hidden_prefix_tokens:
        console.print(
            f"  hidden prefix: {result.hidden_prefix_tokens:,} tokens, {result.hidden_prefix_method}", markup=False
        )
    console.print(
        f"  tokens: {result.counter.get('label', '')}; request times: {result.clock}; cache writes: {result.cache_ttl}",
        markup=False,
    )


def _print_rows(console: Console, u: UsageCheck) -> None:
    """Real against predicted tokens and cost, with the error in percent."""
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
