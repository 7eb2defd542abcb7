"""``contextwarden tokens FILE``: count a file with every token counter available here.

The file is read as bytes and decoded as UTF-8 with ``surrogateescape``, so binary files and
invalid UTF-8 are counted (undecodable bytes count as replacement characters) instead of failing.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import click
from rich.table import Table

from ..tokens import available_counters
from ._common import console as make_console
from ._common import echo_json, json_options


def count_all(data: bytes) -> list[dict[str, Any]]:
    """One row per available counter: name, exact, tokens, chars, bytes, ms."""
    text = data.decode("utf-8", "surrogateescape")
    rows = []
    for counter in available_counters():
        started = time.perf_counter()
        tokens = counter.count(text)
        elapsed = (time.perf_counter() - started) * 1000
        rows.append(
            {
                "counter": counter.name,
                "exact": counter.exact,
                "tokens": tokens,
                "chars": len(text),
                "bytes": len(data),
                "ms": round(elapsed, 3),
            }
        )
    return rows


@click.command(name="tokens")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, allow_dash=True, path_type=Path))
@json_options()
def command(file: Path, as_json: bool) -> None:
    """Count FILE's tokens with every available counter (FILE may be - for standard input).

    Exact counters need the tokenizers extra: pip install 'contextwarden[tokenizers]'.
    """
    data = sys.stdin.buffer.read() if str(file) == "-" else file.read_bytes()
    rows = count_all(data)
    if as_json:
        echo_json({"file": str(file), "counters": rows})
        return
    table = Table(title=f"{file}: {len(data):,} bytes")
    for column in ("counter", "exact", "tokens", "chars", "bytes", "ms"):
        table.add_column(column, justify="left" if column == "counter" else "right")
    for row in rows:
        table.add_row(
            row["counter"],
            "yes" if row["exact"] else "no",
            f"{row['tokens']:,}",
            f"{row['chars']:,}",
            f"{row['bytes']:,}",
            f"{row['ms']:.1f}",
        )
    make_console().print(table)
