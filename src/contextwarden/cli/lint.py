"""``contextwarden lint SOURCE``: check model-visible context against the six rules.

The rules are rows 44-49 of ``docs/behaviours.md``. SOURCE is a JSONL file of rendered requests from any
agent (one payload per line, in call order; ``-`` reads stdin) or the id of a stored session. Exit status
1 when something is found, 0 when clean, 2 when the source cannot be read.
"""

from __future__ import annotations

import os
import sys

import click
from rich.console import Console
from rich.table import Table

from ..errors import SessionNotFound, UsageError
from ..governance.classify import classify_requests, classify_session
from ..governance.lint import RULES, LintOptions, LintReport, lint_requests
from ..governance.requests import read_requests
from ..governance.session import lint_session
from ..governance.taxonomy import TaxonomyReport
from ._common import (
    console,
    default_store_url,
    echo_json,
    json_options,
    missing_store,
    model_option,
    open_existing_store,
    store_option,
)
from ._policy import chosen_policy, policy_option


def _print(report: LintReport, console: Console) -> None:
    if report.findings:
        table = Table(title=f"lint: {report.source}", show_lines=False)
        table.add_column("rule", no_wrap=True)
        table.add_column("req", justify="right", no_wrap=True)
        table.add_column("item", overflow="fold", ratio=1)
        table.add_column("finding", overflow="fold", ratio=3)
        for f in report.findings:
            times = f" (x{f.occurrences})" if f.occurrences > 1 else ""
            table.add_row(f.rule, str(f.request), f.item, f"{RULES[f.rule]}: {f.message}{times}")
        console.print(table)
    counts = ", ".join(f"{rule}={n}" for rule, n in report.counts.items() if n)
    kept = len(report.findings)
    total = sum(report.counts.values())
    more = f" (showing {kept})" if kept < total else ""
    summary = f"{report.requests} requests, {report.breaks} prefix breaks, {total} findings{more}"
    console.print(summary + (f": {counts}" if counts else ": clean"))
    if report.unchecked_pairs:
        console.print(f"{report.unchecked_pairs} requests could not be compared (stateful or unreadable)")
    if report.bad_line_count:
        first = ", ".join(f"line {b.line}: {b.error}" for b in report.bad_lines[:3])
        console.print(f"skipped {report.bad_line_count} unreadable line(s): {first}", style="yellow")


def _print_tags(report: TaxonomyReport, console: Console) -> None:
    if not report.tags:
        console.print(f"taxonomy: no context failure in {report.requests} requests")
        return
    table = Table(title="context failures")
    table.add_column("failure", no_wrap=True)
    table.add_column("req", justify="right", no_wrap=True)
    table.add_column("item", overflow="fold", ratio=1)
    table.add_column("what was seen", overflow="fold", ratio=3)
    for tag in report.tags:
        table.add_row(tag.failure.value, str(tag.request), tag.item, tag.detail)
    console.print(table)


@click.command(name="lint")
@click.argument("source")
@json_options()
@model_option(default=None, help="Model to build a session's requests for (default: the one its builds recorded).")
@click.option(
    "--taxonomy",
    is_flag=True,
    help="Also tag the requests with the context-failure taxonomy (overflow, stale, under-context...).",
)
@click.option(
    "--max-breaks",
    type=int,
    default=LintOptions().max_breaks_per_10,
    show_default=True,
    help="R2: prefix breaks allowed per 10 requests.",
)
@click.option(
    "--known-kind",
    "known_kinds",
    multiple=True,
    help="R5: a kind already reviewed (tool_output:bash, fragment:env...); repeatable.",
)
@policy_option
@store_option
def command(
    source: str,
    as_json: bool,
    model: str | None,
    taxonomy: bool,
    max_breaks: int,
    known_kinds: tuple[str, ...],
    policy_name: str | None,
    store_url: str | None,
) -> None:
    """Check the requests in SOURCE (a JSONL file of request payloads, or a session id).

    A session's requests are rebuilt with the model profile, tools and policy its builds
    recorded; --model and --policy rebuild them for another.
    """
    options = LintOptions(max_breaks_per_10=max_breaks, known_kinds=frozenset(known_kinds))
    policy = chosen_policy(policy_name)
    tags: TaxonomyReport | None = None
    if source == "-" or os.path.isfile(source):
        # Streamed unless the taxonomy reads the requests a second time.
        requests = list(read_requests(source)) if taxonomy else read_requests(source)
        report = lint_requests(requests, options=options, source=source)
        if report.requests == 0:
            raise click.UsageError(f"{source} holds no request payloads ({report.bad_line_count} unreadable line(s))")
        if taxonomy:
            tags = classify_requests(requests, source=source, policy=policy)
    else:
        url = store_url or default_store_url()
        if missing_store(store_url) is not None:
            raise click.UsageError(f"no file named {source!r}, and no session store at {url}")
        store = open_existing_store(store_url)
        try:
            report = lint_session(store, source, model=model, options=options, policy=policy)
            if taxonomy:
                tags = classify_session(store, source, model=model, policy=policy)
        except SessionNotFound:
            raise click.UsageError(f"no file named {source!r}, and no session {source!r} in {url}") from None
        except UsageError as exc:
            raise click.UsageError(str(exc)) from None
        finally:
            store.close()
    if as_json:
        echo_json({**report.to_dict(), "taxonomy": tags.to_dict()} if tags is not None else report.to_dict())
    else:
        out = console()
        _print(report, out)
        if tags is not None:
            _print_tags(tags, out)
    # sys.exit, not ctx.exit: the lazy group runs with standalone_mode=False, which drops Exit codes.
    sys.exit(0 if report.ok else 1)
