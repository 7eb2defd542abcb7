"""A session's header read with its events: the same answer from every store, and the mirror's chain relies on it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from contextwarden.errors import SessionNotFound
from contextwarden.log.events import Event, UserMessage
from contextwarden.log.store import MemoryStore, PostgresStore, SessionStore, SQLiteStore
from contextwarden.log.store._shared import SupportsHeaderRead, header_and_events
from contextwarden.mirror._chain import Chain


@pytest.fixture(params=["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SessionStore]:
    if request.param == "memory":
        yield MemoryStore()
        return
    opened: SessionStore = (
        SQLiteStore(tmp_path / "s.db")
        if request.param == "sqlite"
        else PostgresStore(request.getfixturevalue("pg_schema_dsn"))
    )
    yield opened
    opened.close()


def _said(texts: list[str]) -> list[UserMessage]:
    return [UserMessage(text=t) for t in texts]


def test_the_header_comes_with_the_events_after_a_seq(store: SessionStore) -> None:
    assert isinstance(store, SupportsHeaderRead) == (not isinstance(store, MemoryStore))
    store.create_session("s")
    store.append("s", _said(["a", "b", "c"]), expected_last_seq=0)
    info, events = header_and_events(store, "s", since_seq=1)
    assert (info.id, info.last_seq) == ("s", 3)
    assert [e.text for e in events if isinstance(e, UserMessage)] == ["b", "c"]
    info, events = header_and_events(store, "s", since_seq=3)
    assert info.last_seq == 3 and list(events) == []
    with pytest.raises(SessionNotFound):
        header_and_events(store, "nobody")


def test_a_chain_starts_over_when_its_session_was_deleted_and_recreated_shorter(store: SessionStore) -> None:
    chain = Chain("s")
    chain.refresh(store)  # creates the session
    chain.append(store, _said(["one", "two", "three"]))
    store.append("s", _said(["four"]), expected_last_seq=3)
    chain.refresh(store)
    assert chain.last_seq == 4 and len(chain.digests) == 4
    store.delete_session("s")
    store.create_session("s")
    store.append("s", _said(["new"]), expected_last_seq=0)
    chain.refresh(store)
    assert (chain.last_seq, chain.seqs) == (1, [1])
    fresh = Chain("s")
    fresh.refresh(store)
    assert chain.digests == fresh.digests


def test_a_store_without_the_joint_read_reads_its_events_only_when_asked() -> None:
    reads: list[int] = []

    class Counting(MemoryStore):
        def iter_events(self, session_id: str, *, since_seq: int = 0) -> Iterator[Event]:
            reads.append(since_seq)
            return super().iter_events(session_id, since_seq=since_seq)

    store = Counting()
    store.create_session("s")
    store.append("s", _said(["a"]), expected_last_seq=0)
    info, events = header_and_events(store, "s", since_seq=1)
    assert info.last_seq == 1 and reads == []  # the header alone said there is nothing new
    assert list(events) == [] and reads == [1]
