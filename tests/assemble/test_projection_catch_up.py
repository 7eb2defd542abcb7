"""``ContextManager.projection(catch_up=False)``: the window as the last build left it, without a store read."""

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
