"""Persisted projection checkpoints: a cold build resumes from one and equals a build from scratch.

Every way a checkpoint can be wrong (another policy, another release, an event it names that is not
in the log, a corrupted blob, a compaction after it) must fall back to a full rebuild: the request
is always the one the log alone gives.
"""

from __future__ import annotations

import dataclasses
import json
import random
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from contextwarden import render
from contextwarden.assemble import checkpoints, windows
from contextwarden.assemble.manager import ContextManager
from contextwarden.budget import BudgetPolicy
from contextwarden.context import ModelContext, ToolDefinition
from contextwarden.log.events import AssistantMessage, ContextEditBatch, Event, ToolCall, ToolResult, UserMessage
from contextwarden.log.store import MemoryStore, PostgresStore, SQLiteStore, StoredCheckpoint
from contextwarden.log.store._protocol import SessionStore
from contextwarden.models import get_profile
from contextwarden.plan.policy import ContextPolicy
from contextwarden.tokens import HeuristicCounter
from contextwarden.window.checkpoint import (
    CHECKPOINT_FORMAT,
    CheckpointError,
    FragmentMemo,
    dumps_projection,
    loads_projection,
)

COUNTER = HeuristicCounter()
PROFILE = dataclasses.replace(get_profile("gpt-4o"), name="test-20k", context_window=20_000, max_output_tokens=1_000)
TOOLS = (
    ToolDefinition(name="read_file", description="Read a file", parameters={"type": "object"}),
    ToolDefinition(name="write_file", description="Write a file", parameters={"type": "object"}),
    ToolDefinition(name="bash", description="Run a shell command", parameters={"type": "object"}),
)
WORDS = ["def", "return", "self", "value", "error", "test", "file", "path", "import", "class", "None"]

Opener = Callable[[], SessionStore]


@pytest.fixture(params=["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def opener(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opener]:
    """Opens store handles over one backing store (the same object for memory)."""
    yield from _openers(request, tmp_path)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def sql_opener(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opener]:
    """Like ``opener``, for the stores that keep checkpoints in pieces."""
    yield from _openers(request, tmp_path)


def _openers(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opener]:
    opened: list[SessionStore] = []
    shared = MemoryStore()
    dsn = request.getfixturevalue("pg_schema_dsn") if request.param == "postgres" else ""

    def open_one() -> SessionStore:
        store: SessionStore
        if request.param == "memory":
            return shared
        store = SQLiteStore(tmp_path / "s.db") if request.param == "sqlite" else PostgresStore(dsn)
        opened.append(store)
        return store

    yield open_one
    for store in opened:
        store.close()


def turn(rng: random.Random, n: int) -> list[Event]:
    """One agent turn: re-reads of a few files, writes to them, test runs; a user message now and then."""
    out: list[Event] = []
    if n % 15 == 0:
        out.append(UserMessage(text=f"Step {n}: keep going, and don't touch the public API."))
    cid = f"call-{n}"
    kind = rng.random()
    path = f"src/mod{rng.randrange(5)}.py"
    if kind < 0.5:
        call = ToolCall(id=cid, name="read_file", arguments={"path": path})
    elif kind < 0.65:
        call = ToolCall(id=cid, name="write_file", arguments={"path": path, "content": "x = 1\n"})
    else:
        call = ToolCall(id=cid, name="bash", arguments={"command": f"pytest tests/test_{rng.randrange(3)}.py"})
    body = "\n".join(" ".join(rng.choice(WORDS) for _ in range(12)) for _ in range(rng.randrange(5, 120)))
    out.append(AssistantMessage(text=f"Turn {n}.", tool_calls=(call,)))
    out.append(ToolResult(call_id=cid, tool_name=call.name, output=body if call.name != "write_file" else "ok"))
    return out


def append(store: SessionStore, events: list[Event]) -> None:
    store.append("s", events, expected_last_seq=store.get_session("s").last_seq)


def write_session(store: SessionStore, turns: int = 160, *, policy: ContextPolicy | None = None) -> None:
    """A long session built as an agent would (a build every 4 turns): masks, supersessions, compactions."""
    store.create_session("s")
    writer = ContextManager(store, counter=COUNTER, policy=policy)
    rng = random.Random(11)
    append(store, [UserMessage(text="Fix the failing tests in src/mod1.py. Never edit migrations/.")])
    for n in range(1, turns + 1):
        append(store, turn(rng, n))
        if n % 4 == 0:
            writer.build("s", model=PROFILE, tools=TOOLS)
    writer.build("s", model=PROFILE, tools=TOOLS)


def cold_build(store: SessionStore, *, policy: ContextPolicy | None = None) -> ModelContext:
    return ContextManager(store, counter=COUNTER, policy=policy).build("s", model=PROFILE, tools=TOOLS)


def request_bytes(ctx: ModelContext) -> bytes:
    """The rendered requests, in two wire formats, as bytes."""
    bodies = [render(ctx, fmt) for fmt in ("anthropic", "openai_chat")]
    return json.dumps(bodies, sort_keys=True).encode()


class Spy:
    """Counts full projections of a window (a resumed one makes none)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.full = 0
        real = windows.project

        def counting(*args: object, **kwargs: object) -> object:
            self.full += 1
            return real(*args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(windows, "project", counting)


def key(policy: ContextPolicy | None = None) -> str:
    return checkpoints.checkpoint_key(policy or ContextPolicy(), COUNTER)


def scratch(store: SessionStore, *, policy: ContextPolicy | None = None) -> bytes:
    """The request a build gives without any checkpoint (which it then saves again)."""
    store.delete_checkpoints("s")  # type: ignore[attr-defined]
    return request_bytes(cold_build(store, policy=policy))


def test_a_build_from_the_checkpoint_equals_one_from_scratch(opener: Opener, monkeypatch: pytest.MonkeyPatch) -> None:
    store = opener()
    write_session(store)
    # Events the checkpoint does not cover, and no new tool result: with the default keep of 1, a new turn's
    # result would let the planner mask the one before it, a window event the test must not see.
    append(store, [UserMessage(text="Also check the docs."), AssistantMessage(text="Checking them next.")])
    actions = {e.action for ev in store.read("s") if isinstance(ev, ContextEditBatch) for e in ev.edits}
    assert {"mask", "supersede"} <= actions
    assert any(ev.kind == "compaction" for ev in store.read("s"))
    assert store.load_checkpoint("s", key()) is not None  # type: ignore[attr-defined]
    last = store.get_session("s").last_seq

    spy = Spy(monkeypatch)
    resumed = cold_build(opener())
    assert spy.full == 0  # resumed from the checkpoint, folding only the newer events
    assert resumed.window_event_ids == ()
    assert store.get_session("s").last_seq == last  # the build wrote nothing the scratch build would not see

    rebuilt = scratch(opener())
    assert spy.full == 1
    assert request_bytes(resumed) == rebuilt
    assert resumed.decisions == cold_build(opener()).decisions


def test_a_checkpoint_round_trips_exactly() -> None:
    store = MemoryStore()
    write_session(store, turns=80)
    manager = ContextManager(store, counter=COUNTER)
    projection = manager.projection("s")
    text = dumps_projection(projection, annex={"note": 1})
    restored, annex = loads_projection(text, projection.config)
    assert annex == {"note": 1}
    assert dumps_projection(restored, annex={"note": 1}) == text
    assert restored.items == projection.items and restored.state == projection.state
    assert restored._calls == projection._calls and restored.queue._records == projection.queue._records
    assert restored.normalized() == projection.normalized()


def test_another_policy_rebuilds(opener: Opener, monkeypatch: pytest.MonkeyPatch) -> None:
    store = opener()
    write_session(store, turns=100)
    other = dataclasses.replace(ContextPolicy(), max_item_tokens=3_000)
    assert key(other) != key()
    spy = Spy(monkeypatch)
    built = request_bytes(cold_build(opener(), policy=other))
    assert spy.full == 1
    assert built == scratch(opener(), policy=other)


def test_another_release_rebuilds(opener: Opener, monkeypatch: pytest.MonkeyPatch) -> None:
    store = opener()
    write_session(store, turns=100)
    assert checkpoints.checkpoint_key(ContextPolicy(), COUNTER, version="0.0.1") != key()
    monkeypatch.setattr(checkpoints, "_package_version", lambda: "99.0")
    spy = Spy(monkeypatch)
    built = request_bytes(cold_build(opener()))
    assert spy.full == 1
    assert built == scratch(opener())


def _tamper(store: SessionStore, **changes: object) -> None:
    stored = store.load_checkpoint("s", key())  # type: ignore[attr-defined]
    assert stored is not None
    store.save_checkpoint("s", dataclasses.replace(stored, **changes))  # type: ignore[attr-defined]


def _digest(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()


@pytest.mark.parametrize(
    "corrupt",
    [
        pytest.param(lambda c: {"event_id": "not-the-event"}, id="event id differs"),
        pytest.param(lambda c: {"seq": c.seq + 10_000}, id="seq past the log"),
        pytest.param(lambda c: {"data": c.data.replace('"tokens":', '"tokenz":', 1)}, id="digest mismatch"),
        pytest.param(lambda c: {"data": c.data[:-9], "digest": _digest(c.data[:-9])}, id="truncated json"),
        pytest.param(
            lambda c: {"data": (d := c.data.replace('"tokens":', '"tokenz":', 1)), "digest": _digest(d)},
            id="malformed part",
        ),
        pytest.param(
            lambda c: {
                "data": (d := c.data.replace(f'"format":{CHECKPOINT_FORMAT}', '"format":0', 1)),
                "digest": _digest(d),
            },
            id="other format",
        ),
    ],
)
def test_a_wrong_checkpoint_rebuilds(
    opener: Opener, monkeypatch: pytest.MonkeyPatch, corrupt: Callable[[StoredCheckpoint], dict[str, object]]
) -> None:
    store = opener()
    write_session(store, turns=100)
    stored = store.load_checkpoint("s", key())  # type: ignore[attr-defined]
    _tamper(store, **corrupt(stored))
    spy = Spy(monkeypatch)
    built = request_bytes(cold_build(opener()))
    assert spy.full == 1
    assert built == scratch(opener())


def test_a_compaction_after_the_checkpoint_rebuilds(opener: Opener, monkeypatch: pytest.MonkeyPatch) -> None:
    store = opener()
    write_session(store, turns=100)
    stored = store.load_checkpoint("s", key())  # type: ignore[attr-defined]
    writer = ContextManager(store, counter=COUNTER)
    rng = random.Random(5)
    n = 1_000
    while not any(e.kind == "compaction" for e in store.read("s", since_seq=stored.seq)):
        n += 1
        append(store, turn(rng, n))
        writer.build("s", model=PROFILE, tools=TOOLS)
        _tamper(store, seq=stored.seq, event_id=stored.event_id, data=stored.data, digest=stored.digest)
    spy = Spy(monkeypatch)
    built = request_bytes(cold_build(opener()))
    assert spy.full == 1
    assert built == scratch(opener())


def test_a_deleted_session_keeps_no_checkpoint(opener: Opener) -> None:
    store = opener()
    write_session(store, turns=80)
    assert store.load_checkpoint("s", key()) is not None  # type: ignore[attr-defined]
    store.delete_session("s")
    assert store.load_checkpoint("s", key()) is None  # type: ignore[attr-defined]


def test_a_part_the_checkpoint_does_not_know_is_refused() -> None:
    store = MemoryStore()
    write_session(store, turns=20)
    projection = ContextManager(store, counter=COUNTER).projection("s")
    projection.queue.new_field = 1  # type: ignore[attr-defined]
    with pytest.raises(CheckpointError, match="new_field"):
        dumps_projection(projection)
    saved = checkpoints.save_checkpoint(store, "s", key(), projection, None)
    assert saved is False


def test_a_save_with_the_memo_writes_what_a_full_save_writes() -> None:
    store = MemoryStore()
    write_session(store, turns=60)
    # the whole reserve below this small window, so the builds mask and supersede but do not compact
    policy = ContextPolicy(budget=BudgetPolicy(reserve_tokens=32_768))
    manager = ContextManager(store, counter=COUNTER, policy=policy)
    memo = FragmentMemo()
    first = dumps_projection(manager.projection("s"), memo=memo)
    assert first == dumps_projection(manager.projection("s"))
    kept = len(memo)
    rng = random.Random(3)
    for n in range(700, 740):  # new items, and builds that mask or supersede old ones
        append(store, turn(rng, n))
        if n % 4 == 0:
            manager.build("s", model=PROFILE, tools=TOOLS)
    projection = manager.projection("s")
    assert dumps_projection(projection, memo=memo) == dumps_projection(projection)
    assert len(memo) > kept  # the new parts are kept for the next save, the replaced ones dropped
    assert len(memo) == len(projection.items) + len(projection._calls) + len(projection.queue._records)


def test_values_only_json_writes_survive_a_save_with_the_memo() -> None:
    store = MemoryStore()
    store.create_session("s")
    append(store, [UserMessage(text="Fix the parser.")])
    call = ToolCall(id="c1", name="bash", arguments={"command": "run", "limit": float("nan"), "bad": "\udcff"})
    append(store, [AssistantMessage(text="Trying.", tool_calls=(call,))])
    append(store, [ToolResult(call_id="c1", tool_name="bash", output="bytes \udcfe and NUL \x00 here")])
    projection = ContextManager(store, counter=COUNTER).projection("s")
    text = dumps_projection(projection, annex={"rate": float("inf")}, memo=FragmentMemo())
    restored, annex = loads_projection(text, projection.config)
    assert annex == {"rate": float("inf")}
    limit = restored.items[1].message.tool_calls[0].arguments["limit"]
    assert isinstance(limit, float) and limit != limit  # NaN, not null
    assert restored.items[2].message.text == projection.items[2].message.text
    assert dumps_projection(restored, annex={"rate": float("inf")}) == text


def test_a_resumed_window_does_not_normalize_its_settled_prefix_again(monkeypatch: pytest.MonkeyPatch) -> None:
    from contextwarden.window import accounting

    store = MemoryStore()
    write_session(store, turns=80)
    projection = ContextManager(store, counter=COUNTER).projection("s")
    projection.normalized()
    restored, _ = loads_projection(dumps_projection(projection), projection.config)
    normalized: list[int] = []
    real = accounting.normalize_pairing

    def counting(messages: list[object], **kwargs: object) -> object:
        normalized.append(len(messages))
        return real(messages, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(accounting, "normalize_pairing", counting)
    assert restored.normalized() == projection.normalized()
    settled = projection._prefix._upto
    assert settled > len(projection.items) // 2
    assert sum(normalized) <= 2 * (len(projection.items) - settled)  # only the tail, once for each


def test_a_normalized_prefix_naming_an_item_outside_it_is_refused() -> None:
    store = MemoryStore()
    write_session(store, turns=40)
    projection = ContextManager(store, counter=COUNTER).projection("s")
    projection.normalized()
    data = json.loads(dumps_projection(projection))
    data["prefix"]["messages"][-1] = data["prefix"]["upto"]
    with pytest.raises(CheckpointError, match="outside the prefix"):
        loads_projection(json.dumps(data), projection.config)


def _pieces_held(store: SessionStore) -> set[str]:
    """The digests of the checkpoint pieces a SQL store holds for the session."""
    d = store.dialect  # type: ignore[attr-defined]
    with store._transaction(write=False) as cur:  # type: ignore[attr-defined]
        return {row[0] for row in cur.execute(f"SELECT digest FROM {d.pieces} WHERE session_id = {d.param}", ("s",))}


def test_a_save_writes_only_the_pieces_that_changed(sql_opener: Opener) -> None:
    store = sql_opener()
    store.create_session("s")
    data = "".join(f"[piece {n:03d}]" for n in range(40))
    offsets = tuple(range(0, len(data), len("[piece 000]")))
    first = StoredCheckpoint(key="k", seq=1, event_id="e1", digest=_digest(data), data=data, pieces=offsets)
    store.save_checkpoint("s", first)  # type: ignore[attr-defined]
    held = _pieces_held(store)
    assert len(held) == 40
    changed = data.replace("[piece 007]", "[piece 7!!]") + "[piece 040]"
    second = dataclasses.replace(first, seq=2, data=changed, digest=_digest(changed), pieces=(*offsets, len(data)))
    store.save_checkpoint("s", second)  # type: ignore[attr-defined]
    now = _pieces_held(store)
    assert len(now) == 41 and len(held - now) == 1  # one piece replaced, one added, the old one dropped
    loaded = sql_opener().load_checkpoint("s", "k")  # type: ignore[attr-defined]
    assert loaded is not None and loaded.data == changed and loaded.seq == 2


def test_a_checkpoint_missing_a_piece_rebuilds(sql_opener: Opener, monkeypatch: pytest.MonkeyPatch) -> None:
    store = sql_opener()
    write_session(store, turns=100)
    d = store.dialect  # type: ignore[attr-defined]
    with store._transaction(write=True) as cur:  # type: ignore[attr-defined]
        digest = cur.execute(f"SELECT digest FROM {d.pieces} WHERE session_id = {d.param}", ("s",)).fetchone()[0]
        cur.execute(f"DELETE FROM {d.pieces} WHERE digest = {d.param}", (digest,))
    assert store.load_checkpoint("s", key()) is None  # type: ignore[attr-defined]
    spy = Spy(monkeypatch)
    built = request_bytes(cold_build(sql_opener()))
    assert spy.full == 1
    assert built == scratch(sql_opener())


def test_a_caller_saved_checkpoint_is_never_written_inside_a_build(opener: Opener) -> None:
    store = opener()
    store.create_session("s")
    manager = ContextManager(store, counter=COUNTER, checkpoints="caller")
    rng = random.Random(5)
    append(store, [UserMessage(text="Fix the failing tests.")])
    for n in range(1, 60):
        append(store, turn(rng, n))
        manager.build("s", model=PROFILE, tools=TOOLS)
    assert store.get_session("s").last_seq > 2 * checkpoints.CHECKPOINT_EVERY
    assert store.load_checkpoint("s", key()) is None  # type: ignore[attr-defined]
    assert manager.save_checkpoint("s")  # due: the window moved on by far more than CHECKPOINT_EVERY
    saved = store.load_checkpoint("s", key())  # type: ignore[attr-defined]
    assert saved is not None and saved.seq == store.get_session("s").last_seq
    assert not manager.save_checkpoint("s")  # not due again until the window moves on
    assert request_bytes(cold_build(store)) == request_bytes(manager.build("s", model=PROFILE, tools=TOOLS))
