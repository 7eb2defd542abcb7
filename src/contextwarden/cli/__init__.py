"""The ``contextwarden`` command: a thin Click layer over the library.

Subcommands live one per module and load lazily, so ``contextwarden --help`` stays fast and a
command whose optional dependency is missing fails alone with a clear message.
"""

from __future__ import annotations

import importlib
import io
import sys
import traceback
from typing import Any, NoReturn

import click

from .._extras import install_hint
from ..errors import ContextWardenError
from ._common import FLAGS, VERBOSE_ENV, deprecation_note, flag_options, verbose

_COMMANDS: dict[str, tuple[str, str]] = {
    "sessions": ("sessions", "Manage stored sessions: ls, show, export, import, rm."),
    "tokens": ("tokens", "Count a file's tokens with every available counter."),
    "models": ("models", "List model profiles: window, max output, prices."),
    "import": ("importcmd", "Import agent transcripts (Claude Code, Codex, SWE-agent, OpenHands, ...)."),
    "replay": ("replay", "Replay transcripts under context strategies and compare tokens and cost."),
    "inspect": ("inspect", "Show what the model would see on a session's turn, and why."),
    "lint": ("lint", "Check model-visible context against the six rules."),
    "spend": ("spend", "Show what a session tree has spent of a weighted-token spend limit."),
    "trust": ("trust", "Trust a project so its .contextwarden/ files are loaded."),
    "proxy": ("proxy", "Run the local proxy that manages context for any agent; proxy stats prints its ledger."),
    "mcp": ("mcp", "Serve the proxy's sessions over MCP: recall masked outputs, search history, view the window."),
    "demo": ("demo", "Import a bundled real trajectory, replay it, print the table, write a report."),
}

_RENAMED_COMMANDS: dict[str, str] = {
    "budget": "spend",  # deprecated
}
"""Old command names that still run the new command for one release (hidden from --help, with a note)."""


class _LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(_COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in _RENAMED_COMMANDS:
            new = _RENAMED_COMMANDS[cmd_name]
            deprecation_note(f"`contextwarden {cmd_name}`", f"`contextwarden {new}`")
            cmd_name = new
        entry = _COMMANDS.get(cmd_name)
        if entry is None:
            return None
        module = importlib.import_module(f"{__name__}.{entry[0]}")
        command = module.command
        assert isinstance(command, click.Command)
        _add_flags(command)
        return command

    def make_context(
        self, info_name: str | None, args: list[str], parent: click.Context | None = None, **extra: Any
    ) -> click.Context:
        if parent is None:  # one process may run several invocations (tests, embedding): each starts afresh
            FLAGS.verbose = FLAGS.quiet = False
        return super().make_context(info_name, args, parent=parent, **extra)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, help_text) for name, (_, help_text) in sorted(_COMMANDS.items())]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


def _add_flags(command: click.Command) -> None:
    """Give ``command`` (and a group's subcommands) ``--verbose`` and ``--quiet``, once."""
    if not any(p.name == "verbose" for p in command.params):
        command.params.extend(flag_options())
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            _add_flags(sub)


@click.group(cls=_LazyGroup)
@click.version_option(package_name="contextwarden")
def cli() -> None:
    """Decide what an LLM agent's model sees on each call, and measure it on real transcripts.

    Errors are one line on stderr with a non-zero exit status; --verbose (or CONTEXTWARDEN_VERBOSE=1)
    adds the traceback.
    """


_add_flags(cli)


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text or type(exc).__name__


def _usage_line(exc: click.ClickException) -> str:
    """Click's message on one line, with where to read more for a misused command."""
    line = " ".join(exc.format_message().split())
    if isinstance(exc, click.UsageError) and exc.ctx is not None:
        line += f" (see `{exc.ctx.command_path} --help`)"
    return line


def _fail(exc: BaseException, message: str, code: int) -> NoReturn:
    if verbose():
        traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
    click.echo(message, err=True)
    sys.exit(code)


def main(argv: list[str] | None = None) -> None:
    """Run the CLI: every error is one line on stderr and a non-zero exit status.

    Usage errors exit 2, errors about the input, the store or the environment 1, an interrupt 130, and
    anything unexpected (a bug) 1 with a line saying how to get its traceback (``--verbose``).
    """
    _tolerant_streams()
    try:
        code = cli.main(args=argv, prog_name="contextwarden", standalone_mode=False)
        if isinstance(code, int) and code:  # ctx.exit(n) returns n when not standalone
            sys.exit(code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        _fail(exc, f"error: {_usage_line(exc)}", exc.exit_code)
    except (click.exceptions.Abort, KeyboardInterrupt) as exc:
        _fail(exc, "aborted", 130)
    except BrokenPipeError:
        # The reader went away (``| head``); nothing left to say to it.
        sys.stderr.close()
        sys.exit(1)
    except (ContextWardenError, OSError) as exc:
        _fail(exc, f"error: {_one_line(exc)}", 1)
    except ImportError as exc:  # an optional dependency is missing: say which extra brings it
        hint = install_hint(exc)
        if hint is None:
            _fail(exc, _unexpected(exc), 1)
        _fail(exc, f"error: {' '.join(hint.split())}", 1)
    except Exception as exc:
        _fail(exc, _unexpected(exc), 1)


def _unexpected(exc: BaseException) -> str:
    return (
        f"error: unexpected {type(exc).__name__}: {_one_line(exc)} (a bug: rerun with --verbose "
        f"or {VERBOSE_ENV}=1 for the traceback and report it)"
    )


def _tolerant_streams() -> None:
    """Never fail on printing: a character the terminal cannot encode is replaced, not raised."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="replace")
