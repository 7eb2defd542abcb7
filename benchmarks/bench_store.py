"""Session store benchmarks: append throughput and resume time.

    .venv/bin/python benchmarks/bench_store.py [--sizes 10000,100000,1000000] [--pg-dsn DSN] [--json out.json]

- SQLite append throughput, one event per durable commit and batched (WAL, synchronous=FULL);
- PostgreSQL the same with 1 and 16 writers (each writer its own connection and session), when a
  DSN is given (``--pg-dsn`` or CONTEXTWARDEN_PG_DSN);
- each append case with two write paths, side by side in one run: ``v2``, this release's (msgspec
  codec with per-class field tables, time-ordered event ids) and ``v1``, the previous release's
  (stdlib json over ``dataclasses.fields()`` per call, ``dataclasses.replace`` to place each
  event, uuid4 ids), patched in for the comparison; same store, same durability. SQLite runs each
  case ``--rounds`` times per path, alternating, and keeps the median run;
- resume time (``read_window``) for sessions of 10K, 100K and 1M events whose latest compaction is
  50 events from the end: it must stay flat, because only the window's rows are read.
"""

from __future__ import annotations

import argparse
import base64
import dataclasses
import json
import os
import platform
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from _progress import track

from contextwarden.log.events import Compaction, Event, ToolResult, UserMessage
from contextwarden.log.store import PostgresStore, SessionStore, SQLiteStore, _shared

CODECS = ("v2", "v1")
"""``v2``: the codec; ``v1``: the previous release's, for the side-by-side figures."""

WINDOW_TAIL = 50
"""Events the benchmark sessions keep after their latest compaction."""


@dataclass(frozen=True)
class Row:
    store: str
    codec: str
    case: str
    writers: int
    events: int
    seconds: float
    events_per_s: float
    ms_p50: float
    ms_p95: float


def _payload(i: int, codec_name: str = "v2") -> Event:
    # the previous release made event ids with uuid4; this one's are time-ordered (UUIDv7)
    ids = {"id": uuid.uuid4().hex} if codec_name == "v1" else {}
    if i % 4 == 3:
        return ToolResult(call_id=f"c{i}", tool_name="bash", output=f"$ make test\nok {i}\n" + "." * 400, **ids)
    return UserMessage(text=f"message {i}: " + "lorem ipsum " * 12, **ids)


def _v1_encode_value(value: Any) -> Any:
    if isinstance(value, bytes):
        return {"$b64": base64.b64encode(value).decode("ascii")}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _v1_encode_value(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return [_v1_encode_value(v) for v in value]
    return value


def _v1_dumps_event(event: Event) -> str:
    """The previous release's encoder (commit 647eb5b), verbatim in behaviour; the store still reads it."""
    out: dict[str, Any] = {"kind": event.kind}
    for f in dataclasses.fields(event):
        out[f.name] = _v1_encode_value(getattr(event, f.name))
    return json.dumps(out, ensure_ascii=True, separators=(",", ":"))


def _v1_with_position(event: Event, *, session_id: str, seq: int) -> Event:
    return dataclasses.replace(event, session_id=session_id, seq=seq)


@contextmanager
def codec(name: str) -> Iterator[None]:
    """Run the appends inside with codec ``name`` (``v1`` patches the previous release's in)."""
    if name == "v2":
        yield
        return
    saved = _shared.dumps_event, _shared.with_position
    _shared.dumps_event, _shared.with_position = _v1_dumps_event, _v1_with_position  # type: ignore[assignment]
    try:
        yield
    finally:
        _shared.dumps_event, _shared.with_position = saved


def _percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _appender(store: SessionStore, session_id: str, batches: list[list[Event]]) -> list[float]:
    """Append each batch in one durable commit; return per-append seconds."""
    last = store.get_session(session_id).last_seq
    latencies = []
    for events in batches:
        t = time.perf_counter()
        store.append(session_id, events, expected_last_seq=last)
        latencies.append(time.perf_counter() - t)
        last += len(events)
    return latencies


def bench_append(
    name: str, open_store: Callable[[], SessionStore], *, writers: int, appends: int, batch: int, codec_name: str
) -> Row:
    """``writers`` threads, each with its own store object and session, appending at once.

    events/s is the events over the wall time from the first append to the last one's commit;
    the events are built before, as building them is the caller's work, not the store's.
    """
    stores = [open_store() for _ in range(writers)]
    sids = [s.create_session().id for s in stores]
    results: list[list[float]] = [[] for _ in range(writers)]
    start = threading.Barrier(writers + 1)

    work = [
        [[_payload(a * batch + j, codec_name) for j in range(batch)] for a in range(appends)] for _ in range(writers)
    ]

    failures: list[BaseException] = []

    def run(k: int) -> None:
        start.wait()
        try:
            results[k] = _appender(stores[k], sids[k], work[k])
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(writers)]
    with codec(codec_name):
        for t in threads:
            t.start()
        start.wait()
        t0 = time.perf_counter()
        for t in threads:
            t.join()
        elapsed = time.perf_counter() - t0
    for s in stores:
        s.close()
    if failures:
        raise failures[0]
    latencies = [x for r in results for x in r]
    events = writers * appends * batch
    case = "single" if batch == 1 else f"batch {batch}"
    return Row(
        name,
        codec_name,
        case,
        writers,
        events,
        elapsed,
        events / elapsed,
        _percentile(latencies, 0.5) * 1e3,
        _percentile(latencies, 0.95) * 1e3,
    )


def build_session(store: SessionStore, session_id: str, size: int) -> None:
    """A session of ``size`` events whose latest compaction leaves a window of ``WINDOW_TAIL`` events."""
    store.create_session(session_id)
    compaction_at = size - WINDOW_TAIL + 1
    last = 0
    chunk = 10_000
    while last < size:
        n = min(chunk, size - last)
        events: list[Event] = []
        for seq in range(last + 1, last + n + 1):
            if seq == compaction_at:
                events.append(Compaction(summary="summary of the work so far " * 40, first_kept_seq=seq - 10))
            elif seq % 5000 == 0 and seq < compaction_at:
                events.append(Compaction(summary="an older compaction", first_kept_seq=seq - 10))
            else:
                events.append(_payload(seq))
        store.append(session_id, events, expected_last_seq=last)
        last += n


def bench_resume(name: str, open_store: Callable[[], SessionStore], size: int, repeats: int) -> dict[str, float]:
    """Time opening the store and reading the window, ``repeats`` times; median and p95 in ms."""
    sid = f"resume-{size}"
    store = open_store()
    t = time.perf_counter()
    build_session(store, sid, size)
    build_s = time.perf_counter() - t
    window = store.get_session(sid).window_start_seq
    store.close()
    samples, open_samples = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        store = open_store()
        t1 = time.perf_counter()
        events = store.read_window(sid)
        t2 = time.perf_counter()
        store.close()
        assert events[0].seq == window and len(events) == size - window + 1
        samples.append(t2 - t1)
        open_samples.append(t2 - t0)
    return {
        "size": size,
        "window_events": len(events),
        "read_window_ms_p50": statistics.median(samples) * 1e3,
        "read_window_ms_p95": _percentile(samples, 0.95) * 1e3,
        "open_and_read_ms_p50": statistics.median(open_samples) * 1e3,
        "build_s": build_s,
    }


def _median(rows: list[Row]) -> Row:
    """The run with the median events/s (the machine is shared: single runs swing by 2x)."""
    return sorted(rows, key=lambda r: r.events_per_s)[len(rows) // 2]


def _print_appends(rows: list[Row]) -> None:
    print(
        f"{'store':<10} {'codec':<6} {'case':<10} {'writers':>7} {'events':>8} {'events/s':>10} "
        f"{'p50 ms':>8} {'p95 ms':>8}"
    )
    for r in rows:
        print(
            f"{r.store:<10} {r.codec:<6} {r.case:<10} {r.writers:>7} {r.events:>8} {r.events_per_s:>10.0f} "
            f"{r.ms_p50:>8.2f} {r.ms_p95:>8.2f}"
        )


def _print_resume(rows: list[dict[str, float | str]]) -> None:
    print(f"\n{'store':<10} {'session':>9} {'window':>7} {'read_window p50':>16} {'p95':>8} {'open+read p50':>14}")
    for r in rows:
        print(
            f"{r['store']!s:<10} {r['size']:>9} {r['window_events']:>7} {r['read_window_ms_p50']:>13.2f} ms "
            f"{r['read_window_ms_p95']:>8.2f} {r['open_and_read_ms_p50']:>11.2f} ms"
        )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000,1000000", help="Resume session sizes (comma-separated).")
    parser.add_argument("--pg-sizes", default=None, help="Resume sizes for PostgreSQL (default: --sizes).")
    parser.add_argument("--pg-dsn", default=os.environ.get("CONTEXTWARDEN_PG_DSN"), help="PostgreSQL DSN.")
    parser.add_argument("--appends", type=int, default=300, help="Single-event appends per writer.")
    parser.add_argument("--repeats", type=int, default=15, help="Resume timings per size.")
    parser.add_argument("--rounds", type=int, default=5, help="SQLite append runs per case and codec (median kept).")
    parser.add_argument("--dir", default=None, help="Where SQLite files go (default: a temporary directory).")
    parser.add_argument("--json", dest="json_path", default=None, help="Also write the results here as JSON.")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    pg_sizes = [int(s) for s in args.pg_sizes.split(",") if s] if args.pg_sizes is not None else sizes
    workdir = Path(args.dir or tempfile.mkdtemp(prefix="cw-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)

    def sqlite_at(name: str) -> Callable[[], SessionStore]:
        return lambda: SQLiteStore(workdir / f"{name}.db")

    appends: list[Row] = []
    for batch, count in ((1, args.appends), (100, 100), (1000, 10)):
        runs: dict[str, list[Row]] = {name: [] for name in CODECS}
        for r in track(range(args.rounds), f"appending, batch {batch}"):
            for name in CODECS:  # alternating, so a busy spell on the machine hits both codecs alike
                # a fresh file per run, so no run appends to a bigger table than its twin
                store_at = sqlite_at(f"append-{name}-{batch}-{r}")
                runs[name].append(
                    bench_append("sqlite", store_at, writers=1, appends=count, batch=batch, codec_name=name)
                )
        appends.extend(_median(rows) for rows in runs.values())
    resume: list[dict[str, float | str]] = []
    for size in sizes:
        resume.append({"store": "sqlite", **bench_resume("sqlite", sqlite_at(f"resume-{size}"), size, args.repeats)})
    if args.pg_dsn:
        dsn = args.pg_dsn
        schema = _fresh_schema(dsn)
        try:

            def pg() -> SessionStore:
                return PostgresStore(_with_schema(dsn, schema))

            for writers in (1, 16):
                for batch, count in ((1, args.appends), (100, 20)):
                    for name in CODECS:
                        appends.append(
                            bench_append("postgres", pg, writers=writers, appends=count, batch=batch, codec_name=name)
                        )
            for size in pg_sizes:
                resume.append({"store": "postgres", **bench_resume("postgres", pg, size, args.repeats)})
        finally:
            _drop_schema(dsn, schema)
    else:
        print("PostgreSQL skipped: no --pg-dsn / CONTEXTWARDEN_PG_DSN", file=sys.stderr)
    _print_appends(appends)
    _print_resume(resume)
    if args.json_path:
        machine = {"cpus": os.cpu_count(), "python": sys.version.split()[0], "platform": platform.platform()}
        data = {"machine": machine, "appends": [asdict(r) for r in appends], "resume": resume}
        Path(args.json_path).write_text(json.dumps(data, indent=2) + "\n")


def _fresh_schema(dsn: str) -> str:
    import psycopg

    schema = f"cwbench_{os.getpid()}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        conn.execute(f"CREATE SCHEMA {schema}")
    return schema


def _drop_schema(dsn: str, schema: str) -> None:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


def _with_schema(dsn: str, schema: str) -> str:
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    params = conninfo_to_dict(dsn)
    params["options"] = f"{params.get('options', '')} -csearch_path={schema}".strip()
    return make_conninfo("", **params)


if __name__ == "__main__":
    main()
