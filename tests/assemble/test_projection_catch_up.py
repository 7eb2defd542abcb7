"""Builds and projections that skip the store read: ``catch_up=False``, and events the caller just appended."""

from __future__ import annotations

from typing import Any

from contextwarden import ContextManager, UserMessage
from contextwarden.log.store import MemoryStore
from contextwarden.tokens import HeuristicCounter


class Reads(MemoryStore):
    """A memory store that counts the reads of events."""

    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    def iter_events(self, session_id: str, *, since_seq: int = 0) -> Any:
        self.reads += 1
        return super().iter_events(session_id, since_seq=since_seq)

    def read(self, session_id: str, *, since_seq: int = 0) -> Any:
        self.reads += 1
        return super().read(session_id, since_seq=since_seq)


def test_projection_without_catch_up_is_the_built_window_and_reads_nothing() -> None:
    store = Reads()
    manager = ContextManager(store, counter=HeuristicCounter())
    store.create_session("s")
    store.append("s", [UserMessage(text="first")], expected_last_seq=0)
    _, built_at = manager.build_with_last_seq("s", model="gpt-4o")
    store.append("s", [UserMessage(text="since")], expected_last_seq=built_at)  # another writer
    store.reads = 0
    stale = manager.projection("s", catch_up=False)
    assert store.reads == 0 and stale.last_seq == built_at
    assert manager.projection("s").last_seq == built_at + 1  # the default catches up
    assert store.reads > 0


def test_projection_without_catch_up_opens_a_window_not_cached_yet() -> None:
    store = MemoryStore()
    store.create_session("s")
    store.append("s", [UserMessage(text="only")], expected_last_seq=0)
    manager = ContextManager(store, counter=HeuristicCounter())
    assert manager.projection("s", catch_up=False).last_seq == 1


def test_a_build_takes_the_events_the_caller_just_appended_without_a_read() -> None:
    store = Reads()
    manager = ContextManager(store, counter=HeuristicCounter(), checkpoints="caller")
    store.create_session("s")
    store.append("s", [UserMessage(text="first")], expected_last_seq=0)
    _, built_at = manager.build_with_last_seq("s", model="gpt-4o")
    stored = store.append("s", [UserMessage(text="second")], expected_last_seq=built_at)
    store.reads = 0
    ctx, last = manager.build_with_last_seq("s", model="gpt-4o", appended=stored)
    assert store.reads == 0 and last == stored[-1].seq
    assert "second" in str(ctx.messages)
    # the answer's turn, appended by the caller: the window follows it, and its checkpoint needs no read
    answer = store.append("s", [UserMessage(text="third")], expected_last_seq=last)
    manager.follow("s", answer)
    manager.save_checkpoint("s", catch_up=False)
    assert store.reads == 0 and manager.projection("s", catch_up=False).last_seq == answer[-1].seq


def _built_then_written_by_another() -> tuple[Reads, ContextManager, int]:
    """A session built once, then extended by another writer: the store, the manager, the seq of that build."""
    store = Reads()
    manager = ContextManager(store, counter=HeuristicCounter())
    store.create_session("s")
    store.append("s", [UserMessage(text="first")], expected_last_seq=0)
    _, built_at = manager.build_with_last_seq("s", model="gpt-4o")
    store.append("s", [UserMessage(text="another writer's")], expected_last_seq=built_at)
    return store, manager, built_at


def test_appended_events_after_a_gap_are_read_with_the_gap() -> None:
    store, manager, built_at = _built_then_written_by_another()
    stored = store.append("s", [UserMessage(text="mine")], expected_last_seq=built_at + 1)
    store.reads = 0
    ctx = manager.build("s", model="gpt-4o", appended=stored)
    assert store.reads > 0  # the window did not end where these begin: it catches up from the store
    assert "another writer's" in str(ctx.messages) and "mine" in str(ctx.messages)


def test_a_window_follows_only_events_that_come_right_after_it() -> None:
    store, manager, built_at = _built_then_written_by_another()
    mine = store.append("s", [UserMessage(text="mine")], expected_last_seq=built_at + 1)
    store.reads = 0
    manager.follow("s", mine)  # a gap before them: the window stays as it was, nothing is read
    assert store.reads == 0 and manager.projection("s", catch_up=False).last_seq == built_at
    assert manager.projection("s").last_seq == mine[-1].seq  # the next catch-up reads both
