"""Manage and observe mode over real HTTP: what is forwarded, byte stability, the bill, fail-open."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import httpx
import pytest

from _proxy import Rig, normalized_messages, rig
from contextwarden.errors import StoreError
from contextwarden.governance.inspection import inspect_session
from contextwarden.governance.session import replay_session
from contextwarden.log.events import WINDOW_KINDS, Compaction
from contextwarden.log.store import SQLiteStore
from contextwarden.models import get_profile, register_profile
from contextwarden.plan.compaction import OVERFLOW_TRIGGER
from contextwarden.proxy.bodyedit import count_breakpoints
from contextwarden.proxy.scripted import Reply

SMALL = "proxy-test-claude"
"""A Claude profile with a 60K window, so a test session reaches the planner's trigger quickly."""


@pytest.fixture(autouse=True, scope="module")
def _small_profile() -> None:
    base = get_profile("claude-sonnet-4-5")
    register_profile(dataclasses.replace(base, name=SMALL, aliases=(), context_window=60_000, max_input_tokens=None))


def _output(n: int) -> str:
    return "\n".join(f"src/module_{n}/file_{i}.py:{i}: def handler_{n}_{i}(request): return {i * n}" for i in range(80))


def _session(r: Rig, turns: int, *, key: str = "k") -> list[Any]:
    client = r.anthropic(key)
    messages: list[Any] = [{"role": "user", "content": "find every handler and fix the failing one"}]
    for n in range(turns):
        r.upstream.push(
            Reply(text=f"looking at part {n}", tool_calls=((f"toolu_{n:03d}", "Bash", {"cmd": f"grep {n}"}),))
        )
        reply = client.messages.create(model=SMALL, max_tokens=256, system="You are a coding agent.", messages=messages)
        messages = [
            *messages,
            {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in reply.content]},
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"toolu_{n:03d}", "content": _output(n)}],
            },
        ]
    return messages


def _window_events(r: Rig) -> int:
    r.proxy.settle()
    (info,) = r.proxy.store.list_sessions()
    return sum(e.kind in WINDOW_KINDS for e in r.proxy.store.read(info.id))


def test_sixty_turns_stay_byte_stable_between_window_events(tmp_path: Path) -> None:
    with rig(str(tmp_path / "s.db")) as r:
        _session(r, 60)
        bodies = r.forwarded("/v1/messages")
        assert len(bodies) == 60
        breaks = []
        for n in range(1, len(bodies)):
            before, after = normalized_messages(bodies[n - 1]), normalized_messages(bodies[n])
            assert bodies[n]["system"] == bodies[n - 1]["system"]
            if after[: len(before)] != before:
                breaks.append(n)
        # the tail and, once the planner has a frontier, a breakpoint just before it; never more than 4
        marks = [count_breakpoints(b) for b in bodies]
        assert max(marks) <= 4 and 2 in marks
        windows = _window_events(r)
        assert windows >= 1, "60 turns of 2K-token outputs on a 60K window must reach the planner"
        assert 1 <= len(breaks) <= windows
        masked = [
            b["content"]
            for m in bodies[-1]["messages"]
            if isinstance(m["content"], list)
            for b in m["content"]
            if b.get("type") == "tool_result"
        ]
        assert sum(c != _output(i) for i, c in enumerate(masked)) > len(masked) // 2
        assert masked[-1] == _output(58)  # the newest result is verbatim
        # the proxy offers no retrieval tool, so no placeholder may point to one
        assert not any("read_range" in c for c in masked)
        assert any('Bash(cmd="grep 0")' in c for c in masked)
        # the simulated cache agrees: every request that extends the previous one reads the cache
        usage = [rec.usage for rec in r.upstream.received if rec.usage is not None]
        for n in range(2, len(usage)):
            if n not in breaks:
                assert usage[n].cache_read_tokens > 0, n
        rows = r.rows()
        assert sum(row.forwarded_tokens for row in rows) < 0.8 * sum(row.client_tokens for row in rows)
        r.proxy.settle()
        stats = r.proxy.pipeline.ledger.stats()["total"]
        assert stats["effective_cost_usd"] < stats["client_cost_usd"]


def test_observe_mode_forwards_the_clients_bytes_and_records_the_saving(tmp_path: Path) -> None:
    with rig(str(tmp_path / "s.db"), mode="observe") as r:
        messages = _session(r, 40)
        last = r.upstream.received[-1]
        assert b"cache_control" not in last.body  # nothing added, nothing masked
        sent = r.forwarded("/v1/messages")[-1]
        assert sent["messages"] == messages[:-2]
        rows = r.rows()
        assert {row.outcome for row in rows} == {"observed"}
        # the usage measured the client's request, not the projection: it must not anchor the estimate
        (info,) = r.proxy.store.list_sessions()
        assert not [e for e in r.proxy.store.read(info.id) if e.kind == "usage"]
        assert sum(row.projected_cost_usd for row in rows) < sum(row.client_cost_usd for row in rows)
        assert _window_events(r) >= 1


class _BreakableStore(SQLiteStore):
    """A real SQLite store that can be switched off, as if its disk or server went away."""

    down = False

    def __getattribute__(self, name: str) -> Any:
        if name in ("append", "read", "read_window", "get_session", "create_session") and object.__getattribute__(
            self, "down"
        ):
            raise StoreError("store is down (test)")
        return object.__getattribute__(self, name)


def test_store_failure_falls_back_to_the_original_bytes_then_recovers(tmp_path: Path) -> None:
    store = _BreakableStore(str(tmp_path / "s.db"))
    with rig(str(tmp_path / "s.db"), store=store) as r:
        client = r.anthropic("k")
        history: list[Any] = [{"role": "user", "content": "hello"}]
        client.messages.create(model=SMALL, max_tokens=16, messages=history)
        store.down = True
        raw = httpx.post(
            r.url + "/v1/messages",
            content=b'{"model":"%s","max_tokens":16,"messages":[{"role":"user","content":"hello"},'
            b'{"role":"assistant","content":"ok"},{"role":"user","content":"again"}]}' % SMALL.encode(),
            headers={"x-api-key": "k"},
        )
        assert raw.status_code == 200
        assert r.upstream.received[-1].body == raw.request.content  # the client's own bytes went upstream
        store.down = False
        history += [{"role": "assistant", "content": "ok"}, {"role": "user", "content": "again"}]
        reply = client.messages.create(model=SMALL, max_tokens=16, messages=history)
        assert reply.content[0].text == "ok"
        outcomes = [row.outcome for row in r.rows()]
        assert outcomes[0] == "projected" and outcomes[-1] == "projected"
        assert "fallback" in outcomes
        metrics = httpx.get(r.url + "/metrics").text
        assert "contextwarden_proxy_fallbacks_total 1.0" in metrics
        (info,) = store.list_sessions()
        users = [e.text for e in store.read(info.id) if e.kind == "user"]
        assert users == ["hello", "again"]


def test_stats_endpoint_reports_per_session_totals(tmp_path: Path) -> None:
    with rig(str(tmp_path / "s.db")) as r:
        _session(r, 3)
        stats = httpx.get(r.url + "/contextwarden/stats", headers={"x-api-key": "k"}).json()  # the session's key
        (session,) = stats["sessions"]
        assert session["requests"] == 3
        assert session["input_tokens"] == sum(rec.usage.input_tokens for rec in r.upstream.received if rec.usage)
        assert stats["total"]["requests"] == 3


def _outgrow_the_upstream(r: Rig, *, stream: bool) -> list[Any]:
    """14 tool turns whose outputs outgrow a 12K-token upstream (the proxy compacts); the client's history."""
    client = r.anthropic("k")
    messages: list[Any] = [{"role": "user", "content": "find every handler and fix the failing one"}]
    for n in range(14):
        r.upstream.push(Reply(text=f"part {n}", tool_calls=((f"toolu_{n:03d}", "Bash", {"cmd": f"grep {n}"}),)))
        if stream:
            with client.messages.stream(model=SMALL, max_tokens=64, messages=messages) as s:
                reply = s.get_final_message()
        else:
            reply = client.messages.create(model=SMALL, max_tokens=64, messages=messages)
        messages += [
            {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in reply.content]},
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"toolu_{n:03d}", "content": _output(n)}],
            },
        ]
    return messages


def test_context_overflow_before_streaming_compacts_once_and_retries(tmp_path: Path) -> None:
    from contextwarden.proxy.scripted import ScriptedUpstream

    upstream = ScriptedUpstream(max_input_tokens=12_000)
    with rig(str(tmp_path / "s.db"), upstream=upstream) as r:
        _outgrow_the_upstream(r, stream=True)
        refused = [rec for rec in r.upstream.received if rec.usage is None]
        assert refused, "the session must outgrow the upstream's limit"
        rows = r.rows()
        assert len(rows) == 14 and all(row.status == 200 for row in rows)
        assert any("context overflow" in row.note for row in rows)
        (info,) = r.proxy.store.list_sessions()
        compactions = [e for e in r.proxy.store.read(info.id) if isinstance(e, Compaction)]
        assert compactions and compactions[0].summarizer != "mirror"
        # the decision is recorded on the event, through the one entry point, and inspect lists it
        overflow = [e for e in compactions if e.details.get("trigger") == OVERFLOW_TRIGGER]
        assert overflow and overflow[0].details["reason"] == "the upstream reported a context overflow"
        listed = {d.target: d.reason for d in inspect_session(r.proxy.store, info.id).standing}
        assert listed[overflow[0].id] == "as recorded: the upstream reported a context overflow"
        # the replay lint reads copies it (its own planner, at the model's 200K window, would not compact)
        after = next(t for t in replay_session(r.proxy.store, info.id) if t.seq > overflow[0].seq)
        assert "compaction" in after.window_events


def _direct_count(r: Rig, messages: list[Any]) -> int:
    body = {"model": SMALL, "system": "You are a coding agent.", "messages": messages}
    reply = httpx.post(r.upstream_url + "/v1/messages/count_tokens", json=body, headers={"x-api-key": "k"})
    return int(reply.json()["input_tokens"])


@pytest.mark.parametrize("mode", ["manage", "observe"])
def test_count_tokens_counts_what_the_proxy_would_forward(tmp_path: Path, mode: str) -> None:
    with rig(str(tmp_path / "s.db"), mode=mode) as r:
        messages = _session(r, 40)
        assert _window_events(r) >= 1  # the planner reduced something, so the two counts can differ
        (info,) = r.proxy.store.list_sessions()
        logged = len(r.proxy.store.read(info.id))
        client = r.anthropic("k")
        counted = client.messages.count_tokens(model=SMALL, system="You are a coding agent.", messages=messages)
        direct = _direct_count(r, messages)
        if mode == "observe":
            assert counted.input_tokens == direct
        else:
            # the log's reductions applied to the client's body, as the next /v1/messages would forward it
            assert counted.input_tokens < direct * 0.8
            sent = r.forwarded("/v1/messages/count_tokens")[-2]  # the last one is the direct count
            assert sent["system"] == "You are a coding agent." and len(sent["messages"]) == len(messages)
        r.proxy.settle()
        assert [s.id for s in r.proxy.store.list_sessions()] == [info.id]  # counting opened no session
        assert len(r.proxy.store.read(info.id)) == logged  # and wrote nothing into the log


def test_count_tokens_after_a_planner_compaction_counts_the_rendered_window(tmp_path: Path) -> None:
    from contextwarden.proxy.scripted import ScriptedUpstream

    upstream = ScriptedUpstream(max_input_tokens=12_000)
    with rig(str(tmp_path / "s.db"), upstream=upstream) as r:
        client = r.anthropic("k")
        messages = _outgrow_the_upstream(r, stream=False)
        r.proxy.settle()
        (info,) = r.proxy.store.list_sessions()
        assert [e for e in r.proxy.store.read(info.id) if e.kind == "compaction" and e.summarizer != "mirror"]
        logged = len(r.proxy.store.read(info.id))

        counted = client.messages.count_tokens(model=SMALL, messages=messages)
        counted_body = r.forwarded("/v1/messages/count_tokens")[-1]
        direct = httpx.post(
            r.upstream_url + "/v1/messages/count_tokens",
            json={"model": SMALL, "messages": messages},
            headers={"x-api-key": "k"},
        ).json()["input_tokens"]
        r.proxy.settle()
        assert len(r.proxy.store.read(info.id)) == logged  # counting wrote nothing into the log

        r.upstream.push(Reply(text="done"))
        client.messages.create(model=SMALL, max_tokens=64, messages=messages)
        sent_body = r.forwarded("/v1/messages")[-1]
        # the compacted window plus the client's new tool result, as the next request forwards it
        assert normalized_messages(counted_body) == normalized_messages(sent_body)
        assert counted.input_tokens < direct
