"""Whether a tool result failed, and whether a test it ran actually ran.

A non-zero exit is not always a failure. ``grep`` finding nothing, ``test -f`` of an absent file,
``cmp -s`` or ``diff -q >/dev/null`` of files that differ: each exits 1 with no output, and that is
the answer the agent asked for, not an error to resolve. Some agent frameworks wrap the output in tags
(mini-swe-agent's ``<returncode>1</returncode><output></output>``); the wrapper is not output.

A test command can exit non-zero without running a test: the runner is missing (``No module named
pytest``, ``command not found``), it collected nothing (pytest's exit code 5), or it only printed
its help. Such a run is neither passed nor failed; :func:`test_not_run` says why it did not run.
"""

from __future__ import annotations

import re

from ..log.events import ToolResult

__all__ = ["ANSWER_EXIT_CODES", "output_body", "result_failed", "test_not_run", "wrapped_exit_code"]

ANSWER_EXIT_CODES: frozenset[int] = frozenset({1})
"""Exit codes that, with no output at all, answer the command's question (no match, files differ, absent)."""

_WRAPPER = re.compile(r"</?(?:returncode|output|output_head|output_tail|elided_chars|warning)>")
_RETURN_CODE = re.compile(r"<returncode>(-?\d+)</returncode>")
_MISSING_RUNNER = re.compile(
    r"No module named (?:pytest|nose|tox)\b|: (?:pytest|tox|nosetests|py\.test): command not found"
    r"|(?:pytest|tox|nosetests): not found",
)
_NO_TESTS = re.compile(r"\bno tests ran\b|\bcollected 0 items\b|^Ran 0 tests\b", re.MULTILINE | re.IGNORECASE)
_HELP = re.compile(r"(?:^|\s)(?:--help|-h)(?:\s|$)")


def wrapped_exit_code(output: str) -> int | None:
    """The exit code a framework wrote into the output (``<returncode>1</returncode>``), if any."""
    m = _RETURN_CODE.search(output[:200])
    return int(m.group(1)) if m else None


def output_body(output: str) -> str:
    """The output without a framework's wrapper tags and their exit code."""
    if "<returncode>" not in output[:200] and "<output" not in output[:200]:
        return output
    return _WRAPPER.sub("", _RETURN_CODE.sub("", output, count=1))


def result_failed(result: ToolResult) -> bool:
    """Whether ``result`` is a failure: flagged or non-zero, unless it is an empty answer (see the module)."""
    return output_failed(result.output, is_error=result.is_error, exit_code=result.exit_code)


def output_failed(output: str, *, is_error: bool, exit_code: int | None) -> bool:
    """:func:`result_failed` for an output known only by its text and flags (a window's tool message)."""
    code = exit_code if exit_code is not None else wrapped_exit_code(output)
    if not is_error and code in (None, 0):
        return False
    return not (code in ANSWER_EXIT_CODES and not output_body(output).strip())


def test_not_run(command: str, output: str, exit_code: int | None) -> str:
    """Why a test command ran no test ("" when it ran): a missing runner, nothing collected, help only."""
    body = output_body(output)
    code = exit_code if exit_code is not None else wrapped_exit_code(output)
    if _HELP.search(command):
        return "help only"
    if code == 127 or _MISSING_RUNNER.search(body[:4_000]):
        return "runner missing"
    if code == 5 or (code not in (None, 0) and _NO_TESTS.search(body[-4_000:])):
        return "no tests collected"
    return ""
