"""Bad input and faults: crashes mid-append, racing processes and writers, malformed imports."""

from __future__ import annotations

import functools
import io
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from contextwarden.errors import CodecError, ConflictError, StoreError
from contextwarden.log.events import UserMessage
from contextwarden.log.store import (
    MemoryStore,
    PostgresStore,
    SessionStore,
    SQLiteStore,
    export_jsonl,
    import_jsonl,
)

# --------------------------------------------------------------------------- kill -9 mid-append

_APPENDER = textwrap.dedent(
    """
    import random, sys
    from contextwarden.log.events import UserMessage
    from contextwarden.log.store.sqlite import SQLiteStore

    path, run = sys.argv[1], int(sys.argv[2])
    rng = random.Random(run)
    store = SQLiteStore(path)
    last = store.get_session("s").last_seq
    print("ready", last, flush=True)
    while True:
        n = rng.choice((1, 1, 3, 10, 40, 200))
        first = last + 1
        events = []
        for seq in range(first, first + n):
            body = "x" * rng.randrange(0, 3000)
            text = f"seq={seq};batch={first}-{first + n - 1};{body};end={seq}"
            events.append(UserMessage(id=f"e{seq}", text=text))
        store.append("s", events, expected_last_seq=last)
        last += n
        print("acked", last, flush=True)
    """
)


def _check_events(store: SQLiteStore, after: int) -> int:
    """Every event after ``after`` is whole, at its own seq, and its batch is complete; return last seq."""
    last = store.get_session("s").last_seq
    batch_end = after
    for event in store.iter_events("s", since_seq=after):
        assert isinstance(event, UserMessage) and event.id == f"e{event.seq}"
        head, batch, body, tail = event.text.split(";")
        assert head == f"seq={event.seq}" and tail == f"end={event.seq}" and set(body) <= {"x"}
        lo, hi = (int(x) for x in batch.removeprefix("batch=").split("-"))
        assert lo <= event.seq <= hi
        batch_end = max(batch_end, hi)
    # an append is all or nothing: the newest stored event ends its batch
    assert batch_end == last
    return last


def _reader(stream: io.BufferedReader | io.TextIOWrapper, lines: list[str]) -> None:
    for line in stream:
        lines.append(line if isinstance(line, str) else line.decode())


@pytest.mark.slow
def test_kill_9_mid_append_loses_no_acknowledged_event(tmp_path: Path) -> None:
    path = tmp_path / "crash.db"
    with SQLiteStore(path) as store:
        store.create_session("s")
    rng = random.Random(7)
    verified = 0
    total_acked = 0
    for run in range(22):
        errlog = tmp_path / f"run{run}.err"
        with (
            errlog.open("w") as err,
            subprocess.Popen(
                [sys.executable, "-c", _APPENDER, str(path), str(run)],
                stdout=subprocess.PIPE,
                stderr=err,
                text=True,
            ) as proc,
        ):
            assert proc.stdout is not None
            lines: list[str] = []
            reader = threading.Thread(target=_reader, args=(proc.stdout, lines))
            reader.start()
            deadline = time.monotonic() + 30
            while not any(line.startswith("ready") for line in lines):
                assert proc.poll() is None, errlog.read_text()
                assert time.monotonic() < deadline, "appender did not start"
                time.sleep(0.01)
            time.sleep(rng.uniform(0.1, 0.45))
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            reader.join()
        assert proc.returncode == -signal.SIGKILL, errlog.read_text()
        # a line cut short by the kill was never a complete acknowledgement
        acked = [int(line.split()[1]) for line in lines if line.startswith("acked") and line.endswith("\n")]
        with SQLiteStore(path) as store:
            last = _check_events(store, verified)
        assert acked, "the appender was killed before its first append; nothing was tested"
        assert last >= acked[-1], f"run {run}: acknowledged seq {acked[-1]} lost (store has {last})"
        total_acked += acked[-1] - verified
        verified = last
    with SQLiteStore(path) as store:
        events = store.read("s")
    assert [e.seq for e in events] == list(range(1, verified + 1))
    assert len({e.id for e in events}) == len(events)
    assert total_acked >= 2000, f"only {total_acked} events acknowledged over all runs"


# --------------------------------------------------------------------------- two processes, one session

_RACER = textwrap.dedent(
    """
    import os, sys, time
    from contextwarden.errors import ConflictError
    from contextwarden.log.events import UserMessage
    from contextwarden.log.store.sqlite import SQLiteStore

    path, name, barrier = sys.argv[1], sys.argv[2], sys.argv[3]
    store = SQLiteStore(path)
    conflicts = 0
    # both racers read last_seq = 0, then append at once: exactly one of the two first appends wins
    last = store.get_session("s").last_seq
    open(os.path.join(barrier, name), "w").close()
    while len(os.listdir(barrier)) < 2:
        time.sleep(0.001)
    for i in range(150):
        size = 1 + i % 4
        while True:
            events = [UserMessage(id=f"{name}-{i}-{j}", text=f"{name}.{i}.{j}") for j in range(size)]
            try:
                stored = store.append("s", events, expected_last_seq=last)
            except ConflictError as exc:
                conflicts += 1
                last = exc.actual
                continue
            last = stored[-1].seq
            print("acked", stored[0].seq, stored[-1].seq, i, flush=True)
            break
    print("conflicts", conflicts, flush=True)
    """
)


def test_two_processes_appending_to_one_session(tmp_path: Path) -> None:
    path = tmp_path / "race.db"
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    with SQLiteStore(path) as store:
        store.create_session("s")
    procs = {
        name: subprocess.Popen(
            [sys.executable, "-c", _RACER, str(path), name, str(barrier)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("a", "b")
    }
    outputs = {name: p.communicate(timeout=120) for name, p in procs.items()}
    for name, (_, err) in outputs.items():
        assert procs[name].returncode == 0, err
    acked: dict[int, tuple[str, int, int]] = {}
    conflicts = 0
    for name, (out, _) in outputs.items():
        for line in out.splitlines():
            parts = line.split()
            if parts[0] == "acked":
                first, last, i = int(parts[1]), int(parts[2]), int(parts[3])
                assert first not in acked
                acked[first] = (name, i, last)
            else:
                conflicts += int(parts[1])
    assert conflicts >= 1
    with SQLiteStore(path) as store:
        events = store.read("s")
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert len(events) == 2 * sum(1 + i % 4 for i in range(150))
    by_seq = {e.seq: e for e in events}
    for first, (name, i, last) in acked.items():
        assert [getattr(by_seq[s], "text", "") for s in range(first, last + 1)] == [
            f"{name}.{i}.{j}" for j in range(last - first + 1)
        ]
    assert sum(last - first + 1 for first, (_, _, last) in acked.items()) == len(events)


def test_sqlite_busy_beyond_timeout_is_a_store_error(tmp_path: Path) -> None:
    path = tmp_path / "busy.db"
    store = SQLiteStore(path, busy_timeout=0.2)
    store.create_session("s")
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(StoreError, match="locked"):
            store.append("s", [UserMessage(text="x")], expected_last_seq=0)
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert [e.seq for e in store.append("s", [UserMessage(text="x")], expected_last_seq=0)] == [1]
    store.close()


def test_corrupt_sqlite_row_is_reported_not_returned(tmp_path: Path) -> None:
    path = tmp_path / "corrupt.db"
    with SQLiteStore(path) as store:
        store.create_session("s")
        store.append("s", [UserMessage(text="a"), UserMessage(text="b")], expected_last_seq=0)
    conn = sqlite3.connect(path)
    conn.execute("DROP TRIGGER events_append_only")
    conn.execute('UPDATE events SET data = \'{"kind": "user"}\' WHERE seq = 2')
    conn.commit()
    conn.close()
    with SQLiteStore(path) as store, pytest.raises(StoreError, match="seq 2 is corrupt"):
        store.read("s")


# --------------------------------------------------------------------------- PostgreSQL, many writers


@pytest.mark.postgres
def test_postgres_many_writers_many_sessions(pg_schema_dsn: str) -> None:
    writers, sessions, appends_each = 24, 120, 40
    with PostgresStore(pg_schema_dsn) as setup:
        for k in range(sessions):
            setup.create_session(f"s{k}")
    start = threading.Barrier(writers)
    acked: list[tuple[str, int, list[str]]] = []
    first_round_conflicts: list[int] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def work(w: int) -> None:
        rng = random.Random(w)
        store = PostgresStore(pg_schema_dsn)
        try:
            # everyone read s0 at seq 0 and appends at once: exactly one wins, the rest conflict
            start.wait()
            try:
                store.append("s0", [UserMessage(id=f"w{w}-first", text="first")], expected_last_seq=0)
                with lock:
                    acked.append(("s0", 1, [f"w{w}-first"]))
            except ConflictError:
                with lock:
                    first_round_conflicts.append(w)
            for i in range(appends_each):
                sid = "s0" if rng.random() < 0.3 else f"s{rng.randrange(sessions)}"
                ids = [f"w{w}-{i}-{j}" for j in range(rng.randint(1, 3))]
                while True:
                    last = store.get_session(sid).last_seq
                    try:
                        stored = store.append(sid, [UserMessage(id=x, text=x) for x in ids], expected_last_seq=last)
                    except ConflictError:
                        continue
                    with lock:
                        acked.append((sid, stored[0].seq, ids))
                    break
        except BaseException as exc:
            errors.append(exc)
        finally:
            store.close()

    threads = [threading.Thread(target=work, args=(w,)) for w in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert errors == []
    assert len(first_round_conflicts) == writers - 1
    expected: dict[str, dict[int, list[str]]] = {}
    for sid, first, ids in acked:
        assert first not in expected.setdefault(sid, {})
        expected[sid][first] = ids
    total = 0
    with PostgresStore(pg_schema_dsn) as check:
        for k in range(sessions):
            sid = f"s{k}"
            events = check.read(sid)
            assert [e.seq for e in events] == list(range(1, len(events) + 1))
            want = [x for _, ids in sorted(expected.get(sid, {}).items()) for x in ids]
            assert [e.id for e in events] == want
            total += len(events)
    assert total == sum(len(ids) for _, _, ids in acked)
    assert len({x for _, _, ids in acked for x in ids}) == total


# --------------------------------------------------------------------------- bad JSONL


@pytest.fixture(params=["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SessionStore]:
    store: SessionStore
    if request.param == "memory":
        store = MemoryStore()
    elif request.param == "sqlite":
        store = SQLiteStore(tmp_path / "s.db")
    else:
        store = PostgresStore(request.getfixturevalue("pg_schema_dsn"))
    yield store
    store.close()


@functools.cache
def _export_lines(n: int) -> list[str]:
    source = MemoryStore()
    source.create_session("src")
    # more than one page and one insert batch, so a failure near the end must roll back stored rows
    source.append("src", [UserMessage(text=f"m{i}") for i in range(n)], expected_last_seq=0)
    buf = io.StringIO()
    export_jsonl(source, "src", buf)
    return buf.getvalue().splitlines()


def _breakages() -> list[tuple[str, int, str]]:
    """(name, 1-based line to break, expected message fragment); line 1 is the header."""
    return [
        ("bad_json", 600, "invalid JSON"),
        ("unknown_kind", 550, "unknown event kind 'telepathy'"),
        ("missing_field", 601, "missing field(s) ['text']"),
        ("unknown_field", 520, "unknown field(s) ['mood']"),
        ("seq_gap", 650, "expected 649"),
        ("duplicate_id", 602, "appears twice"),
        ("second_header", 510, "header may only be the first line"),
        ("bad_header", 1, "unsupported format"),
        ("not_utf8", 590, "not UTF-8"),
    ]


def _break(lines: list[str], name: str, lineno: int) -> bytes:
    broken = list(lines)
    i = lineno - 1
    record = json.loads(broken[i])
    if name == "bad_json":
        broken[i] = broken[i][:-5]
    elif name == "unknown_kind":
        record["kind"] = "telepathy"
    elif name == "missing_field":
        del record["text"]
    elif name == "unknown_field":
        record["mood"] = "calm"
    elif name == "seq_gap":
        record["seq"] += 1
    elif name == "duplicate_id":
        record["id"] = json.loads(broken[2])["id"]
    elif name == "second_header":
        broken[i] = broken[0]
    elif name == "bad_header":
        record["format"] = "something/9"
    if name not in ("bad_json", "second_header", "not_utf8"):
        broken[i] = json.dumps(record)
    data = ("\n".join(broken) + "\n").encode()
    if name == "not_utf8":
        start = sum(len(x) + 1 for x in broken[:i])
        data = data[: start + 10] + b"\xff\xfe" + data[start + 12 :]
    return data


@pytest.mark.parametrize(("name", "lineno", "fragment"), _breakages(), ids=[b[0] for b in _breakages()])
def test_bad_jsonl_names_the_line_and_imports_nothing(
    any_store: SessionStore, name: str, lineno: int, fragment: str
) -> None:
    lines = _export_lines(700)
    any_store.create_session("bystander")
    with pytest.raises(CodecError) as info:
        import_jsonl(any_store, io.BytesIO(_break(lines, name, lineno)))
    assert f"line {lineno}:" in str(info.value)
    assert fragment in str(info.value)
    assert [s.id for s in any_store.list_sessions()] == ["bystander"]
    # nothing half-imported blocks a clean import afterwards
    assert import_jsonl(any_store, io.StringIO("\n".join(lines))).last_seq == 700
