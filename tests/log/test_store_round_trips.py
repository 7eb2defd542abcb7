"""PostgreSQL round trips: an append is one statement, so is a read of one page, with every guarantee kept.

Each statement to the server is a round trip the caller waits for; the proxy makes several store
calls per request, so every one saved shows in its latency under load. The counts here are of
the statements the store sends (``BEGIN`` and ``COMMIT`` of a transaction block included).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from _statements import Counted
from contextwarden.errors import ConflictError, SessionNotFound, UsageError
from contextwarden.log.events import Compaction, UserMessage
from contextwarden.log.store import PostgresStore

pytestmark = pytest.mark.postgres


@pytest.fixture
def store(pg_schema_dsn: str) -> Iterator[PostgresStore]:
    with PostgresStore(pg_schema_dsn) as opened:
        yield opened


def _users(n: int, tag: str = "u") -> list[UserMessage]:
    return [UserMessage(text=f"{tag} {i}" if tag == "u" else f"{tag}{i}") for i in range(n)]


def test_an_append_is_one_statement(store: PostgresStore) -> None:
    store.create_session("s")
    counted = Counted(store)
    store.append("s", _users(3), expected_last_seq=0)
    assert len(counted.sent) == 1, counted.sent
    assert [e.seq for e in store.read("s")] == [1, 2, 3]
    assert store.get_session("s").last_seq == 3


def test_the_one_statement_append_keeps_every_check(store: PostgresStore) -> None:
    store.create_session("s")
    first = store.append("s", _users(2), expected_last_seq=0)
    with pytest.raises(ConflictError) as stale:
        store.append("s", _users(1), expected_last_seq=1)
    assert (stale.value.expected, stale.value.actual) == (1, 2)
    with pytest.raises(SessionNotFound):
        store.append("nobody", _users(1), expected_last_seq=0)
    with pytest.raises(UsageError, match=repr(first[0].id)):
        store.append("s", [UserMessage(text="again", id=first[0].id)], expected_last_seq=2)
    # nothing of a refused append is stored, and the position did not move
    assert [getattr(e, "text", "") for e in store.read("s")] == ["u 0", "u 1"]
    assert store.get_session("s").last_seq == 2


def test_the_one_statement_append_moves_the_window_start(store: PostgresStore) -> None:
    store.create_session("s")
    store.append("s", _users(4), expected_last_seq=0)
    store.append("s", [Compaction(summary="earlier", first_kept_seq=3)], expected_last_seq=4)
    assert store.get_session("s").window_start_seq == 3
    store.append("s", _users(1, "later"), expected_last_seq=5)
    assert store.get_session("s").window_start_seq == 3  # an append without a compaction keeps it
    assert [e.seq for e in store.read_window("s")] == [3, 4, 5, 6]


def test_a_large_append_still_goes_in_one_transaction(store: PostgresStore) -> None:
    store.create_session("s")
    counted = Counted(store)
    store.append("s", _users(250), expected_last_seq=0)
    assert counted.sent[0] == "BEGIN" and len(counted.sent) > 1
    assert [e.seq for e in store.read("s")] == list(range(1, 251))


def test_racing_one_statement_appends_leave_no_gap_and_one_winner_per_seq(pg_schema_dsn: str) -> None:
    # writers with their own connections append after the same last seq again and again: the row
    # lock the UPDATE takes makes each loser see the winner's seq and get a conflict
    writers, rounds = 4, 25
    stores = [PostgresStore(pg_schema_dsn) for _ in range(writers)]
    stores[0].create_session("race")
    won: list[int] = []
    lock = threading.Lock()

    def write(store: PostgresStore, start: threading.Barrier) -> None:
        for _ in range(rounds):
            start.wait()
            last = store.get_session("race").last_seq
            start.wait()
            try:
                store.append("race", _users(2), expected_last_seq=last)
            except ConflictError:
                continue
            with lock:
                won.append(last)

    start = threading.Barrier(writers)
    threads = [threading.Thread(target=write, args=(s, start)) for s in stores]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(won) == len(set(won)) == rounds  # one winner per round
        assert [e.seq for e in stores[0].read("race")] == list(range(1, 2 * rounds + 1))
    finally:
        for s in stores:
            s.close()


def test_a_read_of_one_page_is_one_statement(store: PostgresStore) -> None:
    store.create_session("s")
    store.append("s", _users(5), expected_last_seq=0)
    counted = Counted(store)
    assert [e.seq for e in store.read("s", since_seq=2)] == [3, 4, 5]
    assert [e.seq for e in store.read("s", since_seq=5)] == []
    assert len(counted.sent) == 2, counted.sent
    store.append("s", [Compaction(summary="earlier", first_kept_seq=4)], expected_last_seq=5)
    counted.sent.clear()
    assert [e.seq for e in store.read_window("s")] == [4, 5, 6]
    assert len(counted.sent) == 1, counted.sent
    with pytest.raises(SessionNotFound):
        store.read("nobody")


def test_reads_that_page_or_cross_a_fork_point_return_every_event_in_order(store: PostgresStore) -> None:
    from contextwarden.log.store import _shared

    store.create_session("p")
    store.append("p", _users(_shared.PAGE_SIZE + 20, "p"), expected_last_seq=0)
    assert [e.seq for e in store.read("p")] == list(range(1, _shared.PAGE_SIZE + 21))
    assert [e.seq for e in store.read("p", since_seq=_shared.PAGE_SIZE)] == list(
        range(_shared.PAGE_SIZE + 1, _shared.PAGE_SIZE + 21)
    )
    store.fork("p", at_seq=10, new_session_id="f")
    store.append("f", _users(3, "f"), expected_last_seq=11)
    # before the fork point: the parent's rows, then the fork's own (its marker first)
    got = store.read("f", since_seq=8)
    assert [e.seq for e in got] == [9, 10, 11, 12, 13, 14]
    assert [getattr(e, "text", e.kind) for e in got] == ["p8", "p9", "fork", "f0", "f1", "f2"]
    assert [getattr(e, "text", e.kind) for e in store.read("f", since_seq=11)] == ["f0", "f1", "f2"]
    assert [e.seq for e in store.read_window("f")] == list(range(1, 15))
