"""Governance of model-visible context: the six-rule linter, assertions, failure taxonomy, metrics.

- :mod:`.requests`: rendered requests (OpenAI Chat, OpenAI Responses, Anthropic Messages) streamed
  from any agent's JSONL log, split into comparable items;
- :mod:`.lint`: the six rules of model-visible context (``docs/behaviours.md``, rows 44-49) over a request
  sequence; :mod:`.session` replays a stored session through a fresh manager to lint exactly what it
  would send;
- :mod:`.assertions`: ``assert_prefix_stable`` and ``assert_bounded`` for users' own CI;
- :mod:`.taxonomy`: detectors that tag requests and sessions with context failures
  (``docs/behaviours.md``, row 37), run over request logs and sessions by :mod:`.classify`;
- :mod:`.metrics`: per-session figures (re-read rate, cache hit ratio, tokens by section and tool).
"""

from __future__ import annotations

from .assertions import assert_bounded, assert_prefix_stable
from .lint import RULES, Finding, Linter, LintOptions, LintReport, lint_file, lint_requests
from .requests import BadLine, Request, RequestItem, RequestReader, read_requests
from .session import ReplayedTurn, lint_session, replay_session

__all__ = [
    "RULES",
    "BadLine",
    "Finding",
    "LintOptions",
    "LintReport",
    "Linter",
    "ReplayedTurn",
    "Request",
    "RequestItem",
    "RequestReader",
    "assert_bounded",
    "assert_prefix_stable",
    "lint_file",
    "lint_requests",
    "lint_session",
    "read_requests",
    "replay_session",
]
