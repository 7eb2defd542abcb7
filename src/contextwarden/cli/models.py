"""``contextwarden models``: list model profiles (window, max output, tokenizer, prices, caching)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import click
from rich.table import Table

from ..models import ModelProfile, list_profiles, load_profiles_toml
from ._common import console as make_console
from ._common import echo_json, json_options, print_table


def profile_row(profile: ModelProfile) -> dict[str, Any]:
    """Return a profile as a JSON-ready dict (tuples become lists)."""
    return {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(profile).items()}


def _tokens(n: int | None) -> str:
    return "?" if n is None else f"{n:,}"


def _price(value: float | None) -> str:
    return "?" if value is None else f"{value:g}"


@click.command(name="models")
@json_options()
@click.option(
    "--profiles",
    "profile_files",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A TOML file of [models.NAME] tables that add or override profiles (repeatable).",
)
def command(as_json: bool, profile_files: tuple[Path, ...]) -> None:
    """List model profiles: window, max output, tokenizer, prices per million tokens, caching."""
    for path in profile_files:
        load_profiles_toml(path)
    profiles = list_profiles()
    if as_json:
        echo_json([profile_row(p) for p in profiles])
        return
    table = Table(title="Model profiles (prices: USD per million tokens)")
    table.add_column("model", no_wrap=True)
    table.add_column("provider")
    for column in ("window", "max out"):
        table.add_column(column, justify="right")
    table.add_column("tokenizer")
    for column in ("in", "out", "write", "read"):
        table.add_column(column, justify="right")
    table.add_column("caching")
    table.add_column("min prefix", justify="right")
    for p in profiles:
        table.add_row(
            p.name,
            p.provider,
            _tokens(p.context_window),
            _tokens(p.max_output_tokens),
            p.tokenizer,
            _price(p.input_price),
            _price(p.output_price),
            _price(p.cache_write_price),
            _price(p.cache_read_price),
            p.cache_style,
            _tokens(p.min_cacheable_tokens or None),
        )
    console = make_console()
    if not console.is_terminal:
        console = make_console(width=160)  # piped output: no terminal width to fit, keep rows whole
    print_table(console, table)
