"""The benchmarks' progress bar: off when stderr is not a terminal, on (and on stderr) when it is."""

from __future__ import annotations

import io
import sys

import pytest
from rich.console import Console

from _paths import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))

import _progress

from contextwarden.cli import _common


def _capture(monkeypatch: pytest.MonkeyPatch, *, terminal: bool) -> str:
    buffer = io.StringIO()

    def console(*, stderr: bool = False, width: int | None = None) -> Console:
        return Console(file=buffer, force_terminal=terminal, width=80)

    monkeypatch.setattr(_common, "console", console)
    assert list(_progress.track(range(5), "benchmarking")) == [0, 1, 2, 3, 4]
    return buffer.getvalue()


def test_track_is_silent_when_stderr_is_not_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_common, "FLAGS", _common._Flags())
    monkeypatch.setattr(_progress, "FLAGS", _common.FLAGS)
    assert _capture(monkeypatch, terminal=False) == ""


def test_track_draws_on_a_terminal_unless_quiet(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_common, "FLAGS", _common._Flags())
    monkeypatch.setattr(_progress, "FLAGS", _common.FLAGS)
    monkeypatch.delenv(_progress.QUIET_ENV, raising=False)
    assert "benchmarking" in _capture(monkeypatch, terminal=True)
    monkeypatch.setenv(_progress.QUIET_ENV, "1")
    assert _capture(monkeypatch, terminal=True) == ""
