"""One suite for every session store: memory, SQLite and PostgreSQL (real server, see conftest)."""

from __future__ import annotations

import dataclasses
import io
import os
import sqlite3
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from contextwarden.errors import (
    CodecError,
    ConflictError,
    SessionExists,
    SessionNotFound,
    StoreError,
    UsageError,
)
from contextwarden.log.events import (
    AssistantMessage,
    BinaryPart,
    Compaction,
    ContextEdit,
    ContextEditBatch,
    Event,
    ForkMarker,
    Instruction,
    OpaquePart,
    Pin,
    SettingChange,
    Steering,
    ThinkingBlock,
    ToolCall,
    ToolResult,
    ToolSetChange,
    UsageReport,
    UserMessage,
)
from contextwarden.log.store import (
    MemoryStore,
    PostgresStore,
    SessionStore,
    SQLiteStore,
    count_kinds,
    export_jsonl,
    import_jsonl,
    open_store,
)
from contextwarden.log.store._shared import PAGE_SIZE

Opener = Callable[[], SessionStore]


@pytest.fixture(
    params=["memory", "memory-objects", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)],
)
def opener(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opener]:
    """Opens store objects over one backing store (the same object for memory)."""
    opened: list[SessionStore] = []
    if request.param.startswith("memory"):
        shared = MemoryStore(keep_objects=request.param == "memory-objects")

        def open_one() -> SessionStore:
            return shared

    elif request.param == "sqlite":

        def open_one() -> SessionStore:
            return SQLiteStore(tmp_path / "sessions.db")

    else:
        dsn = request.getfixturevalue("pg_schema_dsn")

        def open_one() -> SessionStore:
            return PostgresStore(dsn)

    def tracked() -> SessionStore:
        store = open_one()
        opened.append(store)
        return store

    yield tracked
    for store in opened:
        store.close()


@pytest.fixture
def store(opener: Opener) -> SessionStore:
    return opener()


def users(n: int, prefix: str = "m") -> list[Event]:
    return [UserMessage(text=f"{prefix}{i}") for i in range(n)]


def texts(events: list[Event]) -> list[str]:
    return [getattr(e, "text", e.kind) for e in events]


def one_of_each() -> list[Event]:
    """Every kind, every field set to something other than its default."""
    png = BinaryPart(media_type="image/png", data=bytes(range(256)), name="shot.png")
    return [
        Instruction(text="be brief", role="developer", source="AGENTS.md", parent_id="p0"),
        UserMessage(text="fix the bug ✓ 修复", parts=(png,)),
        AssistantMessage(
            text="looking",
            thinking=(ThinkingBlock(text="hmm", signature="sig=="),),
            tool_calls=(ToolCall(id="c1", name="read", arguments={"path": "a.py", "n": [1, 2.5, None, True]}),),
            model="m-1",
            stop_reason="tool_use",
            opaque=(
                OpaquePart(format="openai_responses", raw_json='{"type":"reasoning"}', position=1, kind="reasoning"),
            ),
        ),
        ToolResult(call_id="c1", tool_name="read", output="x = 1\n", is_error=True, exit_code=2, parts=(png,)),
        Steering(text="do not touch tests"),
        Pin(text="goal: green CI", label="goal"),
        SettingChange(model="m-2", settings={"temperature": 0.2, "thinking": {"level": "high"}}),
        UsageReport(
            input_tokens=1000,
            output_tokens=20,
            cache_read_tokens=900,
            cache_write_tokens=50,
            request_id="r1",
            response_event_id="e3",
            model="m-1",
        ),
        ContextEditBatch(
            edits=(ContextEdit(target_id="e4", action="mask", replacement="[masked]", reason="old"),),
            reason="budget",
            tokens_before=10,
            tokens_after=5,
        ),
        ToolSetChange(exposed=("read", "write"), reason="phase"),
        Compaction(
            summary="did things",
            first_kept_seq=3,
            covered_from_seq=1,
            covered_to_seq=2,
            tokens_before=100,
            tokens_after=10,
            summarizer="fake",
            summarizer_input_tokens=90,
            summarizer_output_tokens=9,
            verification={"ok": True},
            state={"goal": "x"},
            details={"trigger": "auto"},
        ),
        ForkMarker(source_session_id="elsewhere", at_seq=4),
    ]


# --------------------------------------------------------------------------- sessions


def test_create_get_list_delete(store: SessionStore) -> None:
    a = store.create_session("a", metadata={"title": "first", "tags": ["x"]})
    b = store.create_session(metadata={})
    assert a.id == "a" and a.last_seq == 0 and a.window_start_seq == 1 and a.fork_seq == 0
    assert a.metadata == {"title": "first", "tags": ["x"]}
    assert b.id and b.id != "a"
    assert store.get_session("a") == a
    assert [s.id for s in store.list_sessions()] == ["a", b.id]
    with pytest.raises(SessionExists):
        store.create_session("a")
    store.delete_session("a")
    with pytest.raises(SessionNotFound):
        store.get_session("a")
    with pytest.raises(SessionNotFound):
        store.delete_session("a")
    assert [s.id for s in store.list_sessions()] == [b.id]


def test_returned_metadata_is_a_copy(store: SessionStore) -> None:
    info = store.create_session("s", metadata={"nested": {"k": 1}})
    inner = info.metadata["nested"]
    assert isinstance(inner, dict)
    inner["k"] = 2
    assert store.get_session("s").metadata == {"nested": {"k": 1}}


@pytest.mark.parametrize("bad", ["", "a\nb", "nul\x00", "tab\t", "\udcff", "x" * 501])
def test_bad_session_ids_are_refused(store: SessionStore, bad: str) -> None:
    with pytest.raises(UsageError):
        store.create_session(bad)


def test_metadata_must_be_json(store: SessionStore) -> None:
    with pytest.raises(UsageError):
        store.create_session("s", metadata={"x": object()})  # type: ignore[dict-item]
    assert store.list_sessions() == []


# --------------------------------------------------------------------------- append and read


def test_append_assigns_gapless_seq_and_returns_stored_copies(store: SessionStore) -> None:
    store.create_session("s")
    given = users(3)
    stored = store.append("s", given, expected_last_seq=0)
    assert [(e.session_id, e.seq) for e in stored] == [("s", 1), ("s", 2), ("s", 3)]
    assert [e.seq for e in given] == [0, 0, 0]
    more = store.append("s", users(2, "n"), expected_last_seq=3)
    assert [e.seq for e in more] == [4, 5]
    assert store.read("s") == stored + more
    assert store.get_session("s").last_seq == 5
    assert [e.id for e in store.read("s")] == [e.id for e in given] + [e.id for e in more]


def test_every_kind_round_trips(store: SessionStore) -> None:
    store.create_session("s")
    stored = store.append("s", one_of_each(), expected_last_seq=0)
    assert store.read("s") == stored
    assert {e.kind for e in stored} == {
        "instruction",
        "user",
        "assistant",
        "tool_result",
        "steering",
        "pin",
        "setting",
        "usage",
        "context_edit",
        "tool_set",
        "compaction",
        "fork",
    }


def test_conflict_on_stale_expected_seq(store: SessionStore) -> None:
    store.create_session("s")
    store.append("s", users(2), expected_last_seq=0)
    with pytest.raises(ConflictError) as info:
        store.append("s", users(1, "late"), expected_last_seq=1)
    assert (info.value.session_id, info.value.expected, info.value.actual) == ("s", 1, 2)
    with pytest.raises(ConflictError):
        store.append("s", users(1, "ahead"), expected_last_seq=5)
    with pytest.raises(ConflictError):
        store.append("s", [], expected_last_seq=0)
    assert texts(store.read("s")) == ["m0", "m1"]


def test_append_empty_and_missing_session(store: SessionStore) -> None:
    store.create_session("s")
    assert store.append("s", [], expected_last_seq=0) == []
    with pytest.raises(SessionNotFound):
        store.append("nope", users(1), expected_last_seq=0)
    with pytest.raises(SessionNotFound):
        store.read("nope")
    with pytest.raises(UsageError):
        store.append("s", users(1), expected_last_seq=-1)


def test_duplicate_event_ids_are_refused_whole_batch(store: SessionStore) -> None:
    store.create_session("s")
    store.create_session("t")
    first = store.append("s", users(2), expected_last_seq=0)
    again = UserMessage(id=first[0].id, text="same id")
    with pytest.raises(UsageError, match=first[0].id):
        store.append("t", [UserMessage(text="fine"), again], expected_last_seq=0)
    twin = UserMessage(text="twin")
    with pytest.raises(UsageError):
        store.append("t", [twin, twin], expected_last_seq=0)
    assert store.read("t") == [] and store.get_session("t").last_seq == 0


def test_a_stored_id_deep_in_a_long_batch_is_named_and_nothing_is_stored(store: SessionStore) -> None:
    store.create_session("t")
    first = store.append("t", users(30), expected_last_seq=0)
    batch = users(250, "n")
    batch[230] = UserMessage(id=first[7].id, text="reused")  # in the third INSERT statement of the batch
    with pytest.raises(UsageError, match=f"event id {first[7].id!r} is already stored"):
        store.append("t", batch, expected_last_seq=30)
    assert store.get_session("t").last_seq == 30 and texts(store.read("t")) == texts(first)


def test_a_batch_that_cannot_be_encoded_stores_nothing(store: SessionStore) -> None:
    store.create_session("s")
    bad = ToolCall(id="c", name="n", arguments={"x": object()})  # type: ignore[dict-item]
    with pytest.raises(CodecError):
        store.append("s", [UserMessage(text="ok"), AssistantMessage(tool_calls=(bad,))], expected_last_seq=0)
    with pytest.raises(UsageError):
        store.append("s", [Event()], expected_last_seq=0)
    assert store.get_session("s").last_seq == 0 and store.read("s") == []


def test_read_since_and_stream_across_pages(store: SessionStore) -> None:
    store.create_session("s")
    n = PAGE_SIZE * 2 + 17
    store.append("s", users(n), expected_last_seq=0)
    assert [e.seq for e in store.read("s", since_seq=n - 3)] == [n - 2, n - 1, n]
    assert store.read("s", since_seq=n) == []
    streamed = store.iter_events("s", since_seq=5)
    assert [e.seq for e in streamed] == list(range(6, n + 1))


def test_appended_events_cannot_be_changed_through_the_caller(store: SessionStore) -> None:
    if isinstance(store, MemoryStore) and store.keep_objects:
        pytest.skip("keep_objects gives this up by design (see the test of keep_objects at the end)")
    store.create_session("s")
    args: dict[str, object] = {"path": "a"}
    call = ToolCall(id="c", name="read", arguments=args)  # type: ignore[arg-type]
    store.append("s", [AssistantMessage(tool_calls=(call,))], expected_last_seq=0)
    args["path"] = "changed"
    (event,) = store.read("s")
    assert isinstance(event, AssistantMessage) and event.tool_calls[0].arguments == {"path": "a"}


def test_data_survives_reopening(opener: Opener) -> None:
    first = opener()
    first.create_session("s", metadata={"title": "t"})
    stored = first.append("s", one_of_each(), expected_last_seq=0)
    first.close()
    second = opener()
    assert second.read("s") == stored
    assert second.get_session("s").metadata == {"title": "t"}


def test_hard_text_survives_every_store(store: SessionStore) -> None:
    undecodable = b"ok \xff\xfe\xc3\x28 end \xed\xa0\x80".decode("utf-8", errors="surrogateescape")
    nasty = "nul\x00 inside \x00\x00 and " + undecodable + " \u2028 \U0001f600 \\u0000 literal"
    store.create_session("s", metadata={"title": "nul\x00 and " + undecodable})
    events: list[Event] = [
        ToolResult(call_id="c\x00", tool_name="sh", output=nasty),
        UserMessage(text=nasty),
        AssistantMessage(tool_calls=(ToolCall(id="c", name="w", arguments={"k\x00": nasty}),)),
    ]
    stored = store.append("s", events, expected_last_seq=0)
    assert store.read("s") == stored
    assert isinstance(stored[0], ToolResult) and stored[0].output == nasty
    assert store.get_session("s").metadata == {"title": "nul\x00 and " + undecodable}


def test_fifty_megabyte_tool_output(store: SessionStore) -> None:
    chunk = "line of build log \x00 \udcff ✓ " + "x" * 200 + "\n"
    output = chunk * (50_000_000 // len(chunk) + 1)
    assert len(output) >= 50_000_000
    store.create_session("s")
    store.append("s", [ToolResult(call_id="c", tool_name="build", output=output)], expected_last_seq=0)
    (back,) = store.read("s")
    assert isinstance(back, ToolResult) and back.output == output
    del back, output


def test_threads_sharing_one_store_never_interleave(store: SessionStore) -> None:
    store.create_session("s")
    errors: list[BaseException] = []

    def writer(name: str) -> None:
        try:
            for i in range(20):
                while True:
                    last = store.get_session("s").last_seq
                    try:
                        store.append(
                            "s",
                            [UserMessage(text=f"{name}.{i}.{j}") for j in range(3)],
                            expected_last_seq=last,
                        )
                        break
                    except ConflictError:
                        continue
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(f"w{k}",)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    got = texts(store.read("s"))
    assert len(got) == 4 * 20 * 3 == len(set(got))
    for start in range(0, len(got), 3):
        batch = got[start : start + 3]
        stem = batch[0].rsplit(".", 1)[0]
        assert batch == [f"{stem}.{j}" for j in range(3)]


# --------------------------------------------------------------------------- window


def test_window_starts_at_latest_compaction(store: SessionStore) -> None:
    store.create_session("s")
    store.append("s", users(10), expected_last_seq=0)
    assert len(store.read_window("s")) == 10
    store.append("s", [Compaction(summary="one", first_kept_seq=7)], expected_last_seq=10)
    assert store.get_session("s").window_start_seq == 7
    assert [e.seq for e in store.read_window("s")] == [7, 8, 9, 10, 11]
    store.append("s", [*users(3, "k"), Compaction(summary="two", first_kept_seq=99)], expected_last_seq=11)
    # a first_kept_seq past the compaction itself starts the window at the compaction
    assert store.get_session("s").window_start_seq == 15
    window = store.read_window("s")
    assert [e.seq for e in window] == [15] and isinstance(window[0], Compaction)
    store.append("s", [UserMessage(text="after")], expected_last_seq=15)
    assert texts(store.read_window("s")) == ["compaction", "after"]


def test_other_window_events_do_not_move_the_window(store: SessionStore) -> None:
    store.create_session("s")
    store.append("s", [*users(3), ToolSetChange(exposed=("a",))], expected_last_seq=0)
    assert store.get_session("s").window_start_seq == 1
    assert len(store.read_window("s")) == 4


# --------------------------------------------------------------------------- fork


def test_fork_shares_the_prefix(store: SessionStore) -> None:
    store.create_session("p", metadata={"title": "parent"})
    parent_events = store.append("p", users(5), expected_last_seq=0)
    info = store.fork("p", at_seq=3, new_session_id="f")
    assert (info.parent_session_id, info.fork_seq, info.last_seq) == ("p", 3, 4)
    assert info.metadata == {"title": "parent"}
    events = store.read("f")
    assert events[:3] == parent_events[:3]
    assert all(e.session_id == "p" for e in events[:3])
    marker = events[3]
    assert isinstance(marker, ForkMarker) and (marker.session_id, marker.seq) == ("f", 4)
    assert (marker.source_session_id, marker.at_seq) == ("p", 3)
    store.append("f", users(2, "f"), expected_last_seq=4)
    store.append("p", users(1, "later"), expected_last_seq=5)
    assert texts(store.read("f")) == ["m0", "m1", "m2", "fork", "f0", "f1"]
    assert texts(store.read("f", since_seq=2)) == ["m2", "fork", "f0", "f1"]
    assert texts(store.read("p")) == ["m0", "m1", "m2", "m3", "m4", "later0"]
    assert count_kinds(store, "f") == {"user": 5, "fork": 1}
    with pytest.raises(ConflictError):
        store.append("f", users(1), expected_last_seq=3)


def test_fork_of_a_fork_and_fork_at_zero(store: SessionStore) -> None:
    store.create_session("p")
    store.append("p", users(6), expected_last_seq=0)
    store.fork("p", at_seq=4, new_session_id="f1")
    store.append("f1", users(3, "a"), expected_last_seq=5)
    store.fork("f1", at_seq=7, new_session_id="f2")
    assert texts(store.read("f2")) == ["m0", "m1", "m2", "m3", "fork", "a0", "a1", "fork"]
    # forking below the parent's own fork point reaches straight into the grandparent
    store.fork("f1", at_seq=2, new_session_id="f3")
    assert texts(store.read("f3")) == ["m0", "m1", "fork"]
    zero = store.fork("p", at_seq=0, new_session_id="z")
    assert zero.fork_seq == 0 and texts(store.read("z")) == ["fork"]


def test_fork_refusals(store: SessionStore) -> None:
    store.create_session("p")
    store.create_session("taken")
    store.append("p", users(2), expected_last_seq=0)
    with pytest.raises(UsageError):
        store.fork("p", at_seq=3)
    with pytest.raises(SessionExists):
        store.fork("p", at_seq=1, new_session_id="taken")
    with pytest.raises(SessionNotFound):
        store.fork("nope", at_seq=0)
    assert [s.id for s in store.list_sessions()] == ["p", "taken"]


def test_fork_window_follows_the_prefix(store: SessionStore) -> None:
    store.create_session("p")
    store.append("p", [*users(8), Compaction(summary="s", first_kept_seq=6)], expected_last_seq=0)
    store.append("p", users(3, "n"), expected_last_seq=9)
    store.append("p", [Compaction(summary="later", first_kept_seq=11)], expected_last_seq=12)
    inside = store.fork("p", at_seq=10, new_session_id="inside")
    assert inside.window_start_seq == 6
    assert [e.seq for e in store.read_window("inside")] == [6, 7, 8, 9, 10, 11]
    before = store.fork("p", at_seq=8, new_session_id="before")
    assert before.window_start_seq == 1
    store.append("inside", [Compaction(summary="own", first_kept_seq=10)], expected_last_seq=11)
    assert [e.seq for e in store.read_window("inside")] == [10, 11, 12]


def test_delete_refuses_while_forks_share_events(store: SessionStore) -> None:
    store.create_session("p")
    store.append("p", users(2), expected_last_seq=0)
    store.fork("p", at_seq=2, new_session_id="f")
    store.create_session("sub", parent_session_id="p")
    with pytest.raises(UsageError, match="f"):
        store.delete_session("p")
    store.delete_session("f")
    store.delete_session("p")
    assert store.get_session("sub").parent_session_id == "p"


# --------------------------------------------------------------------------- JSONL


def test_jsonl_round_trip_is_lossless(store: SessionStore) -> None:
    store.create_session("p", metadata={"title": "ünï \x00"})
    store.append("p", one_of_each(), expected_last_seq=0)
    store.fork("p", at_seq=11, new_session_id="f")  # just after the compaction
    store.append("f", users(2), expected_last_seq=12)
    original = store.read("f")
    header = store.get_session("f")
    buf = io.StringIO()
    assert export_jsonl(store, "f", buf) == len(original)
    text = buf.getvalue()
    assert text.isascii() and len(text.splitlines()) == len(original) + 1

    elsewhere = MemoryStore()
    copied = import_jsonl(elsewhere, io.StringIO(text))
    assert copied.id == "f" and copied.created_at == header.created_at and copied.metadata == header.metadata
    assert copied.last_seq == len(original) and copied.fork_seq == 0
    again = io.StringIO()
    export_jsonl(elsewhere, "f", again)

    # event ids are unique per store, and the file holds the parent's shared events too
    with pytest.raises(SessionExists):
        import_jsonl(store, io.StringIO(text))
    store.delete_session("f")
    with pytest.raises(UsageError, match="already stored"):
        import_jsonl(store, io.StringIO(text))
    assert [s.id for s in store.list_sessions()] == ["p"]
    store.delete_session("p")
    back = import_jsonl(store, io.BytesIO(again.getvalue().encode()))
    restored = store.read("f")
    assert [dataclasses.replace(e, session_id="") for e in restored] == [
        dataclasses.replace(e, session_id="") for e in original
    ]
    assert all(e.session_id == "f" for e in restored)
    assert (back.created_at, back.metadata, back.last_seq) == (
        header.created_at,
        header.metadata,
        header.last_seq,
    )
    assert back.window_start_seq == header.window_start_seq == 3


def test_jsonl_import_under_a_new_id_and_without_header(store: SessionStore) -> None:
    source = MemoryStore()
    source.create_session("orig")
    source.append("orig", users(3), expected_last_seq=0)
    buf = io.StringIO()
    export_jsonl(source, "orig", buf)
    renamed = import_jsonl(store, io.StringIO(buf.getvalue()), session_id="renamed")
    assert renamed.id == "renamed" and texts(store.read("renamed")) == ["m0", "m1", "m2"]
    bare = "\n".join(buf.getvalue().splitlines()[1:]).replace('"orig"', '"bare"') + "\n\n"
    with pytest.raises(UsageError):
        import_jsonl(store, io.StringIO(bare))  # same event ids as "renamed"
    fresh = MemoryStore()
    assert import_jsonl(fresh, io.StringIO(bare)).id == "bare"
    with pytest.raises(SessionExists):
        import_jsonl(store, io.StringIO(buf.getvalue()), session_id="renamed")


# --------------------------------------------------------------------------- store-specific


def test_sqlite_fork_does_not_copy_and_rows_are_append_only(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with SQLiteStore(path) as store:
        store.create_session("p")
        store.append("p", users(100), expected_last_seq=0)
        store.fork("p", at_seq=100, new_session_id="f")
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT count(*) FROM events WHERE session_id = 'f'").fetchone() == (1,)
    assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    assert conn.execute("SELECT max(version) FROM schema_migrations").fetchone() == (3,)  # 3: checkpoints in pieces
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        conn.execute("UPDATE events SET data = '{}' WHERE seq = 1")
    conn.close()


def test_sqlite_store_refuses_a_newer_schema(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    SQLiteStore(path).close()
    conn = sqlite3.connect(path)
    conn.execute("INSERT INTO schema_migrations VALUES (99, 0)")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="newer"):
        SQLiteStore(path)


@pytest.mark.postgres
def test_postgres_fork_does_not_copy_and_rows_are_append_only(pg_schema_dsn: str) -> None:
    import psycopg

    with PostgresStore(pg_schema_dsn) as store:
        store.create_session("p")
        store.append("p", users(100), expected_last_seq=0)
        store.fork("p", at_seq=100, new_session_id="f")
        assert "PostgresStore(" in repr(store) and "password" not in repr(store)
    with psycopg.connect(pg_schema_dsn) as conn:
        assert conn.execute("SELECT count(*) FROM contextwarden_events WHERE session_id = 'f'").fetchone() == (1,)
        with pytest.raises(psycopg.Error, match="append-only"):
            conn.execute("UPDATE contextwarden_events SET data = '{}' WHERE seq = 1")


@pytest.mark.postgres
def test_postgres_concurrent_create_session_raises_session_exists(pg_schema_dsn: str) -> None:
    # Each writer has its own connection; the barrier lines them up so several pass the existence
    # check before the first insert commits and the losers meet the primary key instead.
    writers, rounds = 6, 15
    stores = [PostgresStore(pg_schema_dsn) for _ in range(writers)]
    outcomes: list[str] = []
    lock = threading.Lock()

    def create(store: PostgresStore, sid: str, start: threading.Barrier) -> None:
        start.wait()
        try:
            store.create_session(sid)
            outcome = "created"
        except SessionExists as exc:
            outcome = "exists" if repr(sid) in str(exc) else f"exists, unnamed: {exc}"
        except Exception as exc:  # any other error is the failure this test looks for
            outcome = f"{type(exc).__name__}: {exc}"
        with lock:
            outcomes.append(outcome)

    try:
        for n in range(rounds):
            start = threading.Barrier(writers)
            threads = [threading.Thread(target=create, args=(s, f"race-{n}", start)) for s in stores]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
    finally:
        for s in stores:
            s.close()
    assert outcomes.count("created") == rounds
    assert sorted(set(outcomes)) == ["created", "exists"], [o for o in outcomes if o not in ("created", "exists")]


def test_open_store_picks_the_backend(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    default = open_store(None)
    assert isinstance(default, SQLiteStore)
    assert Path(default.path) == tmp_path / ".contextwarden" / "sessions.db"
    default.close()
    assert isinstance(open_store("memory:"), MemoryStore)
    explicit = open_store(str(tmp_path / "x" / "y.db"))
    assert isinstance(explicit, SQLiteStore) and (tmp_path / "x" / "y.db").exists()
    explicit.close()
    url = open_store("sqlite:///rel.db")
    assert isinstance(url, SQLiteStore) and (tmp_path / "rel.db").exists()
    url.close()
    with pytest.raises(UsageError):
        open_store("")


@pytest.mark.postgres
def test_open_store_postgres(pg_schema_dsn: str) -> None:
    store = open_store(pg_schema_dsn)
    assert isinstance(store, PostgresStore)
    store.close()
    with pytest.raises(StoreError, match="closed"):
        store.list_sessions()


def test_missing_psycopg_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)
    with pytest.raises(ImportError, match=r"pip install 'contextwarden\[postgres\]'"):
        PostgresStore("postgresql://127.0.0.1:1/x")


def test_unreachable_postgres_is_a_store_error() -> None:
    pytest.importorskip("psycopg", reason="psycopg (the postgres extra) is not installed")
    with pytest.raises(StoreError, match="cannot connect"):
        PostgresStore("postgresql://nobody@127.0.0.1:1/none", connect_timeout=2)


def test_env_has_no_effect_on_explicit_store(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CONTEXTWARDEN_STORE", "memory:")
    monkeypatch.chdir(tmp_path)
    store = open_store(None)
    assert isinstance(store, SQLiteStore)
    store.close()
    assert os.path.exists(tmp_path / ".contextwarden" / "sessions.db")


@pytest.mark.parametrize(("mode", "pragma"), [("FULL", 2), ("NORMAL", 1)])
def test_sqlite_synchronous_mode_reaches_the_connection(tmp_path: Path, mode: str, pragma: int) -> None:
    store = SQLiteStore(tmp_path / f"{mode}.db", synchronous=mode)
    try:
        assert store._conn.execute("PRAGMA synchronous").fetchone()[0] == pragma
    finally:
        store.close()


def test_sqlite_synchronous_mode_rejects_other_values(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="synchronous"):
        SQLiteStore(tmp_path / "x.db", synchronous="OFF")


def test_large_events_are_bound_a_few_megabytes_per_statement(store: SessionStore) -> None:
    from contextwarden.log.store import _sql

    big = "x" * (_sql.STATEMENT_BYTES // 2 + 1)  # two of these exceed one statement's byte budget
    events = [*users(3), UserMessage(text=big), UserMessage(text=big), UserMessage(text=big), *users(150, "n")]
    store.create_session("t")
    store.append("t", events, expected_last_seq=0)
    stored = store.read("t")
    assert [e.seq for e in stored] == list(range(1, 157))
    assert texts(stored) == texts(events)


def test_statements_cut_by_row_count_and_by_bytes() -> None:
    from contextwarden.log.store._sql import STATEMENT_BYTES, _statements

    def row(n: int, size: int) -> tuple[str, int, str, str, str]:
        return ("s", n, f"e{n}", "user", "x" * size)

    small = [row(n, 10) for n in range(250)]
    assert [len(g) for g in _statements(small, 100)] == [100, 100, 50]
    half = STATEMENT_BYTES // 2 + 1
    mixed = [row(0, 10), row(1, half), row(2, half), row(3, STATEMENT_BYTES * 2), row(4, 10)]
    assert [[r[1] for r in g] for g in _statements(mixed, 100)] == [[0, 1], [2], [3], [4]]


def test_a_memory_store_that_keeps_objects_returns_the_stored_events_themselves() -> None:
    from contextwarden.log.events import ToolCall

    for keep in (False, True):
        store = MemoryStore(keep_objects=keep)
        store.create_session("s")
        call = ToolCall(id="c1", name="bash", arguments={"cmd": "ls"})
        (stored,) = store.append("s", [AssistantMessage(tool_calls=(call,))], expected_last_seq=0)
        (read,) = store.read("s")
        assert read == stored
        assert (read is stored) is keep  # no JSON copy kept, nothing decoded on read
        call.arguments["cmd"] = "rm -rf /"  # a caller mutating what it appended
        (again,) = store.read("s")
        assert (again.tool_calls[0].arguments["cmd"] == "rm -rf /") is keep  # the trade-off keep_objects makes
