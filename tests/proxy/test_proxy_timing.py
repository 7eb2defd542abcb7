"""Where and when the proxy works: its pipeline on the event loop on the embedded store (on worker
threads otherwise), and the garbage collector after each answer rather than inside a request.

A step runs on the loop exactly when ``asyncio.get_running_loop()`` works inside it: a worker thread
has no running loop.
"""

from __future__ import annotations

import asyncio
import gc
import sys
from pathlib import Path
from typing import Any

import pytest

from _proxy import Rig, rig
from contextwarden.proxy import collector
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


def test_while_serving_the_collector_waits_for_the_answer_and_the_startup_heap_is_frozen(tmp_path: Path) -> None:
    before = gc.get_threshold()
    with rig(str(tmp_path / "s.db")) as r:
        assert gc.get_threshold()[0] == collector.YOUNG_THRESHOLD and gc.get_freeze_count() > 0
        _ask(r, "hello")
        r.proxy.settle()
        kept = [{"n": n} for n in range(5_000)]  # young objects, far fewer than the raised threshold
        assert gc.get_count()[0] > len(kept) // 2  # no collection ran by itself (CPython's would at 700)
        _ask(r, "again")
        r.proxy.settle()  # the answer is filed: the young generation was collected after it
        assert gc.get_count()[0] < len(kept) // 5
        del kept
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0


def test_due_passes_collect_the_generations_cpython_would() -> None:
    gc.collect()
    thresholds = gc.get_threshold()
    assert collector.collect_due() == 0
    for _ in range(thresholds[1]):
        gc.collect(0)
    assert collector.collect_due() == 1


def test_a_full_collection_is_due_only_once_the_heap_has_grown_by_a_quarter() -> None:
    def gen1_collections_until_gen2_due() -> None:
        for _ in range(gc.get_threshold()[2]):
            for _ in range(gc.get_threshold()[1]):
                gc.collect(0)
            gc.collect(1)
        for _ in range(gc.get_threshold()[1]):
            gc.collect(0)

    gc.collect()
    gen1_collections_until_gen2_due()
    collector.collect_due()  # a full one runs the first time; the heap's size is noted
    gen1_collections_until_gen2_due()
    assert collector.collect_due() == 1  # the counts say full, the heap has not grown
    grown = [[n] for n in range(int(sys.getallocatedblocks() * (collector.FULL_GROWTH + 0.05)))]
    gen1_collections_until_gen2_due()
    assert collector.collect_due() == 2
    del grown


def test_the_last_proxy_to_stop_restores_the_collectors_settings(tmp_path: Path) -> None:
    before = gc.get_threshold()
    with rig(str(tmp_path / "a.db")):
        with rig(str(tmp_path / "b.db")):
            assert gc.get_threshold()[0] == collector.YOUNG_THRESHOLD
        assert gc.get_threshold()[0] == collector.YOUNG_THRESHOLD  # the first proxy still serves
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0
