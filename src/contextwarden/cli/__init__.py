"""The ``contextwarden`` command: a thin Click layer over the library.

Subcommands live one per module and load lazily, so ``contextwarden --help`` stays fast and a
command whose optional dependency is missing fails alone with a clear message.
"""

from __future__ import annotations

import importlib
import sys

import click

from ..errors import ContextWardenError

_COMMANDS: dict[str, tuple[str, str]] = {
    "sessions": ("sessions", "Manage stored sessions: ls, show, export, import, rm."),
    "tokens": ("tokens", "Count a file's tokens with every available counter."),
    "models": ("models", "List model profiles: window, max output, prices."),
    "import": ("importcmd", "Import agent transcripts (Claude Code, Codex, SWE-agent, OpenHands, ...)."),
    "replay": ("replay", "Replay transcripts under context strategies and compare tokens and cost."),
    "inspect": ("inspect", "Show what the model would see on a session's turn, and why."),
    "lint": ("lint", "Check model-visible context against the six rules."),
    "trust": ("trust", "Trust a project so its .contextwarden/ files are loaded."),
    "proxy": ("proxy", "Run the local proxy that manages context for any agent; proxy stats prints its ledger."),
    "demo": ("demo", "Import a bundled real trajectory, replay it, print the table, write a report."),
}


class _LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(_COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = _COMMANDS.get(cmd_name)
        if entry is None:
            return None
        module = importlib.import_module(f"{__name__}.{entry[0]}")
        command = module.command
        assert isinstance(command, click.Command)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, help_text) for name, (_, help_text) in sorted(_COMMANDS.items())]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=_LazyGroup)
@click.version_option(package_name="contextwarden")
def cli() -> None:
    """Decide what an LLM agent's model sees on each call, and measure it on real transcripts."""


def main(argv: list[str] | None = None) -> None:
    """Run the CLI; a contextwarden error becomes one line on stderr and exit status 1."""
    try:
        code = cli.main(args=argv, prog_name="contextwarden", standalone_mode=False)
        if isinstance(code, int) and code:  # ctx.exit(n) returns n when not standalone
            sys.exit(code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except (ContextWardenError, OSError) as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(1)
