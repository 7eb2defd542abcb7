"""``contextwarden demo --proxy``: a real transcript through the proxy (:mod:`contextwarden.proxy.demo`), printed."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from ._common import echo_json, progress


def proxy_demo(transcript: Path, *, model: str, store_url: str | None, port: int, serve: bool, as_json: bool) -> None:
    """Play ``transcript`` through a proxy; print its ledger and the live page's address."""
    from ..proxy.demo import DEMO_KEY, play, requests_in, running

    started = time.perf_counter()
    calls = requests_in(transcript)
    if not as_json:
        click.echo(f"playing {transcript.name} ({calls} model calls) through the proxy with the Anthropic SDK")
    with running(store_url, port=port) as rig:
        with progress(0 if as_json else calls, "through the proxy") as advance:
            session = play(rig, transcript, model=model, advance=advance)
        stats = rig.proxy.pipeline.ledger.stats(session)
        page = f"{rig.url}/contextwarden/"
        seconds = time.perf_counter() - started
        if as_json:
            doc = {"session": session, "stats": stats, "live_page": page, "key": DEMO_KEY, "seconds": round(seconds, 2)}
            echo_json(doc)
        else:
            _print(stats, seconds)
            click.echo(f"live page: {page} (enter the key {DEMO_KEY})")
        if serve:
            click.echo("serving until Ctrl-C", err=True)
            try:
                while True:
                    time.sleep(1)
            except KeyboardInterrupt:
                pass
        elif not as_json:
            click.echo("(the proxy stops now; run with --serve to keep it and the page up)")


def _print(stats: dict[str, Any], seconds: float) -> None:
    from .proxy import _ledger_table

    out = Console()
    table, dropped = _ledger_table(stats, out.width)
    out.print(table)
    if dropped:
        out.print(f"(left out to fit {out.width} columns: {', '.join(dropped)})")
    total = stats["total"]
    ratio = "-" if total["cost_ratio"] is None else f"{total['cost_ratio']:.2f}x"
    click.echo(
        f"Through the proxy {total['requests']} calls forwarded {total['forwarded_tokens']:,} of the "
        f"{total['client_tokens']:,} input tokens the client sent, billed ${total['effective_cost_usd']:.4f} "
        f"against ${total['client_cost_usd']:.4f} direct ({ratio}), in {seconds:.1f} s."
    )
