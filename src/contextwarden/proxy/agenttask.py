"""The long coding task a scripted agent plays with a real client, in the client's own tools.

:func:`make_repo` builds the scratch git repository the task works in: a ~2,000-line ``engine.py``
with an off-by-one bug, its tests, a ~20 KB log and a few small modules. :func:`claude_code_script`
and :func:`codex_script` are the task for each client (about 30 tool calls): large file reads, whole
and by range, long command outputs, a re-read of an unchanged file, a failing test run, the edit,
a passing test run and a commit. :func:`repo_state` says what the task left.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from .agentscript import Script, Step

COMMIT_SUBJECT = "Fix total() off-by-one"
"""The subject of the commit the task makes."""

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Conformance",
    "GIT_AUTHOR_EMAIL": "conformance@example.invalid",
    "GIT_COMMITTER_NAME": "Conformance",
    "GIT_COMMITTER_EMAIL": "conformance@example.invalid",
}
"""The identity commits in the scratch repository are made under (the scratch HOME has no git config)."""

BUG_LINE = "    return sum(values) - 1"
FIXED_LINE = "    return sum(values)"
ENGINE_LINES = 2000


def make_repo(path: Path) -> Path:
    """A git repository with one commit: a ~2,000-line ``engine.py`` with a bug, its tests, a ~30 KB log."""
    path.mkdir(parents=True, exist_ok=True)
    lines = ['"""A generated engine of small functions."""', ""]
    n = 0
    while len(lines) < ENGINE_LINES - 8:
        lines += [f"def f_{n:04d}(x):", f"    return x * {n % 7 + 1} + {n % 11}", ""]
        n += 1
    lines += ["", "def total(values):", '    """The sum of ``values``."""', BUG_LINE, ""]
    (path / "engine.py").write_text("\n".join(lines) + "\n")
    (path / "test_engine.py").write_text(
        "from engine import f_0003, total\n\n\n"
        "def test_total():\n    assert total([1, 2, 3]) == 6\n\n\n"
        "def test_f():\n    assert f_0003(2) == 11\n"
    )
    (path / "data").mkdir(exist_ok=True)
    log = [f"2026-01-01T00:{i // 60 % 60:02d}:{i % 60:02d} INFO worker-{i % 5} processed batch {i}" for i in range(400)]
    (path / "data" / "log.txt").write_text("\n".join(log) + "\n")
    (path / "pkg").mkdir(exist_ok=True)
    for i in range(4):
        body = "".join(f"def helper_{i}_{j}(x):\n    return x + {j}\n\n\n" for j in range(30))
        (path / "pkg" / f"util_{i}.py").write_text(f'"""Helpers, part {i}."""\n\n\n{body}')
    (path / ".gitignore").write_text("__pycache__/\n.pytest_cache/\n")
    env = {"PATH": "/usr/bin:/bin", **GIT_ENV}
    for command in (
        ["git", "init", "-q", "-b", "main"],
        ["git", "add", "-A"],
        ["git", "commit", "-q", "-m", "initial"],
    ):
        subprocess.run(command, cwd=path, env=env, check=True, capture_output=True)
    return path


def repo_state(path: Path) -> dict[str, Any]:
    """What the task should have left: the fix in ``engine.py``, ``NOTES.md``, the commit, a clean tree."""

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=path, capture_output=True, text=True, check=False).stdout.strip()

    engine = (path / "engine.py").read_text()
    return {
        "fixed": FIXED_LINE + "\n" in engine and BUG_LINE not in engine,
        "notes": (path / "NOTES.md").is_file(),
        "subject": git("log", "-1", "--format=%s"),
        "commits": len(git("log", "--format=%H").splitlines()),
        "clean": git("status", "--porcelain") == "",
    }


def _shell_steps(python: str) -> list[tuple[str, str]]:
    """Commands both clients run (``(command, expected text)``): long outputs and checks.

    ``python`` is the interpreter with pytest, by absolute path (a client's login shell resets PATH).
    """
    return [
        ("git status --short && ls -la", "engine.py"),
        (f"{python} -m pytest -q 2>&1 | tail -n 5", "1 failed"),
        ("grep -n '^def ' engine.py", "def f_0"),
        ("cat data/log.txt", "processed batch 399"),
        ("seq 1 5000 | sed 's/^/row /'", "row 1"),
        ("wc -l engine.py data/log.txt", "engine.py"),
        ("grep -c INFO data/log.txt", "400"),
        ("git log --oneline", "initial"),
        (f"{python} -c 'import engine; print(engine.total([1, 2, 3]))'", "5"),
        ("find . -name '*.py' -not -path './.git/*' | sort", "util_3.py"),
        ("head -c 20000 data/log.txt", "processed batch"),
        ("tail -n 300 data/log.txt", "batch 399"),
        ("grep -n return engine.py | head -n 400", "return x"),
    ]


def _closing_shell(python: str) -> list[tuple[str, str]]:
    return [
        (f"{python} -m pytest -q 2>&1 | tail -n 3", "2 passed"),
        ("git diff --stat", "engine.py"),
        (f"git add -A && git commit -q -m '{COMMIT_SUBJECT}' && git log --oneline -1", COMMIT_SUBJECT),
        (f"git status --short && {python} -m pytest -q 2>&1 | tail -n 1", "2 passed"),
    ]


NOTES = "# Notes\n\ntotal() subtracted one from the sum; it now returns the sum itself.\n"


def claude_code_script(repo: Path, python: str = sys.executable) -> Script:
    """The long task in Claude Code's tools (``Bash``, ``Read``, ``Edit``, ``Write``)."""
    engine = str(repo / "engine.py")
    shell = _shell_steps(python)

    def bash(i: int) -> Step:
        return Step(tool="Bash", arguments={"command": shell[i][0], "description": "Inspect"}, expect=shell[i][1])

    def read(name: str, expect: str, **window: int) -> Step:
        return Step(tool="Read", arguments={"file_path": str(repo / name), **window}, expect=expect)

    steps = [
        bash(0),
        read("engine.py", "def total"),
        bash(1),
        read("engine.py", "def total", offset=1950, limit=50),
        bash(2),
        bash(3),
        read("test_engine.py", "def test_total"),
        bash(4),
        read("engine.py", "def f_0", offset=500, limit=300),
        bash(5),
        *(read(f"pkg/util_{i}.py", f"helper_{i}_29") for i in range(4)),
        bash(6),
        read("engine.py", ""),  # the unchanged file again: the client may answer from its own memory
        bash(7),
        bash(8),
        bash(9),
        read("data/log.txt", "processed batch", offset=100, limit=200),
        bash(10),
        read("test_engine.py", ""),  # unchanged since its only read: Claude Code may answer "unchanged"
        bash(11),
        bash(12),
        Step(tool="Edit", arguments={"file_path": engine, "old_string": BUG_LINE, "new_string": FIXED_LINE}, expect=""),
        read("engine.py", "return sum(values)", offset=1985, limit=15),
        Step(tool="Write", arguments={"file_path": str(repo / "NOTES.md"), "content": NOTES}, expect=""),
    ]
    steps += [
        Step(tool="Bash", arguments={"command": c, "description": "Check"}, expect=e) for c, e in _closing_shell(python)
    ]
    return Script(client="claude-code", prefix="toolu_01CwConf", steps=tuple(steps))


def codex_script(repo: Path, python: str = sys.executable) -> Script:
    """The long task in Codex's tools (``exec_command``, the freeform ``apply_patch``)."""
    shell = _shell_steps(python)

    def run(command: str, expect: str) -> Step:
        # the longest wait the tool allows, so a test run on a busy machine still returns its output
        arguments = {"cmd": command, "workdir": str(repo), "yield_time_ms": 30000}
        return Step(tool="exec_command", arguments=arguments, expect=expect)

    patch = (
        "*** Begin Patch\n*** Update File: engine.py\n@@ def total(values):\n"
        f'     """The sum of ``values``."""\n-{BUG_LINE}\n+{FIXED_LINE}\n*** End Patch\n'
    )
    notes = "*** Begin Patch\n*** Add File: NOTES.md\n" + "".join(f"+{line}\n" for line in NOTES.splitlines())
    notes += "*** End Patch\n"
    steps = [
        run(*shell[0]),
        run("cat engine.py", "def f_0"),
        run(*shell[1]),
        run("nl -ba engine.py | sed -n 1950,2000p", "def total"),
        run(*shell[2]),
        run(*shell[3]),
        run("cat test_engine.py", "def test_total"),
        run(*shell[4]),
        run("sed -n 1,450p engine.py", "def f_0"),
        run(*shell[5]),
        *(run(f"cat pkg/util_{i}.py", f"helper_{i}_29") for i in range(4)),
        run(*shell[6]),
        run("cat engine.py", "def f_0"),
        run(*shell[7]),
        run(*shell[8]),
        run(*shell[9]),
        run("sed -n 100,300p data/log.txt", "processed batch"),
        run(*shell[10]),
        run(*shell[11]),
        run(*shell[12]),
        Step(tool="apply_patch", arguments=patch, expect=""),
        run("sed -n 1985,2000p engine.py", "return sum(values)"),
        Step(tool="apply_patch", arguments=notes, expect=""),
    ]
    steps += [run(c, e) for c, e in _closing_shell(python)]
    return Script(client="codex", prefix="call_cwconf", steps=tuple(steps))
