"""Build latency per model call as a session grows, side by side with peers, in one run.

For sessions of 1K, 10K and 100K events (a coding agent's turns: one tool call and its result,
outputs of 50-3,000 tokens, a user message every 25 turns), this measures the time of *one more
call*: append one turn, then produce the next request. contextwarden builds incrementally (only
the new events are projected; compaction keeps the window bounded), so its per-call cost should
stay flat. The peers, run on the very same messages:

- langchain-core ``trim_messages(..., token_counter=count_tokens_approximately, strategy="last")``
  over the full message list, as LangChain's docs use it before each model call;
- openhands-sdk's condenser ``View.from_events`` over the full event list (skipped, with the
  reason, when openhands-sdk is not installed).

The session is pre-built with a build every 20 turns, so compactions happen as they would live.

``--cold`` measures what a stateless worker (or a proxy behind a load balancer) pays on every
request instead: a SQLite session of N turns already exists, and a *new* store handle and a *new*
``ContextManager`` (nothing cached; the token counter is loaded once per worker, as a worker would)
build its next request: with the session's projection checkpoint (the projection resumes from it),
and without it (deleted first: the whole window is folded, then a checkpoint saved), side by side
with a warm build (the writer's manager, one more turn), and what saving a checkpoint costs once
the window moved on by 64 events (``save``: reusing the text of what the previous save wrote, as
a manager does; ``save, full``: encoding everything, a process's first save). Each figure is the median wall time and,
in brackets, CPU time (on a shared machine the wall time includes waiting for a core). It runs at
a 1M-token window (gpt-4.1: masking alone keeps the session in one window, so the window holds
every turn) and at a 32K window (compactions bound the window: the cost should stay flat beyond it).

    .venv/bin/python benchmarks/bench_build.py [--sizes 1000,10000,100000] [--calls 30] [--json OUT]
    .venv/bin/python benchmarks/bench_build.py --cold [--turns 100,300,1000,3000] [--calls 5]
        [--models gpt-4.1,small-32k] [--json OUT]
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from contextwarden.assemble.manager import ContextManager
from contextwarden.context import ToolDefinition
from contextwarden.log.events import AssistantMessage, Event, ToolCall, ToolResult, UserMessage
from contextwarden.log.store.memory import MemoryStore
from contextwarden.tokens import best_counter

MODEL = "gpt-4.1"
TOOLS = (
    ToolDefinition(name="read_file", description="Read a file", parameters={"type": "object"}),
    ToolDefinition(name="bash", description="Run a shell command", parameters={"type": "object"}),
)
WORDS = ["def", "return", "self", "value", "error", "test", "file", "path", "import", "class", "None", "for", "in"]


def turn_events(rng: random.Random, n: int) -> list[Event]:
    """One agent turn: an assistant tool call and its result (and sometimes a user message)."""
    out: list[Event] = []
    if n % 25 == 0:
        out.append(UserMessage(text=f"Step {n}: keep going, and don't touch the public API."))
    cid = f"call-{n}"
    if rng.random() < 0.5:
        call = ToolCall(id=cid, name="read_file", arguments={"path": f"src/mod{rng.randrange(40)}.py"})
    else:
        call = ToolCall(id=cid, name="bash", arguments={"command": f"pytest tests/test_{rng.randrange(10)}.py"})
    size = int(rng.paretovariate(1.3) * 60) % 3_000 + 50
    body = " ".join(rng.choice(WORDS) for _ in range(size))
    out.append(AssistantMessage(text="Looking at it.", tool_calls=(call,)))
    out.append(ToolResult(call_id=cid, tool_name=call.name, output=body))
    return out


def _timed(fn: Callable[[], Any], calls: int, step: Callable[[], None]) -> list[float]:
    times = []
    for _ in range(calls):
        step()
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return times


def bench_contextwarden(n_events: int, calls: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    store = MemoryStore()
    store.create_session("s")
    manager = ContextManager(store, counter=best_counter())
    store.append("s", [UserMessage(text="Fix the failing tests. Never edit migrations/.")], expected_last_seq=0)
    turn = 0
    while store.get_session("s").last_seq < n_events:
        turn += 1
        last = store.get_session("s").last_seq
        store.append("s", turn_events(rng, turn), expected_last_seq=last)
        if turn % 20 == 0:
            manager.build("s", model=MODEL, tools=TOOLS)
    manager.build("s", model=MODEL, tools=TOOLS)

    def step() -> None:
        nonlocal turn
        turn += 1
        store.append("s", turn_events(rng, turn), expected_last_seq=store.get_session("s").last_seq)

    times = _timed(lambda: manager.build("s", model=MODEL, tools=TOOLS), calls, step)
    compactions = sum(1 for e in store.read("s") if e.kind == "compaction")
    return {
        "system": "contextwarden",
        "events": n_events,
        "median_ms": statistics.median(times),
        "p90_ms": sorted(times)[int(0.9 * (len(times) - 1))],
        "compactions": compactions,
    }


def _lc_messages(events: list[Event]) -> list[Any]:
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    out: list[Any] = [SystemMessage(content="You are a coding agent.")]
    for e in events:
        if isinstance(e, UserMessage):
            out.append(HumanMessage(content=e.text))
        elif isinstance(e, AssistantMessage):
            out.append(
                AIMessage(
                    content=e.text,
                    tool_calls=[{"id": c.id, "name": c.name, "args": dict(c.arguments)} for c in e.tool_calls],
                )
            )
        elif isinstance(e, ToolResult):
            out.append(ToolMessage(content=e.output, tool_call_id=e.call_id))
    return out


def bench_langchain(n_events: int, calls: int, seed: int) -> dict[str, Any]:
    try:
        from langchain_core.messages import trim_messages
        from langchain_core.messages.utils import count_tokens_approximately
    except ImportError as exc:
        return {"system": "langchain trim_messages", "events": n_events, "skipped": f"langchain-core missing: {exc}"}
    rng = random.Random(seed)
    events: list[Event] = [UserMessage(text="Fix the failing tests. Never edit migrations/.")]
    turn = 0
    while len(events) < n_events:
        turn += 1
        events += turn_events(rng, turn)
    messages = _lc_messages(events)

    def step() -> None:
        nonlocal turn
        turn += 1
        messages.extend(_lc_messages(turn_events(rng, turn))[1:])

    def call() -> Any:
        return trim_messages(
            messages,
            max_tokens=900_000,
            token_counter=count_tokens_approximately,
            strategy="last",
            start_on="human",
            include_system=True,
        )

    times = _timed(call, calls, step)
    return {
        "system": "langchain trim_messages",
        "events": n_events,
        "median_ms": statistics.median(times),
        "p90_ms": sorted(times)[int(0.9 * (len(times) - 1))],
    }


def bench_openhands(n_events: int, calls: int, seed: int) -> dict[str, Any]:
    try:
        from openhands.sdk.context.view import View  # noqa: F401
    except ImportError as exc:
        why = "openhands-sdk needs Python >= 3.12" if sys.version_info < (3, 12) else str(exc)
        return {"system": "openhands View.from_events", "events": n_events, "skipped": why}
    return _openhands(n_events, calls, seed)


def _openhands(n_events: int, calls: int, seed: int) -> dict[str, Any]:
    from openhands.sdk.context.view import View
    from openhands.sdk.event import ActionEvent, MessageEvent, ObservationEvent
    from openhands.sdk.llm import Message, MessageToolCall, TextContent
    from openhands.sdk.tool.builtins import FinishAction  # a concrete Action the SDK ships
    from openhands.sdk.tool.schema import Observation

    rng = random.Random(seed)
    oh_events: list[Any] = []

    def convert(events: list[Event]) -> None:
        for e in events:
            if isinstance(e, UserMessage):
                oh_events.append(
                    MessageEvent(source="user", llm_message=Message(role="user", content=[TextContent(text=e.text)]))
                )
            elif isinstance(e, AssistantMessage):
                for c in e.tool_calls:
                    oh_events.append(
                        ActionEvent(
                            source="agent",
                            thought=[TextContent(text=e.text)],
                            action=FinishAction(message="x"),
                            tool_name=c.name,
                            tool_call_id=c.id,
                            tool_call=MessageToolCall(
                                id=c.id, name=c.name, arguments=json.dumps(c.arguments), origin="completion"
                            ),
                            llm_response_id=f"r-{c.id}",
                        )
                    )
            elif isinstance(e, ToolResult):
                oh_events.append(
                    ObservationEvent(
                        source="environment",
                        observation=Observation.from_text(e.output),
                        action_id=oh_events[-1].id,
                        tool_name=e.tool_name,
                        tool_call_id=e.call_id,
                    )
                )

    turn = 0
    convert([UserMessage(text="Fix the failing tests. Never edit migrations/.")])
    while len(oh_events) < n_events:
        turn += 1
        convert(turn_events(rng, turn))

    def step() -> None:
        nonlocal turn
        turn += 1
        convert(turn_events(rng, turn))

    times = _timed(lambda: View.from_events(oh_events), calls, step)
    return {
        "system": "openhands View.from_events",
        "events": n_events,
        "median_ms": statistics.median(times),
        "p90_ms": sorted(times)[int(0.9 * (len(times) - 1))],
    }


SMALL_WINDOW = "small-32k"
"""A 32K-window profile for the cold benchmark (registered below), so compactions bound the window."""


def _cold_profiles() -> dict[str, Any]:
    import dataclasses

    from contextwarden.models import get_profile

    small = dataclasses.replace(get_profile(MODEL), name=SMALL_WINDOW, context_window=32_000, max_output_tokens=2_000)
    return {MODEL: get_profile(MODEL), SMALL_WINDOW: small}


def _timed_build(build: Callable[[], Any]) -> tuple[float, float]:
    """Wall and CPU milliseconds of ``build()`` (CPU time too: the machine may be shared)."""
    wall, cpu = time.perf_counter(), time.process_time()
    build()
    return (time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000


def _medians(samples: list[tuple[float, float]]) -> dict[str, float]:
    return {
        "median_ms": statistics.median(w for w, _ in samples),
        "median_cpu_ms": statistics.median(c for _, c in samples),
        "max_ms": max(w for w, _ in samples),
    }


def bench_cold(turns: int, model: str, calls: int, directory: str) -> dict[str, Any]:
    """Build times over a stored session of ``turns``: cold with and without its checkpoint, and warm.

    Cold: a fresh store handle and manager build the next request. With a checkpoint they resume
    the projection from it; without one (deleted before each build) they fold the whole window,
    and then save a checkpoint, as the first build of a new worker does. Warm: the manager that
    wrote the session builds after one more turn (its projection is cached).
    """
    from contextwarden.log.store import SQLiteStore

    profile = _cold_profiles()[model]
    counter = best_counter()
    path = os.path.join(directory, f"cold-{model}-{turns}.db")
    store = SQLiteStore(path)
    store.create_session("s")
    writer = ContextManager(store, counter=counter)
    rng = random.Random(turns)
    store.append("s", [UserMessage(text="Fix the failing tests. Never edit migrations/.")], expected_last_seq=0)
    for n in range(1, turns + 1):
        store.append("s", turn_events(rng, n), expected_last_seq=store.get_session("s").last_seq)
        if n % 20 == 0:
            writer.build("s", model=profile, tools=TOOLS)
    writer.build("s", model=profile, tools=TOOLS)
    window = len(store.read_window("s"))
    events = store.get_session("s").last_seq

    def cold(*, keep_checkpoint: bool) -> tuple[float, float]:
        if not keep_checkpoint:
            with SQLiteStore(path) as other:
                other.delete_checkpoints("s")
        opened: list[SQLiteStore] = []

        def build() -> None:
            opened.append(SQLiteStore(path))
            ContextManager(opened[0], counter=counter).build("s", model=profile, tools=TOOLS)

        try:
            return _timed_build(build)
        finally:
            opened[0].close()

    without = [cold(keep_checkpoint=False) for _ in range(calls)]
    with_checkpoint = [cold(keep_checkpoint=True) for _ in range(calls)]
    warm = []
    for n in range(turns + 1, turns + 1 + calls):
        store.append("s", turn_events(rng, n), expected_last_seq=store.get_session("s").last_seq)
        warm.append(_timed_build(lambda: writer.build("s", model=profile, tools=TOOLS)))
    saves = _save_times(store, writer, rng, turns + 1 + calls, calls)
    store.close()
    return {
        "system": f"contextwarden cold ({model})",
        "turns": turns,
        "events": events,
        "window_events": window,
        "cold_no_checkpoint": _medians(without),
        "cold_checkpoint": _medians(with_checkpoint),
        "warm": _medians(warm),
        **saves,
    }


def _save_times(store: Any, writer: ContextManager, rng: random.Random, first_turn: int, calls: int) -> dict[str, Any]:
    """What saving a checkpoint costs once the window moved on by CHECKPOINT_EVERY events, as a build saves it.

    ``save`` reuses the text of the parts the previous save wrote (the window's memo, as the manager
    keeps it); ``save_full`` encodes the whole projection (the first save of a process).
    """
    from contextwarden.assemble.checkpoints import CHECKPOINT_EVERY, checkpoint_key, save_checkpoint
    from contextwarden.window.checkpoint import FragmentMemo

    key = checkpoint_key(writer.policy, writer.counter)
    memo = FragmentMemo()
    save_checkpoint(store, "s", key, writer.projection("s"), None, memo=memo)
    incremental, full = [], []
    n = first_turn
    for _ in range(calls):
        moved_from = store.get_session("s").last_seq
        while store.get_session("s").last_seq - moved_from < CHECKPOINT_EVERY:
            store.append("s", turn_events(rng, n), expected_last_seq=store.get_session("s").last_seq)
            n += 1
        projection = writer.projection("s")
        full.append(_timed_build(functools.partial(save_checkpoint, store, "s", key, projection, None)))
        incremental.append(
            _timed_build(functools.partial(save_checkpoint, store, "s", key, projection, None, memo=memo))
        )
    return {"save": _medians(incremental), "save_full": _medians(full)}


def main_cold(args: argparse.Namespace) -> None:
    import tempfile

    rows = []
    with tempfile.TemporaryDirectory() as directory:
        for model in args.models.split(","):
            for turns in (int(x) for x in args.turns.split(",")):
                row = bench_cold(turns, model, args.calls, directory)
                rows.append(row)
                print(json.dumps(row), flush=True)
    print()
    print("median ms per build, wall (CPU); cold = a new store handle and manager")
    print(
        f"{'model':<10} {'turns':>6} {'events':>7} {'in window':>10} {'cold, no checkpoint':>20}"
        f" {'cold, checkpoint':>17} {'warm':>13} {'save':>13} {'save, full':>13}"
    )
    for r in rows:
        model = r["system"].split("(")[1].rstrip(")")
        cells = [
            f"{r[k]['median_ms']:.1f} ({r[k]['median_cpu_ms']:.1f})"
            for k in ("cold_no_checkpoint", "cold_checkpoint", "warm", "save", "save_full")
        ]
        print(
            f"{model:<10} {r['turns']:>6} {r['events']:>7} {r['window_events']:>10} {cells[0]:>20} {cells[1]:>17}"
            f" {cells[2]:>13} {cells[3]:>13} {cells[4]:>13}"
        )
    if args.json_out:
        with open(args.json_out, "w", encoding="utf-8") as fh:
            json.dump({"machine": platform.platform(), "python": platform.python_version(), "rows": rows}, fh, indent=2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--calls", type=int, default=30)
    parser.add_argument("--json", dest="json_out")
    parser.add_argument("--cold", action="store_true", help="measure builds by a fresh manager (stateless worker)")
    parser.add_argument("--turns", default="100,300,1000,3000", help="session lengths for --cold")
    parser.add_argument(
        "--models", default=f"{MODEL},{SMALL_WINDOW}", help=f"profiles for --cold: {MODEL} and/or {SMALL_WINDOW}"
    )
    args = parser.parse_args()
    if args.cold:
        main_cold(args)
        return
    rows = []
    for n in (int(x) for x in args.sizes.split(",")):
        for bench in (bench_contextwarden, bench_langchain, bench_openhands):
            try:
                row = bench(n, args.calls, seed=n)
            except Exception as exc:  # a peer's API drift must not hide the other figures
                row = {"system": bench.__name__, "events": n, "skipped": f"{type(exc).__name__}: {exc}"}
            rows.append(row)
            print(json.dumps(row), flush=True)
    print()
    print(f"{'events':>8}  {'system':<30} {'median ms/call':>15} {'p90 ms':>9}  vs contextwarden")
    for n in sorted({r["events"] for r in rows}):
        ours = next((r for r in rows if r["events"] == n and r["system"] == "contextwarden"), None)
        for r in (r for r in rows if r["events"] == n):
            if "skipped" in r:
                print(f"{n:>8}  {r['system']:<30} skipped: {r['skipped'][:70]}")
                continue
            ratio = r["median_ms"] / ours["median_ms"] if ours and "median_ms" in ours else float("nan")
            print(f"{n:>8}  {r['system']:<30} {r['median_ms']:>15.2f} {r['p90_ms']:>9.2f}  {ratio:>6.1f}x")
    if args.json_out:
        with open(args.json_out, "w", encoding="utf-8") as fh:
            json.dump({"machine": platform.platform(), "python": platform.python_version(), "rows": rows}, fh, indent=2)


if __name__ == "__main__":
    main()
