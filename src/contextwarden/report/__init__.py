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
from pathlib import Path

from ..replay.results import ReplayResults
from .html import CONTENT_SECURITY_POLICY, render_report

__all__ = ["CONTENT_SECURITY_POLICY", "render_report", "write_report"]


def write_report(results: ReplayResults, path: str | os.PathLike[str]) -> None:
    """Write :func:`render_report` of ``results`` to ``path`` (UTF-8), creating parent directories."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(render_report(results), encoding="utf-8")
