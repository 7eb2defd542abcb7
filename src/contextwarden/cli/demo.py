"""``contextwarden demo``: the whole job on the embedded default, in seconds.

It imports a real SWE-agent trajectory bundled with the package (MIT, with its LICENSE beside it)
into the SQLite session store, replays it with the raw history, observation masking and
contextwarden, prints the table and writes the HTML report. Running it again reuses the session it
imported the first time.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import click

from ..errors import SessionNotFound
from ..importers import load_transcript
from ..log.store import SessionStore, open_store
from ..replay import ReplayResults, ReplaySettings, load_inputs, replay
from ..replay.engine import DEFAULT_MODEL
from ..report import write_report
from ..report.verdict import verdict
from ._common import echo_json, json_options, model_option, progress, store_option

DEMO_STRATEGIES: tuple[str, ...] = ("raw", "mask-last-n:10", "contextwarden")
"""What the demo compares: no management, SWE-agent-style masking, and contextwarden's default policy."""
DEFAULT_TRAJECTORY = "sphinx-doc__sphinx-9711.traj"
"""A real session (mini-swe-agent with Gemini 3 Pro on SWE-bench Verified, 37 model calls) whose history
grows enough for contextwarden to matter: under the default model it costs less than the raw history and
than masking, and keeps every probe (docs/benchmarks.md, "The demo's session")."""
REPORT_NAME = "contextwarden-report.html"
"""The report's file name inside ``--out``."""


def bundled_trajectories() -> dict[str, Path]:
    """Bundled real trajectories by name (file stem) → path."""
    root = resources.files("contextwarden") / "data" / "trajectories"
    found: dict[str, Path] = {}
    for folder in sorted(root.iterdir(), key=lambda p: p.name):
        if not folder.is_dir():
            continue
        for entry in sorted(folder.iterdir(), key=lambda p: p.name):
            if entry.name.endswith((".traj", ".json")):
                found[entry.name.rsplit(".", 1)[0]] = Path(str(entry))
    return found


def _import(store: SessionStore, path: Path) -> tuple[str, bool]:
    """The demo session for ``path``: reused when an earlier demo imported the same file, else imported now."""
    from .importcmd import _store_one

    source = str(path.resolve())
    base = f"demo-{path.stem}"
    name, number = base, 1
    while True:
        try:
            info = store.get_session(name)
        except SessionNotFound:
            break
        if info.metadata.get("source") == source and info.last_seq > 0:
            return name, False
        number += 1
        name = f"{base}-{number}"
    # Salted with the demo's session name: an earlier `import` of the same file holds the unsalted ids.
    _store_one(store, name, load_transcript(path, id_salt=name))
    return name, True


def run_demo(
    *,
    store_url: str | None,
    trajectory: str,
    model: str,
    out: Path,
    strategies: Sequence[str] = DEMO_STRATEGIES,
    show_progress: bool = False,
) -> dict[str, Any]:
    """Import, replay, report; returns what happened (session, report path, results, seconds)."""
    started = time.perf_counter()
    path = bundled_trajectories()[trajectory]
    store = open_store(store_url)
    try:
        session, imported = _import(store, path)
        inputs = load_inputs([session], store=store)
        total = sum(i.requests for i in inputs) * len(strategies)
        with progress(total if show_progress else 0, "replaying") as advance:
            results = replay(inputs, list(strategies), settings=ReplaySettings(model=model), progress=advance)
    finally:
        store.close()
    report = out / REPORT_NAME
    write_report(results, report, transcripts={i.source: i.events for i in inputs})
    return {
        "session": session,
        "imported": imported,
        "trajectory": str(path),
        "report": str(report),
        "results": results,
        "seconds": time.perf_counter() - started,
    }


@click.command(name="demo")
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    show_default=True,
    help=f"Directory the report ({REPORT_NAME}) is written to.",
)
@click.option(
    "--trajectory",
    type=click.Choice(sorted(bundled_trajectories())),
    default=DEFAULT_TRAJECTORY,
    show_default=True,
    help="Which bundled real trajectory to use.",
)
@model_option(default=DEFAULT_MODEL, help="Model profile to budget and price for.")
@click.option(
    "--proxy",
    "through_proxy",
    is_flag=True,
    help="Instead: play the trajectory through the proxy (a bundled scripted upstream, the official Anthropic "
    "SDK as the client), offline; print the ledger and the live page's address.",
)
@click.option("--serve", is_flag=True, help="With --proxy: keep the proxy and its live page up until Ctrl-C.")
@click.option(
    "--port", default=0, type=click.IntRange(0, 65535), help="With --proxy: the proxy's port (default: a free one)."
)
@json_options()
@store_option
def command(
    out_dir: Path,
    trajectory: str,
    model: str,
    through_proxy: bool,
    serve: bool,
    port: int,
    as_json: bool,
    store_url: str | None,
) -> None:
    """Replay a bundled real trajectory with raw, masking and contextwarden; print the table, write the report.

    The trajectory is imported into the session store first (reused on later runs). With --proxy
    it goes through the proxy instead, as an agent's session would.
    """
    if through_proxy:
        from ._demo_proxy import proxy_demo

        proxy_demo(
            bundled_trajectories()[trajectory],
            model=model,
            store_url=store_url,
            port=port,
            serve=serve,
            as_json=as_json,
        )
        return
    if serve:
        raise click.UsageError("--serve goes with --proxy")
    done = run_demo(store_url=store_url, trajectory=trajectory, model=model, out=out_dir, show_progress=not as_json)
    results: ReplayResults = done["results"]
    if as_json:
        echo_json(
            {
                **results.to_dict(),
                "session": done["session"],
                "report": done["report"],
                "seconds": round(done["seconds"], 2),
            }
        )
        return
    from .replay import _print  # the replay command's table: one way to show these figures

    verb = "imported" if done["imported"] else "reused"
    calls = results.strategies[0].figures()["requests"] if results.strategies else 0
    click.echo(f"{verb} {Path(done['trajectory']).name} as session {done['session']}: {calls} model calls replayed")
    _print(results)
    sentence = verdict(results)
    if sentence:
        click.echo(sentence)
    click.echo(f"report: {done['report']}  ({done['seconds']:.1f} s)")
