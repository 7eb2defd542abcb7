"""What every subcommand shares: the store, the model, JSON output, the console, progress, verbosity.

Conventions (one of each, for every command):

- ``--json`` prints the machine-readable result on stdout and nothing else there; ``--output FILE``
  writes that JSON to FILE instead, where a command has a file worth keeping.
- A read-only command never creates anything: a store that does not exist is reported, not made.
- Text from a transcript is data: the console never reads it as Rich markup or emoji codes.
- Progress bars go to stderr, only when stderr is a terminal, and never with ``--quiet``.
- An unknown ``--model`` is an error that names the known profiles.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import click
from rich.console import Console
from rich.measure import Measurement
from rich.table import Table

from ..log.store import SessionStore, check_store_url, open_store
from ..window.policies.normalize import strip_escapes

F = TypeVar("F", bound=Callable[..., Any])

STORE_ENV = "CONTEXTWARDEN_STORE"
VERBOSE_ENV = "CONTEXTWARDEN_VERBOSE"
"""Set to 1 to get tracebacks (the same as ``--verbose``)."""


@dataclass
class _Flags:
    verbose: bool = False
    quiet: bool = False


FLAGS = _Flags()
"""``--verbose`` / ``--quiet`` of the current invocation (set by the group and by each command)."""


def verbose() -> bool:
    """Whether tracebacks are wanted (``--verbose`` or ``CONTEXTWARDEN_VERBOSE=1``)."""
    return FLAGS.verbose or os.environ.get(VERBOSE_ENV, "") not in ("", "0")


def _set_flag(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value and param.name is not None:
        setattr(FLAGS, param.name, True)


def flag_options() -> list[click.Option]:
    """``--verbose`` and ``--quiet``, accepted by the group and by every command, before or after arguments."""
    return [
        click.Option(
            ["--verbose", "-v"],
            is_flag=True,
            expose_value=False,
            is_eager=True,
            callback=_set_flag,
            help=f"Show the traceback of an error (or set {VERBOSE_ENV}=1).",
        ),
        click.Option(
            ["--quiet", "-q"],
            is_flag=True,
            expose_value=False,
            is_eager=True,
            callback=_set_flag,
            help="No progress bars.",
        ),
    ]


# --------------------------------------------------------------------------- output


def console(*, stderr: bool = False, width: int | None = None) -> Console:
    """A Rich console that prints text as given: no markup, no emoji codes, no highlighting.

    Transcript text such as ``[/bold]`` is shown literally instead of being parsed (or failing to parse).
    """
    return Console(stderr=stderr, markup=False, emoji=False, highlight=False, width=width, soft_wrap=False)


def print_table(out: Console, table: Table) -> None:
    """Print ``table`` whole, or, when it is wider than the terminal, each row as wrapped ``column value`` pairs.

    Squeezing eleven columns into 80 cuts every cell to a letter or two; one line per row keeps each
    value whole (an id, a number), wrapped between words.
    """
    if Measurement.get(out, out.options.update_width(10_000), table).maximum <= out.width:
        out.print(table)
        return
    headers = [str(column.header) for column in table.columns]
    rows = zip(*([str(cell) for cell in column.cells] for column in table.columns), strict=True)
    if table.title:
        out.print(str(table.title))
    for first, *rest in rows:
        pairs = ", ".join(f"{header} {cell}" for header, cell in zip(headers[1:], rest, strict=True) if cell)
        out.print(f"{first}: {pairs}")


def echo_json(data: Any, output: Path | None = None) -> None:
    """Print ``data`` as indented JSON on stdout, or write it to ``output`` (and say so on stderr)."""
    text = json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n"
    if output is None:
        sys.stdout.write(text)
        return
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text, encoding="utf-8", errors="replace")
    click.echo(f"wrote {output}", err=True)


def json_options(*, output: bool = False) -> Callable[[F], F]:
    """Add ``--json`` (and with ``output=True``, ``--output FILE``) in the shared spelling."""

    def decorate(func: F) -> F:
        if output:
            func = click.option(
                "--output",
                "output",
                type=click.Path(dir_okay=False, path_type=Path),
                default=None,
                help="Write the JSON result to this file (the table still prints).",
            )(func)
        return click.option(
            "--json", "as_json", is_flag=True, help="Print the result as JSON on stdout instead of the table."
        )(func)

    return decorate


@contextmanager
def progress(total: int, label: str, *, minimum: int = 1) -> Iterator[Callable[[int], None]]:
    """A progress bar on stderr for ``total`` steps; yields ``advance(n)``.

    Off (a no-op) when stderr is not a terminal, with ``--quiet``, or when there are fewer than
    ``minimum`` steps; transient, so the final summary line the command prints stays the last word.
    """
    err = console(stderr=True)
    if FLAGS.quiet or not err.is_terminal or total < minimum:
        yield lambda n: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    columns = (TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress(*columns, console=err, transient=True) as bar:
        task = bar.add_task(label, total=total)
        yield lambda n: bar.advance(task, n)


# --------------------------------------------------------------------------- store and model


def store_option(func: F) -> F:
    """Add ``--store URL`` (a SQLite path or a ``postgresql://`` DSN; default ``.contextwarden/sessions.db``)."""
    return click.option(
        "--store",
        "store_url",
        default=None,
        envvar=STORE_ENV,
        help="Session store: a SQLite file path or a postgresql:// DSN "
        "(default: .contextwarden/sessions.db; env CONTEXTWARDEN_STORE).",
    )(func)


def default_store_url() -> str:
    """The store a command uses when none is given."""
    return os.environ.get(STORE_ENV) or os.path.join(".contextwarden", "sessions.db")


def missing_store(store_url: str | None) -> str | None:
    """The SQLite path named by ``store_url`` (or the default) when no such file exists, else ``None``."""
    url = check_store_url(store_url or default_store_url())
    if url.startswith(("postgresql://", "postgres://")) or url in ("memory:", "memory://"):
        return None
    path = url[len("sqlite:///") :] if url.startswith("sqlite:///") else url
    return None if os.path.exists(path) else path


def open_existing_store(store_url: str | None) -> SessionStore:
    """Open a store for reading: a SQLite file that does not exist is an error, never created."""
    path = missing_store(store_url)
    if path is not None:
        raise click.UsageError(f"no session store at {path} (import a transcript first, or pass --store)")
    return open_store(store_url or default_store_url())


def _check_model(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is None:
        return None
    from ..errors import UnknownModelError
    from ..models import resolve_profile

    try:
        profile = resolve_profile(value)  # the one rule the library applies too
    except UnknownModelError as exc:
        raise click.BadParameter(str(exc)) from None
    if profile.family_match is not None:
        click.echo(
            f"note: model {value!r} is not in the model table: using {profile.family_match!r}, its family",
            err=True,
        )
    return value


def model_option(*, default: str | None, help: str) -> Callable[[F], F]:
    """Add ``--model NAME``, checked against the model profiles (an unknown name names the known ones)."""
    return click.option("--model", default=default, show_default=default is not None, callback=_check_model, help=help)


_SURROGATE = re.compile("[\ud800-\udfff]")


def display_text(text: str) -> str:
    """Make stored text safe for a terminal: escape sequences removed, control characters replaced.

    Lone surrogates (undecodable bytes, which no terminal or UTF-8 stream accepts) become U+FFFD.
    """
    text = _SURROGATE.sub("\ufffd", strip_escapes(text))
    return "".join(c if c.isprintable() else " " for c in text)


def deprecation_note(old: str, new: str) -> None:
    """One line on stderr: ``old`` (a command or an option) still works for one release; ``new`` replaces it."""
    click.echo(f"contextwarden: {old} is deprecated and will be removed in the next release; use {new}", err=True)
