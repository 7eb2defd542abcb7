"""The replay report: one self-contained HTML file with charts and tables, safe for untrusted transcripts.

::

    from contextwarden.replay import replay          # produces ReplayResults
    from contextwarden.report import write_report

    write_report(results, "contextwarden-report.html")

Charts are inline SVG drawn here (no JavaScript, no CDN); see :mod:`contextwarden.report.html` for
how transcript text is kept inert.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..log.events import Event
from ..replay.results import ReplayResults
from .html import CONTENT_SECURITY_POLICY, render_report

__all__ = ["CONTENT_SECURITY_POLICY", "render_report", "write_report"]


def write_report(
    results: ReplayResults,
    path: str | os.PathLike[str],
    *,
    transcripts: Mapping[str, Sequence[Event]] | None = None,
) -> None:
    """Write :func:`render_report` of ``results`` to ``path`` (UTF-8), creating parent directories.

    ``transcripts`` (replayed file → its events, e.g. ``{i.source: i.events for i in inputs}``) adds
    each transcript's task and a request-by-request excerpt beside its charts.
    """
    target = Path(path)
    data = render_report(results, transcripts=transcripts).encode("utf-8")  # fails before any file exists
    target.parent.mkdir(parents=True, exist_ok=True)
    # Write then rename: a failure half-way leaves the previous report (or none), never a truncated one.
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}-", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, target)
    except BaseException:
        os.unlink(tmp)
        raise
