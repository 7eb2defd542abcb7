"""People at the terminal: one-line errors with a non-zero exit, --verbose tracebacks, one --json convention,
read-only commands that create nothing, an unknown model named as such, progress on a terminal only,
tables readable at 80 columns."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import threading
from importlib import resources
from pathlib import Path

import pytest

import contextwarden.cli.models as models_cli
from _paths import ROOT
from contextwarden.cli import main

SRC = ROOT / "src"
TRAJ = Path(str(resources.files("contextwarden") / "data" / "trajectories" / "swe-agent" / "ctf__i_got_id_demo.traj"))


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        main(argv)
        code = 0
    except SystemExit as done:
        code = int(done.code or 0)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CONTEXTWARDEN_STORE", raising=False)
    monkeypatch.delenv("CONTEXTWARDEN_VERBOSE", raising=False)
    return tmp_path


USER_ERRORS = [
    ["inspect", "nosuch"],
    ["inspect"],
    ["sessions", "show", "nosuch"],
    ["replay", "nosuch-file-or-session"],
    ["replay", str(TRAJ), "--strategy", "bogus"],
    ["import", str(TRAJ), "--format", "codex"],
    ["import", "missing.json"],
    ["lint", "nosuch"],
    ["tokens", "missing.txt"],
    ["nosuchcommand"],
    ["replay", str(TRAJ), "--model", "gpt-9-imaginary"],
]


@pytest.mark.parametrize("argv", USER_ERRORS, ids=" ".join)
def test_every_user_error_is_one_line_with_a_non_zero_exit(
    argv: list[str], in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(argv, capsys)
    assert code != 0
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    "argv",
    [
        ["replay", str(TRAJ), "--no-optimum"],
        ["demo"],
        ["inspect", "s"],
        ["lint", "s"],
    ],
    ids=lambda a: a[0],
)
def test_an_unknown_model_is_an_error_that_names_the_known_ones_everywhere(
    argv: list[str], in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run([*argv, "--model", "gpt-9-imaginary"], capsys)
    assert code == 2
    assert "unknown model 'gpt-9-imaginary'; known models:" in err and "gpt-4o" in err and "claude-sonnet-4-5" in err


def test_verbose_and_its_env_var_show_the_traceback(
    in_tmp: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for argv in (
        ["--verbose", "sessions", "show", "x", "--store", "memory:"],
        ["sessions", "show", "x", "-v", "--store", "memory:"],
    ):
        code, _, err = run([*argv], capsys)
        assert code == 1 and "Traceback (most recent call last)" in err and "SessionNotFound" in err
    monkeypatch.setenv("CONTEXTWARDEN_VERBOSE", "1")
    code, _, err = run(["sessions", "show", "x", "--store", "memory:"], capsys)
    assert code == 1 and "Traceback" in err


def test_a_bug_is_one_line_that_says_how_to_get_the_traceback(
    in_tmp: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken() -> list[object]:
        raise RuntimeError("planted bug")

    monkeypatch.setattr(models_cli, "list_profiles", broken)
    code, _, err = run(["models"], capsys)
    assert code == 1 and err.strip().splitlines() == [
        "error: unexpected RuntimeError: planted bug (a bug: rerun with --verbose or CONTEXTWARDEN_VERBOSE=1 "
        "for the traceback and report it)"
    ]
    code, _, err = run(["models", "--verbose"], capsys)
    assert code == 1 and "Traceback" in err and "planted bug" in err


def test_read_only_commands_never_create_a_store(in_tmp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (
        ["sessions", "ls"],
        ["sessions", "ls", "--json"],
        ["sessions", "show", "x"],
        ["sessions", "export", "x"],
        ["sessions", "rm", "x", "--yes"],
        ["inspect", "x"],
        ["inspect", "x", "--store", "elsewhere/s.db"],
        ["lint", "x", "--store", "elsewhere/s.db"],
        ["replay", "x", "--store", "elsewhere/s.db"],
        ["spend", "x", "--limit", "100"],
        ["proxy", "stats"],
        ["proxy", "stats", "--json", "--store", "elsewhere/s.db"],
    ):
        run(argv, capsys)
        assert list(in_tmp.iterdir()) == [], argv
    code, out, _ = run(["sessions", "ls", "--json"], capsys)
    assert code == 0 and json.loads(out) == []


def test_json_goes_to_stdout_alone_and_output_writes_a_file(in_tmp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["replay", str(TRAJ), "--strategy", "raw", "--no-optimum", "--json"], capsys)
    assert code == 0, err
    assert json.loads(out)["strategies"][0]["name"] == "raw"  # nothing but the JSON on stdout
    code, out, err = run(
        ["replay", str(TRAJ), "--strategy", "raw", "--no-optimum", "--output", "figures/r.json"], capsys
    )
    assert code == 0 and "retention" in out  # the table still prints, then a one-line summary
    assert out.strip().splitlines()[-1].startswith("replayed 21 requests from 1 transcript(s) under 1 strategies in ")
    assert json.loads((in_tmp / "figures" / "r.json").read_text())["strategies"][0]["name"] == "raw"
    for argv in (["models", "--json"], ["tokens", str(TRAJ), "--json"], ["import", str(TRAJ), "--json"]):
        code, out, err = run(argv, capsys)
        assert code == 0 and json.loads(out), (argv, err)


def _on_a_terminal(argv: list[str], cwd: Path, columns: int = 80) -> tuple[int, str, str]:
    """Run the CLI with stdout and stderr each on its own pseudo-terminal; return (exit, stdout, stderr)."""
    masters, slaves = zip(*(pty.openpty() for _ in range(2)), strict=True)
    chunks: list[list[bytes]] = [[], []]

    def drain(index: int) -> None:
        while True:
            try:
                data = os.read(masters[index], 65536)
            except OSError:
                return
            if not data:
                return
            chunks[index].append(data)

    readers = [threading.Thread(target=drain, args=(i,), daemon=True) for i in range(2)]
    for reader in readers:
        reader.start()
    env = {**os.environ, "PYTHONPATH": str(SRC), "COLUMNS": str(columns), "LINES": "40", "TERM": "xterm"}
    env.pop("CONTEXTWARDEN_STORE", None)
    env.pop("NO_COLOR", None)
    proc = subprocess.run(
        [sys.executable, "-m", "contextwarden", *argv],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=slaves[0],
        stderr=slaves[1],
        timeout=600,
        check=False,
    )
    for fd in slaves:
        os.close(fd)
    for reader in readers:
        reader.join(timeout=10)
    for fd in masters:
        os.close(fd)
    out, err = (b"".join(c).decode("utf-8", "replace") for c in chunks)
    return proc.returncode, out, err


def _visible(text: str) -> list[str]:
    import re

    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text).replace("\r\n", "\n")
    return [line for line in plain.split("\n") if line.strip()]


def test_progress_shows_on_a_terminal_and_the_table_fits_80_columns(tmp_path: Path) -> None:
    code, out, err = _on_a_terminal(["replay", str(TRAJ), "--no-optimum"], tmp_path)
    assert code == 0, err
    assert "replaying" in err and "/63" in err  # the bar on stderr: 21 calls x 3 strategies
    lines = _visible(out)
    assert max(len(line) for line in lines) <= 80
    assert any(all(name in line for name in ("raw", "mask-last-n:10", "contextwarden")) for line in lines)
    assert any(line.startswith("│ retention") for line in lines)  # one row per figure, words whole


def test_quiet_turns_progress_off(tmp_path: Path) -> None:
    code, _, err = _on_a_terminal(["replay", str(TRAJ), "--no-optimum", "--quiet"], tmp_path)
    assert code == 0 and "replaying" not in err


def test_no_progress_when_stderr_is_not_a_terminal(in_tmp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["replay", str(TRAJ), "--no-optimum"], capsys)
    assert code == 0 and err == ""


def test_inspect_is_readable_at_80_columns(tmp_path: Path) -> None:
    assert _on_a_terminal(["import", str(TRAJ)], tmp_path)[0] == 0
    code, out, err = _on_a_terminal(["inspect", TRAJ.stem, "--model", "gpt-4o-mini"], tmp_path)
    assert code == 0, err
    lines = _visible(out)
    assert max(len(line) for line in lines) <= 80
    # each item is its facts on one line and its text on the next, not one word per line
    assert any("user · conversation · 1 goal" in line for line in lines)
    assert any("We're currently solving the following CTF challenge." in line for line in lines)


def test_wide_tables_become_one_wrapped_line_per_row_at_80_columns(tmp_path: Path) -> None:
    code, out, err = _on_a_terminal(["models"], tmp_path)
    assert code == 0, err
    lines = _visible(out)
    assert max(len(line) for line in lines) <= 80
    assert any(line.startswith("gpt-4o: provider openai, window 128,000,") for line in lines)  # values whole
    code, out, _ = _on_a_terminal(["models"], tmp_path, columns=200)
    assert code == 0 and any(line.startswith("┃ model") for line in _visible(out))  # the table where it fits
