"""``contextwarden inspect SESSION``: what the model sees on one turn, and why.

``contextwarden inspect --project DIR`` shows what a session started in ``DIR`` would be told first: the
system prompt's files, the project rule files from the filesystem root down, the catalog, and the notes.

Composition by section and by tier (tokens and share of the window), the prefix shared with the
previous request (what a provider cache can serve), the items, and the decision log (what was
truncated, masked, superseded or compacted, and why).
"""

from __future__ import annotations

from pathlib import Path

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..errors import SessionNotFound, UsageError
from ..governance.inspection import Inspection, inspect_session
from ..instructions import assemble_system
from ..tokens import best_counter
from ._common import (
    console,
    default_store_url,
    display_text,
    echo_json,
    json_options,
    model_option,
    open_existing_store,
    store_option,
)
from ._policy import chosen_policy, policy_option


def _composition(title: str, rows: dict[str, int], view: Inspection) -> Table:
    table = Table(title=title)
    table.add_column(title.split()[0], no_wrap=True)
    table.add_column("tokens", justify="right")
    table.add_column("% of window", justify="right")
    for name, tokens in rows.items():
        if tokens:
            table.add_row(name, f"{tokens:,}", f"{view.percent(tokens):.1f}")
    total = view.context.total_tokens
    table.add_row("total", f"{total:,}", f"{view.percent(total):.1f}", style="bold")
    return table


_WIDE = 120
"""Below this many columns the items table puts an item's facts and its text on two lines of one cell."""


def _items(view: Inspection, width: int) -> Table:
    table = Table(title="items")
    dim = ("masked", "superseded", "stale")
    if width < _WIDE:
        # Seven columns at 80 leave the text a dozen characters, one word per line: one cell, two lines.
        index_width = len(str(max((item.index for item in view.items), default=0)))
        tokens_width = max([len("tokens"), *(len(f"{item.tokens:,}") for item in view.items)])
        room = max(20, width - index_width - tokens_width - 10)  # 10: the borders and padding of 3 columns
        table.add_column("#", justify="right", min_width=index_width)
        table.add_column("tokens", justify="right", min_width=tokens_width)
        table.add_column("item")
        for item in view.items:
            cell = Text()
            preview = display_text(" ".join(item.preview.split()))
            for line in (f"{item.role} · {item.section} · {item.tier} · {item.state}", preview):
                text = Text(line)
                text.truncate(room, overflow="ellipsis")
                cell.append_text(text if not cell else Text("\n").append_text(text))
            table.add_row(str(item.index), f"{item.tokens:,}", cell, style="dim" if item.state in dim else None)
        return table
    for name, justify in (
        ("#", "right"),
        ("role", "left"),
        ("section", "left"),
        ("tier", "left"),
        ("state", "left"),
        ("tokens", "right"),
        ("text", "left"),
    ):
        table.add_column(
            name,
            justify=justify,  # type: ignore[arg-type]
            overflow="fold" if name == "text" else "ellipsis",
            no_wrap=name != "text",
        )
    for item in view.items:
        table.add_row(
            str(item.index),
            item.role,
            item.section,
            item.tier,
            item.state,
            f"{item.tokens:,}",
            Text(display_text(item.preview)),  # transcript text: no markup, no terminal escapes
            style="dim" if item.state in dim else None,
        )
    return table


def _decisions(view: Inspection) -> Table:
    table = Table(title="decision log (reductions in effect)")
    table.add_column("action", no_wrap=True)
    table.add_column("target", overflow="fold")
    table.add_column("saved", justify="right")
    table.add_column("why", overflow="fold")
    for d in view.standing:
        saved = f"{d.tokens_saved:,}" if d.tokens_saved else ""
        table.add_row(d.action, Text(display_text(d.target)), saved, Text(display_text(d.reason)))
    return table


def _print(view: Inspection, console: Console, *, show_items: bool) -> None:
    ctx = view.context
    headline = (
        f"session {view.session_id}, request {view.turn} of {view.turns}"
        f"{' (the next one)' if view.turn == view.turns else ''}: model {ctx.model}, "
        f"{ctx.total_tokens:,} tokens of a {ctx.budget:,}-token budget, context window {view.window:,} "
        f"(counted with {ctx.counter})"
    )
    console.print(Text(display_text(headline)))
    console.print(_composition("section", view.sections, view))
    console.print(_composition("tier", view.tiers, view))
    if view.turn > 1:
        line = (
            f"cached prefix: {view.shared_prefix:,} tokens shared with request {view.turn - 1}, "
            f"{view.cacheable_prefix:,} cacheable by the provider"
        )
        console.print(line)
        if view.prefix_break:
            console.print(f"prefix break at {view.prefix_break}", style="yellow")
    if view.window_events:
        console.print(f"window events since the previous request: {', '.join(view.window_events)}")
    plan = [d.reason for d in ctx.decisions if d.action == "plan" and d.reason]
    if plan:
        console.print(Text(display_text(f"planner: {plan[-1]}")))
    if show_items:
        console.print(_items(view, console.width))
    if view.standing:
        console.print(_decisions(view))
    else:
        console.print("decision log: nothing was truncated, masked, superseded or compacted")
    own = [d for d in ctx.decisions if d.action != "plan"]
    if own:
        console.print(f"this request's own decisions: {len(own)} ({', '.join(sorted({d.action for d in own}))})")


def _print_project(directory: Path, as_json: bool) -> None:
    counter = best_counter()
    assembled = assemble_system(directory, counter=counter)
    parts = {"system": assembled.system, "project_rules": assembled.project_rules, "catalog": assembled.catalog}
    tokens = {name: counter.count(text) for name, text in parts.items()}
    if as_json:
        echo_json(
            {
                "directory": str(directory.resolve()),
                "tokens": tokens,
                "rule_files": [f.path for f in assembled.rule_files],
                "catalog_entries": [{"name": e.name, "path": e.path} for e in assembled.entries],
                "sources": list(assembled.sources),
                "notes": list(assembled.notes),
                **parts,
            }
        )
        return
    out = console()
    out.print(f"project {directory.resolve()}: counted with {counter.name}")
    for name, count in tokens.items():
        out.print(f"  {name}: {count:,} tokens")
    for f in assembled.rule_files:
        out.print(f"  rules  {f.path}{' (cut)' if f.truncated else ''}")
    for e in assembled.entries:
        out.print(f"  catalog  {e.name}  {e.path}")
    for note in assembled.notes:
        out.print(f"  note: {note}", style="yellow")


@click.command(name="inspect")
@click.argument("session_id", required=False)
@click.option(
    "--project",
    "project",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    help="Show what a session started in this directory is told first (prompt files, rules, catalog).",
)
@click.option(
    "--turn", type=int, default=None, help="Which request (1-based; default: the one the manager would build now)."
)
@model_option(default=None, help="Model to build for (default: the one the session's builds recorded).")
@json_options()
@click.option("--items/--no-items", default=True, show_default=True, help="List every item.")
@policy_option
@store_option
def command(
    session_id: str | None,
    project: Path | None,
    turn: int | None,
    model: str | None,
    as_json: bool,
    items: bool,
    policy_name: str | None,
    store_url: str | None,
) -> None:
    """Show what the model sees on a session's turn, and why.

    The requests are rebuilt with the model profile, tools and policy the session's builds
    recorded; --model and --policy rebuild them for another. With --project DIR and no session, it
    shows the instruction files a session in DIR starts with.
    """
    if session_id is not None and project is not None:
        raise click.UsageError("give a SESSION_ID or --project DIR, not both")
    if session_id is None:
        if project is None:
            raise click.UsageError("give a SESSION_ID, or --project DIR")
        try:
            _print_project(project, as_json)
        except UsageError as exc:
            raise click.UsageError(str(exc)) from None
        return
    policy = chosen_policy(policy_name)
    url = store_url or default_store_url()
    store = open_existing_store(store_url)
    try:
        view = inspect_session(store, session_id, turn=turn, model=model, policy=policy)
    except SessionNotFound:
        raise click.UsageError(f"no session {session_id!r} in {url}") from None
    except UsageError as exc:
        raise click.UsageError(str(exc)) from None
    finally:
        store.close()
    if as_json:
        echo_json(view.to_dict())
    else:
        _print(view, console(), show_items=items)
