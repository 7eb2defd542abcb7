"""Two processes mirror the same session into one durable store: each message lands once, on SQLite and PostgreSQL."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest
from test_mirror import conversation, digests

from contextwarden.errors import ConflictError
from contextwarden.log.store import PostgresStore, SessionStore, SQLiteStore
from contextwarden.mirror import MIRRORED_KINDS, content_digest, mirror_history

WRITERS = 2


def open_store(backend: str, where: str) -> SessionStore:
    return SQLiteStore(Path(where)) if backend == "sqlite" else PostgresStore(where)


def writer(backend: str, where: str, start: object) -> None:
    """Mirror the growing history of one session, as a client re-sending it every turn would."""
    store = open_store(backend, where)
    start.wait()  # type: ignore[attr-defined]  # both processes begin together
    history = conversation(12)
    try:
        for n in range(2, len(history) + 1):
            try:
                mirror_history(store, "s", history[:n])
            except ConflictError:
                # A typed conflict is allowed at worst: the next turn re-sends the whole history.
                continue
        mirror_history(store, "s", history)
    finally:
        store.close()


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_two_processes_mirror_each_message_once(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    where = str(tmp_path / "s.db") if backend == "sqlite" else request.getfixturevalue("pg_schema_dsn")
    open_store(backend, where).close()  # create the schema before the race
    context = multiprocessing.get_context("spawn")
    start = context.Barrier(WRITERS)
    processes = [context.Process(target=writer, args=(backend, where, start)) for _ in range(WRITERS)]
    for p in processes:
        p.start()
    for p in processes:
        p.join(timeout=300)
    assert [p.exitcode for p in processes] == [0] * WRITERS
    store = open_store(backend, where)
    try:
        logged = [content_digest(e) for e in store.read("s") if e.kind in MIRRORED_KINDS]
    finally:
        store.close()
    assert logged == digests(conversation(12))
