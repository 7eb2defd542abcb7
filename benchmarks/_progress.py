"""Progress bars for the benchmark scripts: the CLI's own (Rich, on stderr), not a second one.

``track(items, label)`` yields ``items`` and advances a bar as it goes. Like the CLI's bar it is off
when stderr is not a terminal (a pipe, a log file, CI) and with ``CONTEXTWARDEN_QUIET=1`` (the
benchmarks' spelling of ``--quiet``), so recorded output stays figures only.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sized
from typing import TypeVar

from contextwarden.cli._common import FLAGS, progress

T = TypeVar("T")

QUIET_ENV = "CONTEXTWARDEN_QUIET"


def track(items: Iterable[T], label: str, *, total: int | None = None) -> Iterator[T]:
    """Yield ``items``, showing ``label`` and a bar of ``total`` (``len(items)`` when it has one) steps."""
    if os.environ.get(QUIET_ENV, "") not in ("", "0"):
        FLAGS.quiet = True
    steps = total if total is not None else (len(items) if isinstance(items, Sized) else 0)
    with progress(steps, label) as advance:
        for item in items:
            yield item
            advance(1)
