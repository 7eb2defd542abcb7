"""The lint's prefix and size checks as plain assertions, for users' own test suites.

::

    from contextwarden.governance.assertions import assert_bounded, assert_prefix_stable

    def test_agent_context_is_cache_friendly(recorded_requests):
        assert_prefix_stable(recorded_requests)          # payload dicts, a JSONL path, or ModelContexts
        assert_bounded(recorded_requests, max_tokens=10_000)

Both raise ``AssertionError`` naming the request number and the item responsible, so pytest shows
what broke. An unreadable line in a JSONL file fails the assertion too: CI should not pass on a log
it could not read.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Union

from ..context import ModelContext
from ..tokens import TokenCounter
from ._contexts import iter_any_requests
from ._diff import CAUSES, find_break
from .requests import BadLine, Request, read_requests

RequestSource = Union[str, "os.PathLike[str]", Iterable[Mapping[str, Any] | Request | ModelContext]]
"""A JSONL path, or request payload dicts, :class:`Request` objects or built ``ModelContext`` objects."""

_SHOWN = 10


def _requests(requests: RequestSource, counter: TokenCounter | None) -> Iterator[Request]:
    source = (
        read_requests(requests, counter=counter)
        if isinstance(requests, (str, os.PathLike))
        else iter_any_requests(requests, counter=counter)
    )
    for request in source:
        if isinstance(request, BadLine):
            raise AssertionError(f"line {request.line} is not a readable request: {request.error}")
        yield request


def _fail(problems: list[str], total: int, what: str) -> None:
    if problems:
        more = f"\n... and {total - len(problems)} more" if total > len(problems) else ""
        raise AssertionError(f"{total} {what}:\n" + "\n".join(problems) + more)


def assert_prefix_stable(
    requests: RequestSource, *, allow_window_events: bool = True, counter: TokenCounter | None = None
) -> None:
    """Assert that every request starts with the whole request before it.

    With ``allow_window_events`` a break right after a recorded window event (compaction, context
    edits, tool-set change: known for ``ModelContext`` inputs) is accepted, since it was planned.
    """
    problems: list[str] = []
    total = 0
    previous: Request | None = None
    for request in _requests(requests, counter):
        if previous is not None:
            brk = find_break(previous, request)
            if brk is not None and not (allow_window_events and brk.explained):
                total += 1
                if len(problems) < _SHOWN:
                    problems.append(
                        f"request {brk.request}: first differing item {brk.item}: "
                        f"{CAUSES[brk.cause]} ({brk.describe()})"
                    )
        previous = request
    _fail(problems, total, "prefix break(s)")


def assert_bounded(
    requests: RequestSource,
    *,
    max_tokens: int = 10_000,
    max_request_tokens: int | None = None,
    counter: TokenCounter | None = None,
) -> None:
    """Assert that no item exceeds ``max_tokens`` (and no whole request ``max_request_tokens``)."""
    problems: list[str] = []
    total = 0
    for request in _requests(requests, counter):
        found = [
            f"request {request.number}: {item.label} has {item.tokens} tokens (> {max_tokens})"
            for item in request.items
            if item.tokens > max_tokens
        ]
        if max_request_tokens is not None and request.total_tokens > max_request_tokens:
            found.append(f"request {request.number} has {request.total_tokens} tokens (> {max_request_tokens})")
        total += len(found)
        problems.extend(found[: max(_SHOWN - len(problems), 0)])
    _fail(problems, total, "oversized item(s) or request(s)")
