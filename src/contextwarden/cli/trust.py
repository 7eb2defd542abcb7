"""``contextwarden trust``: grant, list and revoke trust in projects.

A trusted project may replace or extend the system prompt with its own ``.contextwarden/SYSTEM.md`` and
``APPEND_SYSTEM.md``. Trust is recorded for the project root (the nearest ancestor holding ``.git``),
so trusting any directory inside a repository trusts the repository.
"""

from __future__ import annotations

from pathlib import Path

import click

from ..errors import UsageError
from ..instructions import find_project_root, is_trusted, list_trusted, revoke_trust, trust_project
from ._common import echo_json, json_options


def _list(as_json: bool) -> None:
    records = list_trusted()
    if as_json:
        echo_json([{"path": r.path, "trusted_at": r.trusted_at} for r in records])
        return
    if not records:
        click.echo("no trusted projects")
    for record in records:
        click.echo(record.path)


@click.command(name="trust")
@click.argument("path", required=False, type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--list", "list_", is_flag=True, help="List trusted projects.")
@click.option("--revoke", is_flag=True, help="Remove the trust record of the project at PATH.")
@json_options()
def command(path: Path | None, list_: bool, revoke: bool, as_json: bool) -> None:
    """Trust the project at PATH (default: the current directory) so its .contextwarden/ files load.

    The record is kept per project root in the contextwarden home (~/.contextwarden/trust.json, or
    $CONTEXTWARDEN_HOME).
    """
    if list_:
        if revoke or path is not None:
            raise UsageError("--list takes no PATH and cannot be combined with --revoke")
        _list(as_json)
        return
    root = find_project_root(path or Path.cwd())
    if revoke:
        changed = revoke_trust(root)
        message = f"revoked trust in {root}" if changed else f"{root} was not trusted; nothing to revoke"
    else:
        changed = not is_trusted(root)
        trust_project(root)
        message = f"trusted {root}" if changed else f"{root} was already trusted"
    if as_json:
        echo_json({"path": str(root), "trusted": not revoke, "changed": changed})
    else:
        click.echo(message)
