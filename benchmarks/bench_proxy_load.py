"""Throughput and added latency of the proxy under concurrent streamed sessions, side by side in one run.

At 1, 10 and 50 concurrent sessions (``--levels``), each session sends ``--turns`` streamed calls
that each extend the previous one by the upstream's reply and a new user message, as an agent does.
The arms, each a server process of its own against one scripted upstream (its own process too):
``direct`` (the upstream itself), ``sqlite`` (``contextwarden proxy`` on a SQLite file) and
``postgres`` (on the PostgreSQL server ``CONTEXTWARDEN_PG_DSN`` names; left out without one), each
once per worker count in ``--workers`` (``sqlite-w2``: two worker processes). At each level every
arm runs ``--rounds`` times, the arms interleaved, so load on the shared machine falls on all of them
alike.

Reported per arm and level: requests per second (all sessions' calls over the wall time), the
client's p50 and p99 per call, the added latency (the arm's percentile less the direct arm's at the
same level), the proxy's own time before forwarding (the ledger's ``added_ms``), and the CPU
milliseconds per call of the arm's server processes (the upstream's for ``direct``; the proxy's,
workers included, for the others) and of the client (this process, driving the sessions), which the
machine's other load does not change as much as it changes the wall-clock figures. For the arms on
PostgreSQL, ``db`` is the CPU milliseconds per call of the PostgreSQL server, which shares the
cores too: its postmaster (the parent of the backend serving a connection to ``CONTEXTWARDEN_PG_DSN``)
and every process under it (all named ``postgres``), user and system time, plus the time of the
backends that exited and were reaped by the postmaster (its ``cutime`` and ``cstime``). This assumes
the server runs on this machine (``/proc`` shows its processes); otherwise the figure is left out,
with a line saying so. Each run of an arm is measured alone (the arms take turns), and the ledger rows
a proxy writes after its run's last answer fall between two measurements. On a machine whose
cores the client, the upstream and the proxy share, the CPU per call bounds the proxy's share of
direct's throughput: about (client + upstream) / (client + upstream + proxy). Targets at 50
sessions: at least 80% of direct's requests per second, added p99 under 50 ms. ``--first-token-ms``
makes the upstream wait before each answer, as a model does: then the model's time, not the CPU of
the three processes on the machine, bounds the throughput, as it does in use.

    PYTHONPATH=src .venv/bin/python benchmarks/bench_proxy_load.py [--levels 1,10,50] [--turns 6]
        [--rounds 2] [--workers 1,2] [--first-token-ms 0] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_proxy_latency as lat

START = 10
"""Messages each session starts with."""
RESENT: list[str] = []
"""Requests sent again after the server closed their kept-alive connection (reported per arm)."""
lat.WIRE = dataclasses.replace(lat.WIRES["anthropic"], model="claude-sonnet-4-5")
"""Short sessions of a real profile: nothing to reduce, so the proxy's cost is its own plumbing."""


def _spawn_proxy(upstream: str, store: str, workers: int, src: str = "") -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    env = {**os.environ, "CONTEXTWARDEN_QUIET": "1"}
    if src:  # another checkout's code (``--compare-src``)
        env["PYTHONPATH"] = src
    cmd = [
        sys.executable,
        "-m",
        "contextwarden",
        "proxy",
        "--port",
        str(port),
        "--anthropic-upstream",
        upstream,
        "--openai-upstream",
        upstream,
        "--store",
        store,
    ]
    if workers > 1:
        cmd += ["--workers", str(workers)]
    process = subprocess.Popen(cmd, env=env, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            httpx.get(url + "/metrics", timeout=1)
            return process, url
        except httpx.TransportError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError("the proxy did not start")


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def _session(client: httpx.AsyncClient, url: str, tag: str, turns: int, times: list[float]) -> None:
    """One agent: ``turns`` streamed calls, each extending the last by the reply and a new user message."""
    key = f"load-{tag}"
    history = lat._history(START)
    history[0] = lat._said("user", f"session {tag}: " + lat._message(0, "user")["content"][0]["text"])
    for n in range(turns):
        body = lat._body(history)
        started = time.perf_counter()
        raw = bytearray()
        for attempt in (1, 2):
            try:
                async with client.stream("POST", url + lat.WIRE.path, content=body, headers=lat._headers(key)) as r:
                    async for chunk in r.aiter_raw():
                        raw += chunk
                    if r.status_code != 200:
                        raise RuntimeError(f"{url}: status {r.status_code}: {bytes(raw)[:200]!r}")
                break
            except (httpx.ReadError, httpx.RemoteProtocolError):
                # the server closed a kept-alive connection as the request went out (its 5 s idle timeout
                # passed while this overloaded client was busy): sent again once, as SDKs do, and counted
                if attempt == 2 or raw:
                    raise
                RESENT.append(url)
        times.append((time.perf_counter() - started) * 1000)
        history += [lat._reply(lat._reply_text(bytes(raw))), lat._message(START + 2 * n + 1, "user")]


def _cpu_seconds(pid: int, *, reaped: bool = False) -> float:
    """User and system CPU seconds of process ``pid`` and every process under it (Linux ``/proc``).

    ``reaped``: with the time of ``pid``'s children that exited and were waited for.
    """
    tick = os.sysconf("SC_CLK_TCK")
    stats: dict[int, tuple[int, float]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            ticks = int(fields[11]) + int(fields[12])
            if reaped and int(entry) == pid:
                ticks += int(fields[13]) + int(fields[14])
            stats[int(entry)] = (int(fields[1]), ticks / tick)
    family, total = {pid}, 0.0
    for _ in range(4):  # a worker supervisor, its workers, their helpers
        family |= {p for p, (parent, _) in stats.items() if parent in family}
    for p in family:
        total += stats.get(p, (0, 0.0))[1]
    return total


def _postmaster(dsn: str) -> int | None:
    """The pid of the postmaster of the PostgreSQL server ``dsn`` names, or ``None`` when it is not on this machine."""
    import psycopg

    with psycopg.connect(dsn, connect_timeout=5) as conn:
        row = conn.execute("SELECT pg_backend_pid()").fetchone()
        try:  # read while the backend lives
            backend = Path(f"/proc/{row[0] if row else 0}/stat").read_text()
            parent = int(backend.rsplit(")", 1)[1].split()[1])
            name = Path(f"/proc/{parent}/comm").read_text().strip()
        except (OSError, ValueError, IndexError):
            return None
    return parent if name == "postgres" and "(postgres)" in backend else None


async def _run(url: str, sessions: int, turns: int) -> tuple[float, list[float]]:
    """Requests per second and per-call ms of ``sessions`` concurrent sessions against ``url``."""
    times: list[float] = []
    limits = httpx.Limits(max_connections=sessions + 4, max_keepalive_connections=sessions + 4)
    async with httpx.AsyncClient(timeout=300, limits=limits) as client:
        run = uuid.uuid4().hex[:8]
        started = time.perf_counter()
        await asyncio.gather(*(_session(client, url, f"{run}-{s}", turns, times) for s in range(sessions)))
        wall = time.perf_counter() - started
    return len(times) / wall, times


def _added_ms(store: str, since: float) -> list[float]:
    from contextwarden.proxy._db import ProxyDB

    db = ProxyDB(store)
    try:
        rows = db.execute("SELECT added_ms FROM contextwarden_proxy_ledger WHERE at >= ? ORDER BY at", (since,))
    finally:
        db.close()
    return [float(r[0]) for r in rows]


def _measure(
    arms: dict[str, tuple[str, str, int]], levels: list[int], turns: int, rounds: int, server: int | None
) -> dict[str, Any]:
    """Each level's figures per arm; ``server``: the PostgreSQL postmaster's pid (its CPU is the arms' ``db``)."""
    report: dict[str, Any] = {}
    for level in levels:
        per: dict[str, dict[str, list[float]]] = {
            arm: {"rps": [], "times": [], "added": [], "cpu": [], "db_cpu": [], "client_cpu": [], "resent": []}
            for arm in arms
        }
        for _ in range(rounds):
            for arm, (url, store, pid) in arms.items():
                db = server if store.startswith(("postgresql://", "postgres://")) else None
                db_cpu = _cpu_seconds(db, reaped=True) if db is not None else 0.0
                since, cpu, client_cpu = time.time(), _cpu_seconds(pid), time.process_time()
                RESENT.clear()
                rps, times = asyncio.run(_run(url, level, turns))
                per[arm]["resent"].append(len(RESENT))
                per[arm]["client_cpu"].append((time.process_time() - client_cpu) * 1000 / len(times))
                per[arm]["cpu"].append((_cpu_seconds(pid) - cpu) * 1000 / len(times))
                if db is not None:
                    per[arm]["db_cpu"].append((_cpu_seconds(db, reaped=True) - db_cpu) * 1000 / len(times))
                per[arm]["rps"].append(rps)
                per[arm]["times"] += times
                if store:
                    httpx.get(url + "/contextwarden/stats", timeout=300)  # the ledger rows are written
                    per[arm]["added"] += _added_ms(store, since)
        row: dict[str, Any] = {}
        for arm, got in per.items():
            times = got["times"]
            row[arm] = {
                "rps": sum(got["rps"]) / len(got["rps"]),
                "p50_ms": lat._pct(times, 0.5),
                "p99_ms": lat._pct(times, 0.99),
                "calls": len(times),
                "resent": int(sum(got["resent"])),
                "cpu_ms_per_call": sum(got["cpu"]) / len(got["cpu"]),
                "client_cpu_ms_per_call": sum(got["client_cpu"]) / len(got["client_cpu"]),
            }
            if got["db_cpu"]:
                row[arm]["db_cpu_ms_per_call"] = sum(got["db_cpu"]) / len(got["db_cpu"])
            if got["added"]:
                row[arm]["own_p50_ms"] = lat._pct(got["added"], 0.5)
                row[arm]["own_p99_ms"] = lat._pct(got["added"], 0.99)
        direct = row["direct"]
        for arm in arms:
            if arm != "direct":
                row[arm]["share_of_direct_rps"] = row[arm]["rps"] / direct["rps"]
                row[arm]["added_p50_ms"] = row[arm]["p50_ms"] - direct["p50_ms"]
                row[arm]["added_p99_ms"] = row[arm]["p99_ms"] - direct["p99_ms"]
        report[str(level)] = row
        _print(level, row)
    return report


def _print(level: int, row: dict[str, Any]) -> None:
    print(f"{level} concurrent sessions", flush=True)
    for arm, r in row.items():
        line = (
            f"   {arm:<12} {r['rps']:7.1f} req/s   p50 {r['p50_ms']:7.1f} ms  p99 {r['p99_ms']:7.1f} ms"
            f"   cpu {r['cpu_ms_per_call']:5.1f} ms/call (client {r['client_cpu_ms_per_call']:4.1f})"
        )
        if "db_cpu_ms_per_call" in r:
            line += f"   db {r['db_cpu_ms_per_call']:5.1f} ms/call"
        if arm != "direct":
            line += (
                f"   {r['share_of_direct_rps']:.2f}x direct   added p50 {r['added_p50_ms']:6.1f} ms"
                f"  p99 {r['added_p99_ms']:6.1f} ms"
            )
        if "own_p50_ms" in r:
            line += f"   own p50 {r['own_p50_ms']:.1f} ms  p99 {r['own_p99_ms']:.1f} ms"
        if r["resent"]:
            line += f"   resent {r['resent']}"
        print(line, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--levels", default="1,10,50", help="Concurrent sessions per level (default 1,10,50).")
    parser.add_argument("--turns", type=int, default=6, help="Calls per session (default 6).")
    parser.add_argument("--rounds", type=int, default=2, help="Runs of each arm per level (default 2).")
    parser.add_argument("--workers", default="1", help="Proxy worker counts, one arm each (default 1; e.g. 1,2).")
    parser.add_argument("--no-postgres", action="store_true", help="Leave the PostgreSQL arm out.")
    parser.add_argument(
        "--first-token-ms",
        type=float,
        default=0.0,
        help="The upstream waits this long before answering each call, as a model does before its first token "
        "(default 0: the proxy's CPU, not the model, bounds the throughput).",
    )
    parser.add_argument(
        "--compare-src",
        default="",
        help="Also run one-process arms on another checkout's src/ (e.g. the code before a change): '<arm>-base'.",
    )
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    levels = [int(n) for n in args.levels.split(",")]
    dsn = os.environ.get("CONTEXTWARDEN_PG_DSN", "")
    processes: list[subprocess.Popen[bytes]] = []
    with tempfile.TemporaryDirectory() as tmp:
        try:
            upstream, up = lat._spawn("upstream", "", "", args.first_token_ms / 1000)
            processes.append(upstream)
            arms: dict[str, tuple[str, str, int]] = {"direct": (up, "", upstream.pid)}
            if args.compare_src:
                for name, store in {"sqlite": str(Path(tmp) / "base.db"), "postgres": dsn}.items():
                    if store and not (name == "postgres" and args.no_postgres):
                        process, url = _spawn_proxy(up, store, 1, args.compare_src)
                        processes.append(process)
                        arms[f"{name}-base"] = (url, store, process.pid)
            for count in [int(n) for n in args.workers.split(",")]:
                stores = {"sqlite": str(Path(tmp) / f"s{count}.db")}
                if dsn and not args.no_postgres:
                    stores["postgres"] = dsn
                for name, store in stores.items():
                    process, url = _spawn_proxy(up, store, count)
                    processes.append(process)
                    arms[f"{name}-w{count}"] = (url, store, process.pid)
            print(
                f"{lat.WIRE.fmt}, {args.turns} calls per session from {START} messages, {args.rounds} rounds, "
                f"workers {args.workers}, first token after {args.first_token_ms:g} ms",
                flush=True,
            )
            server = _postmaster(dsn) if dsn and not args.no_postgres else None
            if dsn and not args.no_postgres and server is None:
                print("db CPU not measured: the PostgreSQL server does not run on this machine", flush=True)
            report = _measure(arms, levels, args.turns, args.rounds, server)
        finally:
            for process in processes:
                process.send_signal(signal.SIGINT)  # a worker supervisor stops its workers on SIGINT
                process.wait(timeout=60)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps({"levels": report}, indent=2))


if __name__ == "__main__":
    main()
