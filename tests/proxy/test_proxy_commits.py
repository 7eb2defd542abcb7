"""Which of the proxy's writes wait for the disk.

A request's appends (the client's new messages, what the build records, the answer's turn) and the
prefix the session is remembered by commit without waiting (``asynchronous_commits``): the client
holds all of it and sends it again with its next request. The ledger row written after the answer
waits, and takes every earlier commit of the database to disk with it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from _proxy import Rig, rig
from contextwarden.log.store import committing_asynchronously
from contextwarden.proxy.ledger import Ledger


def _ask(r: Rig, text: str) -> None:
    r.anthropic().messages.create(model="claude-sonnet-4-5", max_tokens=8, messages=[{"role": "user", "content": text}])


def _watch(r: Rig, monkeypatch: pytest.MonkeyPatch) -> dict[str, list[bool]]:
    """For each append, remember and ledger write: whether it was made inside ``asynchronous_commits``."""
    seen: dict[str, list[bool]] = {"append": [], "remember": [], "ledger": []}
    store, index = r.proxy.store, r.proxy.pipeline.index
    append, remember, record_many = store.append, index.remember, Ledger.record_many

    def watched_append(*args: Any, **kwargs: Any) -> Any:
        seen["append"].append(committing_asynchronously())
        return append(*args, **kwargs)

    def watched_remember(*args: Any, **kwargs: Any) -> Any:
        seen["remember"].append(committing_asynchronously())
        return remember(*args, **kwargs)

    def watched_ledger(self: Ledger, *args: Any, **kwargs: Any) -> Any:
        seen["ledger"].append(committing_asynchronously())
        return record_many(self, *args, **kwargs)

    monkeypatch.setattr(store, "append", watched_append)
    monkeypatch.setattr(index, "remember", watched_remember)
    monkeypatch.setattr(Ledger, "record_many", watched_ledger)
    return seen


def _check(r: Rig, monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _watch(r, monkeypatch)
    _ask(r, "hello")
    _ask(r, "again")
    r.proxy.settle()
    store = r.proxy.store
    kinds = [type(e).__name__ for s in store.list_sessions() for e in store.read(s.id)]
    assert kinds.count("AssistantMessage") == 2  # both turns are in the log
    # the client's messages and each turn (two per call at least), all without waiting
    assert len(seen["append"]) >= 4 and all(seen["append"]), seen
    assert seen["remember"] == [True, True]
    assert seen["ledger"] and not any(seen["ledger"]), seen  # the ledger row waits, on its own thread


def test_a_requests_writes_do_not_wait_for_the_disk_and_the_ledger_row_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with rig(str(tmp_path / "s.db")) as r:
        _check(r, monkeypatch)


@pytest.mark.postgres
def test_on_postgresql_too(pg_schema_dsn: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with rig(pg_schema_dsn) as r:
        _check(r, monkeypatch)


def test_a_turn_filed_by_the_recorder_waits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # when filing before the last byte failed, the recorder files the turn once the answer is out
    with rig(str(tmp_path / "s.db")) as r:
        seen = _watch(r, monkeypatch)
        monkeypatch.setattr(r.proxy.pipeline, "answered", lambda *args: (_ for _ in ()).throw(OSError("down")))
        _ask(r, "hello")
        r.proxy.settle()
        [session] = r.proxy.store.list_sessions()
        assert "AssistantMessage" in [type(e).__name__ for e in r.proxy.store.read(session.id)]
    assert seen["append"][-1] is False
