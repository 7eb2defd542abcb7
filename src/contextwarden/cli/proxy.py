"""``contextwarden proxy``: the context manager in front of any agent, as a local HTTP proxy."""

from __future__ import annotations

import logging
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from ..plan.taskpolicies import task_policy_names
from ._common import deprecation_note, echo_json, missing_store, open_existing_store, store_option
from ._policy import chosen_policy


@click.group(name="proxy", invoke_without_command=True)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8787, show_default=True, type=click.IntRange(0, 65535), help="Port to listen on.")
@click.option(
    "--mode",
    type=click.Choice(["manage", "observe"]),
    default="manage",
    show_default=True,
    help="manage: forward the projection; observe: forward requests unchanged and record what would be sent.",
)
@click.option(
    "--anthropic-upstream",
    envvar="CONTEXTWARDEN_ANTHROPIC_UPSTREAM",
    default="https://api.anthropic.com",
    show_default=True,
    help="Where /v1/messages requests go (env CONTEXTWARDEN_ANTHROPIC_UPSTREAM).",
)
@click.option(
    "--openai-upstream",
    envvar="CONTEXTWARDEN_OPENAI_UPSTREAM",
    default="https://api.openai.com",
    show_default=True,
    help="Where OpenAI-protocol and all other requests go (env CONTEXTWARDEN_OPENAI_UPSTREAM).",
)
@click.option(
    "--gemini-upstream",
    envvar="CONTEXTWARDEN_GEMINI_UPSTREAM",
    default="https://generativelanguage.googleapis.com",
    show_default=True,
    help="Where Gemini-protocol requests (/v1beta/models/...) go (env CONTEXTWARDEN_GEMINI_UPSTREAM).",
)
@click.option("--allow-remote", is_flag=True, help="Allow binding to an address other than localhost (logs a warning).")
@click.option(
    "--policy",
    "policy_name",
    default=None,
    metavar="NAME",
    help=f"Task preset to plan under ({', '.join(task_policy_names())}); default: proxy (the default policy "
    "as a proxy runs it).",
)
@click.option(
    "--spend-limit",
    type=click.IntRange(min=1),
    default=None,
    metavar="TOKENS",
    help="Weighted tokens (output + uncached input / 4) a client session and its subagents may spend; "
    "then its requests get an error instead of being forwarded. Default: no limit.",
)
@click.option("--budget-limit", "old_spend_limit", type=click.IntRange(min=1), default=None, hidden=True)  # deprecated
@click.option(
    "--admin-token",
    envvar="CONTEXTWARDEN_PROXY_ADMIN_TOKEN",
    default=None,
    metavar="TOKEN",
    help="Operator token: sent as the API key to /contextwarden/stats or the live page, it reads every "
    "session (env CONTEXTWARDEN_PROXY_ADMIN_TOKEN). Without it each caller reads its own key's sessions.",
)
@click.option(
    "--workers",
    type=click.IntRange(1, 64),
    default=1,
    show_default=True,
    help="Worker processes on the one port and store: more concurrent sessions than one process serves "
    "(see docs/proxy.md). Needs a SQLite file or PostgreSQL store.",
)
@store_option
@click.pass_context
def command(
    ctx: click.Context,
    host: str,
    port: int,
    mode: str,
    anthropic_upstream: str,
    openai_upstream: str,
    gemini_upstream: str,
    allow_remote: bool,
    policy_name: str | None,
    spend_limit: int | None,
    old_spend_limit: int | None,
    admin_token: str | None,
    workers: int,
    store_url: str | None,
) -> None:
    """Run the proxy: point ANTHROPIC_BASE_URL, an OpenAI base_url or GOOGLE_GEMINI_BASE_URL at it (see docs/proxy.md).

    Without a subcommand it serves until interrupted.
    """
    if old_spend_limit is not None:
        deprecation_note("--budget-limit", "--spend-limit")  # deprecated
        spend_limit = spend_limit or old_spend_limit
    if ctx.invoked_subcommand is not None:
        return
    import uvicorn

    from ..proxy.app import Proxy
    from ..proxy.serve import LOCAL_HOSTS
    from ..proxy.settings import settings_from_env

    if host not in LOCAL_HOSTS and not allow_remote:
        raise click.UsageError(f"refusing to listen on {host}: pass --allow-remote to serve beyond localhost")
    chosen_policy(policy_name)  # an unknown preset is a usage error before anything listens
    if workers > 1 and (store_url or "").startswith("memory:"):
        raise click.UsageError("--workers needs a store the workers share: a SQLite file or a postgresql:// DSN")
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # not a line per upstream call
    if host not in LOCAL_HOSTS:
        logging.getLogger("contextwarden.proxy").warning(
            "listening on %s: anyone who can reach it can spend the credentials clients send through it", host
        )
    settings = settings_from_env(
        mode=mode,
        anthropic_upstream=anthropic_upstream,
        openai_upstream=openai_upstream,
        gemini_upstream=gemini_upstream,
        store_url=store_url,
        policy=policy_name,
        spend_limit=spend_limit,
        admin_token=admin_token,
    )
    if workers > 1:
        from ..proxy.serve import serve_workers

        click.echo(f"contextwarden proxy ({mode}) on http://{host}:{port}, {workers} workers", err=True)
        serve_workers(settings, host=host, port=port, workers=workers)
        return
    proxy = Proxy(settings)
    click.echo(f"contextwarden proxy ({mode}) on http://{host}:{port}", err=True)
    click.echo(f"live view: http://{host}:{port}/contextwarden/ (enter your agent's API key there)", err=True)
    try:
        uvicorn.run(proxy.app, host=host, port=port, log_level="warning")
    finally:
        proxy.close()


@command.command(name="stats")
@click.option("--session", "session_id", default=None, help="Only this session.")
@click.option("--json", "as_json", is_flag=True, help="Print the ledger totals as JSON.")
@click.option(
    "--taxonomy",
    is_flag=True,
    help="Also tag each session's context failures (overflow, stale, under-context...) from its recorded builds.",
)
@store_option
def stats(session_id: str | None, as_json: bool, taxonomy: bool, store_url: str | None) -> None:
    """Print the ledger per session: requests, tokens, billed cost and the saving against direct."""
    from ..proxy._db import ProxyDB
    from ..proxy.failures import with_taxonomy
    from ..proxy.ledger import Ledger

    missing = missing_store(store_url)
    if missing is not None:  # a read-only command: it opens a ledger, never creates one
        raise click.UsageError(f"no proxy ledger at {missing} (run `contextwarden proxy` first, or pass --store)")
    db = ProxyDB(store_url)
    try:
        report = Ledger(db).stats(session_id)
    finally:
        db.close()
    if taxonomy:
        store = open_existing_store(store_url)
        try:
            report = with_taxonomy(store, report)
        finally:
            store.close()
    if as_json:
        echo_json(report)
        return
    out = Console()
    table, dropped = _ledger_table(report, out.width)
    out.print(table)
    if dropped:
        out.print(f"(left out to fit {out.width} columns: {', '.join(dropped)}; --json has every figure)")
    for note in report["model_notes"]:
        click.echo(f"warning: {note}")
    if taxonomy:
        _print_failures(report["sessions"])


_LEDGER_COLUMNS = (
    ("session", lambda s: s["session_id"]),
    ("mode", lambda s: s["mode"]),
    ("requests", lambda s: str(s["requests"])),
    ("fallbacks", lambda s: str(s["fallbacks"])),
    ("sent", lambda s: f"{s['client_tokens']:,}"),
    ("forwarded", lambda s: f"{s['forwarded_tokens']:,}"),
    ("cache read", lambda s: f"{s['cache_read_tokens']:,}"),
    ("billed $", lambda s: f"{s['effective_cost_usd']:.4f}"),
    ("direct $", lambda s: f"{s['client_cost_usd']:.4f}"),
    ("ratio", lambda s: "-" if s["cost_ratio"] is None else f"{s['cost_ratio']:.3f}"),
)
"""The ledger table's columns and how each cell is written."""

_DROP_ORDER = ("cache read", "mode", "fallbacks", "forwarded", "requests")
"""Columns left out, in this order, while the table is wider than the terminal."""

_SESSION_MIN = 12
"""The narrowest the session column gets (its ids wrap; figures never do)."""


def _ledger_table(report: dict[str, Any], width: int) -> tuple[Table, list[str]]:
    """The ledger as a table no wider than ``width``: ids wrap, figures stay whole, columns go if they must."""
    rows = [*report["sessions"], {**report["total"], "session_id": "total"}]
    cells = {name: [cell(s) for s in rows] for name, cell in _LEDGER_COLUMNS}
    need = {name: max(len(name), *(len(c) for c in cells[name])) for name, _ in _LEDGER_COLUMNS}
    need["session"] = _SESSION_MIN
    kept = [name for name, _ in _LEDGER_COLUMNS]
    dropped: list[str] = []
    for name in _DROP_ORDER:
        if sum(need[k] for k in kept) + 3 * len(kept) + 1 <= width:
            break
        kept.remove(name)
        dropped.append(name)
    table = Table(title="contextwarden proxy ledger")
    for name in kept:
        if name == "session":
            table.add_column(name, overflow="fold", min_width=_SESSION_MIN)
        else:
            table.add_column(name, justify="left" if name == "mode" else "right", no_wrap=True, min_width=need[name])
    for i in range(len(rows)):
        table.add_row(*(cells[name][i] for name in kept))
    return table, dropped


def _print_failures(sessions: list[dict[str, Any]]) -> None:
    table = Table(title="context failures per session")
    table.add_column("session", overflow="fold")
    table.add_column("req", justify="right")
    table.add_column("failures", overflow="fold")
    for s in sessions:
        tags = s["taxonomy"]
        if tags is None:
            table.add_row(s["session_id"] or "-", "-", "not in the store")
            continue
        found = ", ".join(f"{name} x{n}" for name, n in tags["counts"].items() if n) or "none"
        table.add_row(s["session_id"], str(tags["requests"]), found)
    Console().print(table)
