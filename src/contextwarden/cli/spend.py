"""``contextwarden spend SESSION --limit N``: what a session tree has spent of a weighted spend limit.

The tree is the session's root and every session under it (subagents, forks). Spent tokens are
weighted as the library's :class:`~contextwarden.plan.spend.SpendTracker` weighs them, from the usage
reports in the logs; the same limit passed to ``ContextManager(spend_tracker=...)`` stops builds
once it is reached. Exit status 1 when the tree has reached its limit.
"""

from __future__ import annotations

import os
import sys

import click

from ..errors import SessionNotFound, UsageError
from ..log.store import open_store
from ..plan.spend import SpendLimit, SpendTracker
from ._common import default_store_url, echo_json, store_option


@click.command(name="spend")
@click.argument("session_id")
@click.option("--limit", type=int, required=True, help="Weighted tokens the whole tree may spend.")
@click.option("--sampling-weight", type=float, default=1.0, show_default=True, help="Weight of an output token.")
@click.option(
    "--prefill-weight", type=float, default=0.25, show_default=True, help="Weight of an uncached input token."
)
@click.option("--json", "as_json", is_flag=True, help="Print the usage as JSON.")
@store_option
def command(
    session_id: str,
    limit: int,
    sampling_weight: float,
    prefill_weight: float,
    as_json: bool,
    store_url: str | None,
) -> None:
    """Show what SESSION's tree (its root and every subagent) has spent of a weighted spend limit."""
    url = store_url or default_store_url()
    if store_url is None and not os.path.exists(url):
        raise click.UsageError(f"no session store at {url} (pass --store)")
    try:
        policy = SpendLimit(limit=limit, sampling_weight=sampling_weight, prefill_weight=prefill_weight)
    except UsageError as exc:
        raise click.UsageError(str(exc)) from None
    store = open_store(url)
    try:
        usage = SpendTracker(policy).usage(store, session_id)
    except SessionNotFound:
        raise click.UsageError(f"no session {session_id!r} in {url}") from None
    finally:
        store.close()
    if as_json:
        echo_json(
            {
                "root": usage.root_session_id,
                "sessions": list(usage.sessions),
                "spent": round(usage.spent, 2),
                "limit": usage.limit,
                "remaining": round(usage.remaining, 2),
                "exhausted": usage.exhausted,
            }
        )
    else:
        click.echo(
            f"tree {usage.root_session_id} ({len(usage.sessions)} session(s)): spent {usage.spent:,.0f} of "
            f"{usage.limit:,} weighted tokens, {usage.remaining:,.0f} left"
            + (" (limit reached: builds in this tree raise SpendLimitReached)" if usage.exhausted else "")
        )
    sys.exit(1 if usage.exhausted else 0)
