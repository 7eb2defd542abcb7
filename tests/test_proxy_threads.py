"""Where the proxy runs its pipeline: on the event loop on the embedded store, on worker threads otherwise.

A step runs on the loop exactly when ``asyncio.get_running_loop()`` works inside it: a worker thread
has no running loop.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from _proxy import Rig, rig
from contextwarden.proxy.pipeline import Pipeline


def _spy(pipeline: Pipeline) -> dict[str, list[bool]]:
    """Record, for each ``prepare`` and ``answered`` call, whether it ran on the event loop."""
    seen: dict[str, list[bool]] = {"prepare": [], "answered": []}
    for name in seen:
        step = getattr(pipeline, name)

        def spied(*args: Any, _step: Any = step, _name: str = name, **kwargs: Any) -> Any:
            try:
                asyncio.get_running_loop()
                seen[_name].append(True)
            except RuntimeError:
                seen[_name].append(False)
            return _step(*args, **kwargs)

        setattr(pipeline, name, spied)
    return seen


def _ask(r: Rig, text: str) -> None:
    r.anthropic().messages.create(model="claude-sonnet-4-5", max_tokens=8, messages=[{"role": "user", "content": text}])


def test_on_the_embedded_store_the_pipeline_runs_on_the_event_loop(tmp_path: Path) -> None:
    with rig(str(tmp_path / "s.db")) as r:
        seen = _spy(r.proxy.pipeline)
        _ask(r, "hello")
        _ask(r, "again")
    assert seen == {"prepare": [True, True], "answered": [True, True]}


def test_a_turn_still_being_filed_sends_the_next_request_to_a_worker_thread(tmp_path: Path) -> None:
    # ``prepare`` may have to wait for the recorder thread then; the loop must not wait with it
    with rig(str(tmp_path / "s.db")) as r:
        seen = _spy(r.proxy.pipeline)
        r.proxy.pipeline.turns.start("another-session")
        try:
            _ask(r, "hello")
        finally:
            r.proxy.pipeline.turns.done("another-session")
        _ask(r, "again")
    assert seen["prepare"] == [False, True]


@pytest.mark.postgres
def test_on_postgresql_the_pipeline_runs_on_worker_threads(pg_schema_dsn: str) -> None:
    # every statement is a network round trip: the loop keeps serving other clients meanwhile
    with rig(pg_schema_dsn) as r:
        seen = _spy(r.proxy.pipeline)
        _ask(r, "hello")
    assert seen == {"prepare": [False], "answered": [False]}
