"""Added latency of the proxy over a direct call to the same local upstream, side by side in one run.

For sessions of 10, 500 and 2,000 messages (about 50 tokens each: up to ~100K tokens, on a 1M-token
profile so no reduction interferes), each arm first sends the history once (warm-up: the proxy
ingests it), then ``--requests`` streamed calls that each extend the previous request by the
upstream's reply and a new user message, as an agent does (so the proxy finds the session by the
history it extends; sending back a different assistant message would make every call a new session).
Three arms: direct to the scripted upstream; through a plain
pass-through proxy written with the same stack (Starlette + uvicorn + httpx, no parsing); through
``contextwarden proxy`` (manage mode, SQLite). Upstream, plain proxy and contextwarden each run in a
process of their own (as deployed), so none competes with another for the GIL; the client calls the
arms in turn, so load on the machine falls on all three alike. Reported per arm: p50 and p99 of the total time and
of the time to first byte, and the proxy's overhead over direct and over the plain pass-through.

Targets: p50 overhead under 5 ms and p99 under 25 ms at 500 messages on this machine, flat
in session length.

    PYTHONPATH=src .venv/bin/python benchmarks/bench_proxy_latency.py [--format openai_responses] [--requests 100]
        [--in-process] [--json out.json]

``--format`` picks the client's wire format: ``anthropic`` (Claude Code, the default),
``openai_chat`` (the OpenAI SDK's chat completions) or ``openai_responses`` (Codex).
``--requests`` is per arm and size; a p99 of fewer than 100 calls is their slowest one or two.
``--echo client`` sends each answer back in the client's own rendering rather than the model's bytes
(Anthropic: ``"citations": null`` on its text block; Responses: the item's id, status and empty
annotations; Chat: ``"refusal": null``), as Claude Code and Codex do: the proxy must read that as the
same turn, at the cost of an ordinary request.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import gc
import json
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route

from contextwarden.models import get_profile, register_profile
from contextwarden.proxy import forward
from contextwarden.proxy._db import ProxyDB
from contextwarden.proxy.app import Proxy
from contextwarden.proxy.scripted import ScriptedUpstream
from contextwarden.proxy.settings import ProxySettings


@dataclasses.dataclass(frozen=True)
class Wire:
    """What a benchmark client of one wire format sends and reads."""

    fmt: str
    path: str
    model: str
    """A 1M-token profile registered for the run (so no reduction interferes)."""
    like: str
    """The real profile it copies (prices, tokenizer, cache rules)."""
    key: str
    """The body's history list."""


WIRES = {
    "anthropic": Wire("anthropic", "/v1/messages", "bench-claude-1m", "claude-sonnet-4-5", "messages"),
    "openai_chat": Wire("openai_chat", "/v1/chat/completions", "bench-gpt-1m", "gpt-5", "messages"),
    "openai_responses": Wire("openai_responses", "/v1/responses", "bench-gpt-1m", "gpt-5", "input"),
}
WIRE = WIRES["anthropic"]
"""The format of this run (``--format``)."""
ECHO = "model"
"""How an answer goes back (``--echo``): the model's bytes, or the client's own rendering."""
SIZES = (10, 500, 2000)
WORDS = (
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "zeta",
    "eta",
    "theta",
    "iota",
    "kappa",
    "lambda",
    "mu",
    "nu",
    "xi",
    "omicron",
    "pi",
    "rho",
    "sigma",
    "tau",
)


def _plain_proxy(upstream: str) -> Starlette:
    # the same upstream client as the proxy's (pool, keep-alive, limits, timeouts): only the proxy's own work differs
    settings = ProxySettings(anthropic_upstream=upstream, openai_upstream=upstream)
    session: list[Any] = []

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with forward.upstream_session(settings) as opened:
            session.append(opened)
            yield

    async def relay(request: Request) -> StreamingResponse:
        headers = [(k, v) for k, v in request.headers.items() if k not in ("host", "content-length")]
        response = await forward.send(session[0], "POST", upstream + request.url.path, headers, await request.body())

        async def body() -> AsyncIterator[bytes]:
            async for chunk in response.aiter_raw():
                yield chunk
            await response.aclose()

        return StreamingResponse(
            body(), status_code=response.status_code, headers={"content-type": "text/event-stream"}
        )

    return Starlette(routes=[Route(w.path, relay, methods=["POST"]) for w in WIRES.values()], lifespan=lifespan)


def _message(n: int, role: str) -> dict[str, Any]:
    words = " ".join(WORDS[(n * 7 + k) % len(WORDS)] for k in range(36))
    return _said(role, f"{role} {n}: {words}")


def _said(role: str, text: str) -> dict[str, Any]:
    """A history item of ``WIRE``'s format: ``role`` saying ``text``."""
    if WIRE.fmt == "openai_responses":
        part = "output_text" if role == "assistant" else "input_text"
        return {"type": "message", "role": role, "content": [{"type": part, "text": text}]}
    if WIRE.fmt == "openai_chat":
        return {"role": role, "content": text}
    return {"role": role, "content": [{"type": "text", "text": text}]}


def _body(history: list[dict[str, Any]]) -> bytes:
    limit = {"openai_responses": "max_output_tokens", "openai_chat": "max_completion_tokens"}.get(
        WIRE.fmt, "max_tokens"
    )
    body = {"model": WIRE.model, limit: 64, "stream": True, WIRE.key: history}
    return json.dumps(body, separators=(",", ":")).encode()


def _headers(key: str) -> dict[str, str]:
    if WIRE.fmt != "anthropic":
        return {"authorization": f"Bearer {key}", "content-type": "application/json"}
    return {"x-api-key": key, "content-type": "application/json"}


def _history(size: int) -> list[dict[str, Any]]:
    return [_message(n, "user" if n % 2 == 0 else "assistant") for n in range(size - 1 if size % 2 == 0 else size)]


def _call(client: httpx.Client, url: str, messages: list[dict[str, Any]], key: str) -> tuple[float, float, str]:
    """One streamed call: total ms, ms to the first byte, and the reply's text (the agent sends it back)."""
    body = _body(messages)
    started = time.perf_counter()
    first = 0.0
    raw = bytearray()
    with client.stream("POST", url + WIRE.path, content=body, headers=_headers(key)) as r:
        for chunk in r.iter_raw():
            if not first:
                first = time.perf_counter() - started
            raw += chunk
    total = (time.perf_counter() - started) * 1000
    return total, first * 1000, _reply_text(bytes(raw))


def _reply_text(stream: bytes) -> str:
    """The text the SSE stream answered with (its text deltas joined)."""
    text = []
    for line in stream.decode().splitlines():
        if line.startswith("data:"):
            if line[5:].strip() == "[DONE]":
                continue
            data = json.loads(line[5:])
            chat = data.get("choices") or [{}]
            if chat[0].get("delta", {}).get("content"):
                text.append(chat[0]["delta"]["content"])
            elif data.get("type") == "response.output_text.delta":
                text.append(data["delta"])
            elif isinstance(data.get("delta"), dict) and data["delta"].get("type") == "text_delta":
                text.append(data["delta"]["text"])
    return "".join(text)


def _reply(text: str) -> dict[str, Any]:
    said = _said("assistant", text)
    if ECHO == "model":
        return said
    if WIRE.fmt == "openai_responses":
        part = {**said["content"][0], "annotations": []}
        return {"id": f"msg_{abs(hash(text)) % 10**8}", **said, "status": "completed", "content": [part]}
    if WIRE.fmt == "openai_chat":
        return {**said, "refusal": None}
    return {**said, "content": [{**said["content"][0], "citations": None}]}


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _register() -> None:
    for wire in WIRES.values():
        profile = dataclasses.replace(get_profile(wire.like), name=wire.model, aliases=(), context_window=1_000_000)
        register_profile(profile)


def _waiting(app: Any, seconds: float) -> Any:
    """``app`` answering each POST ``seconds`` late, as a model does before its first token."""

    async def waiting(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            await asyncio.sleep(seconds)
        await app(scope, receive, send)

    return waiting


def _serve(role: str, port: int, upstream: str, store: str, first_token: float = 0.0) -> None:
    """Run one arm's server in this process until killed (the upstream answering ``first_token`` s late)."""
    import uvicorn

    _register()
    if role == "upstream":
        # The stand-in provider keeps every request it parsed (its cache simulation compares each with the
        # caller's last), and the collector's full passes over that heap took 25-30 ms at 500 messages
        # (measured with gc.callbacks), one call in fifty: a pause of the provider, not of the proxies,
        # but the paired overheads' p99 took it for theirs. This short-lived process can leak its cycles.
        gc.disable()
        app: Any = ScriptedUpstream().app
        if first_token:
            app = _waiting(app, first_token)
    elif role == "plain":
        app = _plain_proxy(upstream)
    else:
        app = Proxy(ProxySettings(anthropic_upstream=upstream, openai_upstream=upstream, store_url=store)).app
    # a provider keeps idle connections open longer than uvicorn's 5 s; with the default, a connection a
    # caller left idle while the other arms ran could close just as the caller reused it (a reset)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", timeout_keep_alive=75)


def _spawn(role: str, upstream: str, store: str, first_token: float = 0.0) -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [sys.executable, __file__, "--serve", role, "--port", str(port), "--upstream", upstream, "--store", store]
    cmd += ["--first-token", str(first_token)]
    process = subprocess.Popen(cmd)
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            httpx.get(url + "/v1/models", timeout=1)
            return process, url
        except httpx.TransportError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError(f"{role} server did not start")


def _measure(arms: dict[str, str], requests: int, store: str) -> dict[str, Any]:
    report: dict[str, Any] = {}
    counted = 0
    with httpx.Client(timeout=300) as client:
        for size in SIZES:
            history = {arm: _history(size) for arm in arms}
            replies = {}
            for arm, url in arms.items():
                # warm-up: the proxy ingests the history
                replies[arm] = _call(client, url, history[arm], f"{arm}-{size}")[2]
            # the warm-up's own filing (the first ledger row and window checkpoint of a long history) ends
            # before the measured calls start, as it would while the agent runs the call's tools
            client.get(arms["contextwarden"] + "/contextwarden/stats")
            times: dict[str, list[tuple[float, float]]] = {arm: [] for arm in arms}
            for n in range(requests):
                for arm, url in arms.items():  # interleaved, so load on the machine hits every arm alike
                    # as an agent does: the model's own reply goes back, then the next user message
                    history[arm] += [_reply(replies[arm]), _message(size + 2 * n + 1, "user")]
                    total, first, replies[arm] = _call(client, url, history[arm], f"{arm}-{size}")
                    times[arm].append((total, first))
            client.get(arms["contextwarden"] + "/contextwarden/stats")  # waits for the ledger rows
            db = ProxyDB(store)
            added = [float(r[0]) for r in db.execute("SELECT added_ms FROM contextwarden_proxy_ledger ORDER BY at")]
            db.close()
            added, counted = added[counted + 1 :], len(added)  # this size's measured calls, warm-up excluded
            report[str(size)] = _row(arms, times, added, history["direct"])
    return report


def _row(arms: dict[str, str], times: dict[str, list[tuple[float, float]]], added: list[float], history: Any) -> Any:
    row: dict[str, Any] = {}
    for arm in arms:
        total = [t for t, _ in times[arm]]
        ttfb = [f for _, f in times[arm]]
        row[arm] = {
            "p50_ms": _pct(total, 0.5),
            "p95_ms": _pct(total, 0.95),
            "p99_ms": _pct(total, 0.99),
            "ttfb_p50_ms": _pct(ttfb, 0.5),
            "ttfb_p99_ms": _pct(ttfb, 0.99),
        }
    over = [a - b for (a, _), (b, _) in zip(times["contextwarden"], times["direct"], strict=True)]
    first = [a - b for (_, a), (_, b) in zip(times["contextwarden"], times["direct"], strict=True)]
    plain_over = [a - b for (a, _), (b, _) in zip(times["plain"], times["direct"], strict=True)]
    over_plain = [a - b for (a, _), (b, _) in zip(times["contextwarden"], times["plain"], strict=True)]
    row["overhead_vs_direct"] = {"p50_ms": _pct(over, 0.5), "p95_ms": _pct(over, 0.95), "p99_ms": _pct(over, 0.99)}
    row["overhead_vs_plain"] = {"p50_ms": _pct(over_plain, 0.5), "p99_ms": _pct(over_plain, 0.99)}
    row["ttfb_overhead_vs_direct"] = {"p50_ms": _pct(first, 0.5), "p99_ms": _pct(first, 0.99)}
    row["plain_overhead_vs_direct"] = {"p50_ms": _pct(plain_over, 0.5), "p99_ms": _pct(plain_over, 0.99)}
    row["pipeline_ms"] = (
        {"p50_ms": _pct(added, 0.5), "p95_ms": _pct(added, 0.95), "p99_ms": _pct(added, 0.99)} if added else {}
    )
    row["ratio_vs_plain_p50"] = row["contextwarden"]["p50_ms"] / row["plain"]["p50_ms"]
    row["messages_at_end"] = len(history)
    return row


def _pipeline_cpu(requests: int, store: str) -> dict[str, Any]:
    """The pipeline alone, in this process: CPU and wall ms of ``prepare`` per request, at each size.

    The same sessions as the HTTP arms (warm-up, then calls that each extend the last), with the
    answer filed and the ledger row written before the next call, so no other thread of the proxy
    runs meanwhile. CPU time (``time.thread_time``) is what the proxy's own work costs; on a loaded
    machine the wall time adds what the scheduler takes, which the HTTP figures also carry.
    """
    from contextwarden.log.events import AssistantMessage
    from contextwarden.proxy._db import open_session_store
    from contextwarden.proxy.pipeline import Pipeline

    _register()
    settings = ProxySettings(anthropic_upstream="", openai_upstream="", store_url=store)
    session_store, db = open_session_store(store), ProxyDB(store)
    pipeline = Pipeline(settings, session_store, db)
    report: dict[str, Any] = {}
    try:
        for size in SIZES:
            history, key = _history(size), f"in-process-{size}"
            cpu: list[float] = []
            wall: list[float] = []
            for n in range(requests + 1):
                raw = _body(history)
                pipeline.accountant.flush()
                started_cpu, started = time.thread_time(), time.perf_counter()
                prepared = pipeline.prepare(WIRE.fmt, raw, _headers(key), key)
                if n:  # the first call is the warm-up
                    cpu.append((time.thread_time() - started_cpu) * 1000)
                    wall.append((time.perf_counter() - started) * 1000)
                reply = AssistantMessage(text=f"reply {n} " + " ".join(WORDS))
                pipeline.answered(prepared, reply)
                pipeline.record(prepared, status=200, assistant=reply, usage=None)
                history = [*history, _reply(reply.text), _message(size + 2 * n + 1, "user")]
            report[str(size)] = {
                "cpu": {f"p{q}_ms": _pct(cpu, q / 100) for q in (50, 95, 99)},
                "wall": {f"p{q}_ms": _pct(wall, q / 100) for q in (50, 95, 99)},
            }
    finally:
        pipeline.close()
        session_store.close()
        db.close()
    return report


def _print(size: str, row: dict[str, Any]) -> None:
    print(f"{size:>5} messages at the start, {row['messages_at_end']} at the end")
    for arm in ("direct", "plain", "contextwarden"):
        r = row[arm]
        print(
            f"   {arm:<14} total p50 {r['p50_ms']:7.1f} ms  p99 {r['p99_ms']:7.1f} ms"
            f"   ttfb p50 {r['ttfb_p50_ms']:7.1f}  p99 {r['ttfb_p99_ms']:7.1f}"
        )
    o, p, q = row["overhead_vs_direct"], row["overhead_vs_plain"], row["pipeline_ms"]
    f, b = row["ttfb_overhead_vs_direct"], row["plain_overhead_vs_direct"]
    print(
        f"   overhead vs direct p50 {o['p50_ms']:.1f} ms p95 {o['p95_ms']:.1f} ms p99 {o['p99_ms']:.1f} ms;"
        f" to first byte p50 {f['p50_ms']:.1f} ms p99 {f['p99_ms']:.1f} ms;"
        f" plain proxy over direct p50 {b['p50_ms']:.1f} ms p99 {b['p99_ms']:.1f} ms;"
        f" vs plain proxy p50 {p['p50_ms']:.1f} ms p99 {p['p99_ms']:.1f} ms;"
        f" pipeline alone p50 {q.get('p50_ms', 0):.1f} p95 {q.get('p95_ms', 0):.1f} p99 {q.get('p99_ms', 0):.1f} ms;"
        f" {row['ratio_vs_plain_p50']:.2f}x plain",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=100, help="Measured calls per arm and size (default 100).")
    parser.add_argument(
        "--format", choices=sorted(WIRES), default="anthropic", help="The client's wire format (default anthropic)."
    )
    parser.add_argument(
        "--echo", choices=("model", "client"), default="model", help="How answers go back (see the docstring)."
    )
    parser.add_argument("--json", default=None)
    parser.add_argument(
        "--in-process",
        action="store_true",
        help="Also time the pipeline alone in this process (CPU and wall ms of prepare; robust to machine load).",
    )
    parser.add_argument("--serve", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--upstream", default="", help=argparse.SUPPRESS)
    parser.add_argument("--store", default="", help=argparse.SUPPRESS)
    parser.add_argument("--first-token", type=float, default=0.0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    global WIRE, ECHO
    WIRE = WIRES[args.format]
    ECHO = args.echo
    if args.serve:
        _serve(args.serve, args.port, args.upstream, args.store, args.first_token)
        return
    with tempfile.TemporaryDirectory() as tmp:
        store = str(Path(tmp) / "s.db")
        processes = []
        try:
            upstream, up = _spawn("upstream", "", store)
            processes.append(upstream)
            plain, plain_url = _spawn("plain", up, store)
            processes.append(plain)
            proxy, proxy_url = _spawn("proxy", up, store)
            processes.append(proxy)
            report = _measure({"direct": up, "plain": plain_url, "contextwarden": proxy_url}, args.requests, store)
        finally:
            for process in processes:
                process.terminate()
                process.wait(timeout=30)
        if args.in_process:
            in_process = _pipeline_cpu(args.requests, str(Path(tmp) / "in-process.db"))
            for size, row in in_process.items():
                report[size]["pipeline_in_process"] = row
    print(f"{WIRE.fmt} ({WIRE.path}), {args.requests} calls per arm and size, answers echoed as the {ECHO} wrote them")
    for size, row in report.items():
        _print(size, row)
        if "pipeline_in_process" in row:
            c, w = row["pipeline_in_process"]["cpu"], row["pipeline_in_process"]["wall"]
            print(
                f"   pipeline in process: cpu p50 {c['p50_ms']:.2f} p95 {c['p95_ms']:.2f} p99 {c['p99_ms']:.2f} ms;"
                f" wall p50 {w['p50_ms']:.2f} p95 {w['p95_ms']:.2f} p99 {w['p99_ms']:.2f} ms"
            )
    at500 = report["500"]["overhead_vs_direct"]
    print(
        f"target at 500 messages: p50 {at500['p50_ms']:.1f} ms [{'PASS' if at500['p50_ms'] < 5 else 'FAIL'} < 5]"
        f"  p99 {at500['p99_ms']:.1f} ms [{'PASS' if at500['p99_ms'] < 25 else 'FAIL'} < 25]"
    )
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
