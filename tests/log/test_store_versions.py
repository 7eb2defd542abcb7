"""Stores and files written by the previous release open with this one and read back every event.

``tests/data/stores/v1.db`` and ``v1.jsonl`` were written by contextwarden at commit 647eb5b,
before events carried a schema version (see ``make_v1_fixture.py`` beside them).
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest

import _paths
from contextwarden.errors import CodecError
from contextwarden.log.codec import EVENT_SCHEMA_VERSION, dumps_event, event_from_dict, loads_event, upgrade
from contextwarden.log.events import EVENT_TYPES, AssistantMessage, Event, ForkMarker, ToolCall, UserMessage
from contextwarden.log.store import PostgresStore, SQLiteStore, import_jsonl, open_store

DATA = _paths.DATA / "stores"
sys.path.insert(0, str(DATA))
from make_v1_fixture import events as fixture_events  # noqa: E402

WANT = [dataclasses.replace(e, session_id="s", seq=i) for i, e in enumerate(fixture_events(), 1)]


def _old_store(tmp_path: Path) -> Path:
    path = tmp_path / "old.db"
    shutil.copy(DATA / "v1.db", path)
    return path


def _v1_rows() -> list[tuple[str, int, str, str, str]]:
    conn = sqlite3.connect(f"file:{DATA / 'v1.db'}?mode=ro", uri=True)
    try:
        return conn.execute(
            "SELECT session_id, seq, id, kind, data FROM events ORDER BY session_id DESC, seq"
        ).fetchall()
    finally:
        conn.close()


def test_the_fixture_really_is_the_old_format() -> None:
    rows = _v1_rows()
    assert len(rows) == len(WANT) + 2
    assert all("schema" not in json.loads(r[4]) for r in rows)
    assert '"$b64"' in rows[1][4] and "\\udcff" in rows[3][4]  # the old bytes wrapper, an escaped surrogate


def test_an_old_sqlite_store_opens_and_reads_every_event(tmp_path: Path) -> None:
    with SQLiteStore(_old_store(tmp_path)) as store:
        assert store.read("s") == WANT
        info = store.get_session("s")
        assert (info.last_seq, info.window_start_seq, info.metadata["title"]) == (13, 3, "fixture")
        assert store.read_window("s") == WANT[2:]
        fork = store.read("f")
        assert fork[:5] == WANT[:5]
        assert isinstance(fork[5], ForkMarker) and (fork[5].source_session_id, fork[5].at_seq) == ("s", 5)
        assert fork[6] == UserMessage(id="f01", session_id="f", seq=7, created_at=1_700_000_100.0, text="on the branch")


def test_an_old_store_takes_new_events_next_to_old_ones(tmp_path: Path) -> None:
    path = _old_store(tmp_path)
    with SQLiteStore(path) as store:
        (added,) = store.append("s", [UserMessage(text="written by this release")], expected_last_seq=13)
    with SQLiteStore(path) as store:
        assert store.read("s") == [*WANT, added]
    conn = sqlite3.connect(path)
    (data,) = conn.execute("SELECT data FROM events WHERE session_id = 's' AND seq = 14").fetchone()
    conn.close()
    assert json.loads(data)["schema"] == EVENT_SCHEMA_VERSION


def test_an_old_jsonl_file_imports(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "new.db") as store, (DATA / "v1.jsonl").open("rb") as fp:
        info = import_jsonl(store, fp)
        assert info.id == "s" and store.read("s") == WANT


@pytest.mark.postgres
def test_old_rows_in_postgres_read_back(pg_schema_dsn: str) -> None:
    import psycopg

    PostgresStore(pg_schema_dsn).close()  # the table layout is the previous release's (store schema 1)
    with psycopg.connect(pg_schema_dsn, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO contextwarden_sessions (id, created_at, last_seq, window_start_seq, metadata) "
            "VALUES ('s', 1700000000, 13, 3, '{}')"
        )
        with conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO contextwarden_events (session_id, seq, id, kind, data) VALUES (%s, %s, %s, %s, %s)",
                [r for r in _v1_rows() if r[0] == "s"],
            )
    store = open_store(pg_schema_dsn)
    try:
        assert isinstance(store, PostgresStore)
        assert store.read("s") == WANT
        assert store.read_window("s") == WANT[2:]
    finally:
        store.close()


# --------------------------------------------------------------------------- the version rules


def _record(event: Event) -> dict[str, Any]:
    raw: dict[str, Any] = json.loads(dumps_event(event))
    return raw


def test_a_record_from_a_newer_release_is_refused_by_name() -> None:
    raw = _record(UserMessage(text="x"))
    raw["schema"] = EVENT_SCHEMA_VERSION + 1
    with pytest.raises(CodecError, match=r"schema version 3, newer than this contextwarden reads \(2\)"):
        event_from_dict(raw)
    for bad in (0, "2", True, None):
        raw["schema"] = bad
        with pytest.raises(CodecError, match="positive integer"):
            event_from_dict(raw)


def test_version_1_bytes_wrapper_upgrades_and_version_2_leaves_lookalikes_alone() -> None:
    v1 = {"kind": "user", "id": "u", "text": "x", "parts": [{"media_type": "a/b", "data": {"$b64": "aGk="}}]}
    assert upgrade(v1)["parts"] == [{"media_type": "a/b", "data": "aGk="}] and "schema" not in v1
    assert event_from_dict(v1).parts[0].data == b"hi"  # type: ignore[attr-defined]
    # in version 1 a tool argument shaped like the wrapper came back as bytes; now it stays a dict
    call = AssistantMessage(tool_calls=(ToolCall(id="c", name="n", arguments={"$b64": "aGk="}),))
    assert loads_event(dumps_event(call)) == call


@dataclasses.dataclass(frozen=True, kw_only=True)
class Label:
    """A new part type, as an additive change would bring."""

    name: str
    data: bytes = b""


@dataclasses.dataclass(frozen=True, kw_only=True)
class LabelledUser(UserMessage):
    """A user message grown by an additive change: a new part field and a new field, both defaulted."""

    labels: tuple[Label, ...] = ()
    tone: str = "plain"


def test_an_additive_change_reads_old_records_without_a_migration(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(EVENT_TYPES, "user", LabelledUser)
    (row,) = [r for r in _v1_rows() if r[0] == "s" and r[1] == 13]
    old = loads_event(row[4])  # a version-1 record, read by the extended class: the new fields take defaults
    assert isinstance(old, LabelledUser) and (old.text, old.labels, old.tone) == ("after the compaction", (), "plain")
    new = LabelledUser(text="t", labels=(Label(name="a", data=b"\x00\xff"),), tone="warm")
    assert loads_event(dumps_event(new)) == new
    monkeypatch.setitem(EVENT_TYPES, "user", UserMessage)
    with pytest.raises(CodecError, match=r"unknown field\(s\) \['labels', 'tone'\]"):
        loads_event(dumps_event(new))  # an older reader refuses what it does not know, by name
