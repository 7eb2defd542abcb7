"""Where and when the proxy works: its pipeline on the event loop on a store on this machine (on worker
threads otherwise), and the garbage collector after each answer rather than inside a request.

A step runs on the loop exactly when ``asyncio.get_running_loop()`` works inside it: a worker thread
has no running loop.
"""

from __future__ import annotations

import asyncio
import gc
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from _proxy import Rig, rig
from contextwarden.log.store.postgres import on_this_machine
from contextwarden.proxy import collector
from contextwarden.proxy.app import SLOW_ON_LOOP_MS
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


def test_the_answers_turn_is_in_the_log_before_its_last_byte_so_the_next_request_never_waits(tmp_path: Path) -> None:
    # the recorder thread (ledger row, checkpoint) is held: the turn must not depend on it
    with rig(str(tmp_path / "s.db")) as r:
        seen = _spy(r.proxy.pipeline)
        held: list[Any] = []
        r.proxy._recorder.after = lambda *args: held.append(args)  # type: ignore[method-assign]
        _ask(r, "hello")
        [session] = r.proxy.store.list_sessions()
        said = [type(e).__name__ for e in r.proxy.store.read(session.id)]
        _ask(r, "again")  # on the loop: nothing to wait for
    assert said[-2:] == ["AssistantMessage", "UsageReport"]
    assert seen["prepare"] == [True, True] and len(held) == 2


@pytest.mark.postgres
def test_on_a_postgresql_server_on_this_machine_the_pipeline_runs_on_the_event_loop(pg_schema_dsn: str) -> None:
    # a loopback round trip is shorter than the hop to a worker thread and back, and none of a
    # request's commits waits for the disk (test_proxy_commits), so answers are filed on the loop too
    assert on_this_machine(pg_schema_dsn)
    with rig(pg_schema_dsn) as r:
        seen = _spy(r.proxy.pipeline)
        _ask(r, "hello")
        _ask(r, "again")
    assert seen == {"prepare": [True, True], "answered": [True, True]}


@pytest.mark.parametrize(
    ("dsn", "local"),
    [
        ("postgresql://cw@127.0.0.1:5432/cw", True),
        ("postgresql://cw@localhost/cw", True),
        ("postgresql://cw@[::1]:5432/cw", True),
        ("host=/var/run/postgresql dbname=cw", True),
        ("postgresql://cw@db.example.com/cw", False),
        ("postgresql://cw@10.0.0.5/cw", False),
        ("host=localhost,db.example.com dbname=cw", False),
    ],
)
def test_a_postgresql_server_elsewhere_is_not_on_this_machine(dsn: str, local: bool) -> None:
    # its statements are network round trips: the pipeline runs on worker threads, never on the loop
    assert on_this_machine(dsn) is local


def test_a_slow_request_on_the_loop_sends_the_next_ones_to_worker_threads(tmp_path: Path) -> None:
    with rig(str(tmp_path / "s.db")) as r:
        seen = _spy(r.proxy.pipeline)
        store, append = r.proxy.store, r.proxy.store.append

        def slow(*args: Any, **kwargs: Any) -> Any:
            time.sleep(SLOW_ON_LOOP_MS * 1.5 / 1000)  # a store that answers slowly for a moment
            return append(*args, **kwargs)

        store.append = slow  # type: ignore[method-assign]
        _ask(r, "hello")
        store.append = append  # type: ignore[method-assign]
        _ask(r, "again")
    assert seen["prepare"] == [True, False]


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
