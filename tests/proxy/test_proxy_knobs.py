"""The proxy's task preset, budget and failure taxonomy, through the real path: SDK -> proxy -> scripted upstream."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest

from _proxy import Rig, rig
from contextwarden.assemble.buildrecord import build_settings_of
from contextwarden.log.events import SettingChange, UsageReport
from contextwarden.models import get_profile, register_profile
from contextwarden.plan.spend import SpendLimit
from contextwarden.proxy.scripted import Reply

SONNET = "claude-sonnet-4-5"
SMALL = "proxy-knobs-claude"
"""A Claude profile with a 60K window, so a test session reaches the planner's trigger quickly."""


@pytest.fixture(autouse=True, scope="module")
def _small_profile() -> None:
    base = get_profile(SONNET)
    register_profile(dataclasses.replace(base, name=SMALL, aliases=(), context_window=60_000, max_input_tokens=None))


def _page(n: int) -> str:
    return "\n".join(
        f"https://site{n}.example/page/{i}: handler_{n}_{i} returns {i * n} in this passage" for i in range(80)
    )


def _research(r: Rig, turns: int) -> None:
    """A research agent fetching a 2K-token page per turn."""
    client = r.anthropic("k")
    messages: list[Any] = [{"role": "user", "content": "research every handler"}]
    for n in range(turns):
        call = (f"toolu_{n:03d}", "web_fetch", {"url": f"https://site{n}.example"})
        r.upstream.push(Reply(text=f"reading part {n}", tool_calls=(call,)))
        reply = client.messages.create(model=SMALL, max_tokens=256, system="You are a researcher.", messages=messages)
        messages = [
            *messages,
            {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in reply.content]},
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"toolu_{n:03d}", "content": _page(n)}],
            },
        ]


# --------------------------------------------------------------------------- --policy


def test_a_task_preset_plans_the_proxied_session(tmp_path: Path) -> None:
    forwarded: dict[str | None, list[Any]] = {}
    for preset in (None, "research"):
        with rig(str(tmp_path / f"{preset}.db"), policy=preset) as r:
            _research(r, 40)
            forwarded[preset] = r.forwarded("/v1/messages")[-1]["messages"]
            r.proxy.settle()
            (info,) = r.proxy.store.list_sessions()
            records = [build_settings_of(e) for e in r.proxy.store.read(info.id) if isinstance(e, SettingChange)]
        policy = records[-1].policy if records and records[-1] else None
        assert policy is not None
        assert policy.name == (preset or "proxy")
        # what the proxy must keep, whatever the preset: the client's tools, its thinking, its horizon
        assert not policy.retrieval_tools and not policy.planner.drop_old_thinking
        assert policy.planner.horizon_share == pytest.approx(1 / 3)
    research_tools = [p.name for p in records[-1].policy.tool_policies] if records[-1] else []
    assert "research:evidence" in research_tools
    # the same conversation, planned under another preset, reaches the model differently
    assert forwarded["research"] != forwarded[None]


def test_an_unknown_preset_is_refused_before_the_proxy_listens(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "contextwarden", "proxy", "--policy", "gardening", "--store", str(tmp_path / "s.db")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "gardening" in result.stderr and "research" in result.stderr
    assert not (tmp_path / "s.db").exists()


# --------------------------------------------------------------------------- --spend-limit


def _weights(r: Rig) -> list[float]:
    policy = SpendLimit(limit=1)
    billed = [rec.usage for rec in r.upstream.received if rec.usage is not None]
    return [
        policy.weigh(
            UsageReport(
                input_tokens=u.input_tokens, output_tokens=u.output_tokens, cache_read_tokens=u.cache_read_tokens
            )
        )
        for u in billed
    ]


def _claude_code_turns(client: anthropic.Anthropic, turns: int) -> tuple[int, anthropic.BadRequestError | None]:
    """Main-lane turns, each followed by a title request in a lane of its own; stops at the first refusal."""
    messages: list[Any] = [{"role": "user", "content": "refactor the parser"}]
    sent = 0
    try:
        for n in range(turns):
            reply = client.messages.create(
                model=SONNET, max_tokens=64, system="You are Claude Code.", messages=messages
            )
            sent += 1
            messages = [
                *messages,
                {"role": "assistant", "content": reply.content[0].text},
                {"role": "user", "content": f"go on with step {n}"},
            ]
            client.messages.create(
                model="claude-haiku-4-5",
                max_tokens=16,
                system="Write a 5-word title.",
                messages=[{"role": "user", "content": "refactor the parser"}],
            )
            sent += 1
    except anthropic.BadRequestError as exc:
        return sent, exc
    return sent, None


def test_a_spent_budget_refuses_the_client_session_and_its_side_lanes(tmp_path: Path) -> None:
    limit = 120
    with rig(str(tmp_path / "s.db"), spend_limit=limit) as r:
        client = r.anthropic("k", **{"x-claude-code-session-id": "cc-1"})
        sent, refused = _claude_code_turns(client, 20)
        assert refused is not None, "20 turns must spend 120 weighted tokens"
        assert refused.status_code == 400
        body = refused.body
        assert isinstance(body, dict) and body["type"] == "error"
        assert body["error"]["type"] == "invalid_request_error"
        assert "reached its spend limit" in refused.message and "--spend-limit" in refused.message
        weights = _weights(r)
        # nothing of the refused request went upstream; it came right after the sum reached the limit
        assert len(weights) == sent
        assert sum(weights) >= limit > sum(weights[:-1])
        # the main conversation and the title requests are two sessions that spent one budget
        assert len(r.proxy.store.list_sessions()) == 2
        assert max(sum(weights[0::2]), sum(weights[1::2])) < limit
        # another client session has a budget of its own
        other = r.anthropic("k", **{"x-claude-code-session-id": "cc-2"})
        assert other.messages.create(model=SONNET, max_tokens=8, messages=[{"role": "user", "content": "hi"}])
        rows = r.rows()
        assert [(row.outcome, row.status, row.forwarded_tokens) for row in rows if row.status == 0] == [
            ("budget_exhausted", 0, 0)
        ]
        assert r.proxy.pipeline.ledger.stats()["total"]["refused"] == 1
        metrics = httpx.get(r.url + "/metrics").text
        assert 'contextwarden_proxy_requests_total{format="anthropic",outcome="budget_exhausted"} 1.0' in metrics
        received = len(r.upstream.received)
    # a restarted proxy starts from the ledger: the task stays refused, nothing goes upstream
    with rig(str(tmp_path / "s.db"), spend_limit=limit) as again:
        client = again.anthropic("k", **{"x-claude-code-session-id": "cc-1"})
        with pytest.raises(anthropic.BadRequestError, match="reached its spend limit"):
            client.messages.create(
                model="claude-haiku-4-5",
                max_tokens=16,
                system="Write a 5-word title.",
                messages=[{"role": "user", "content": "refactor the parser"}],
            )
        assert again.upstream.received == []
    assert received == sent + 1


def test_without_a_budget_the_same_session_is_forwarded(tmp_path: Path) -> None:
    with rig(str(tmp_path / "s.db")) as r:
        client = r.anthropic("k", **{"x-claude-code-session-id": "cc-1"})
        sent, refused = _claude_code_turns(client, 6)
        assert refused is None and sent == 12 and sum(_weights(r)) > 120


def test_a_spent_budget_answers_openai_clients_in_their_error_shape(tmp_path: Path) -> None:
    with rig(str(tmp_path / "s.db"), spend_limit=1) as r:
        client = openai.OpenAI(
            base_url=r.url + "/v1", api_key="sk-test", max_retries=0, default_headers={"x-contextwarden-session": "t"}
        )
        r.clients.append(client)
        first = client.chat.completions.create(model="gpt-5", messages=[{"role": "user", "content": "hi"}])
        assert first.choices[0].message.content == "ok"
        with pytest.raises(openai.BadRequestError) as chat:
            client.chat.completions.create(
                model="gpt-5",
                stream=True,
                messages=[
                    {"role": "user", "content": "hi"},
                    {"role": "assistant", "content": "ok"},
                    {"role": "user", "content": "more"},
                ],
            )
        assert chat.value.code == "budget_exhausted" and "reached its spend limit" in chat.value.message
        with pytest.raises(openai.BadRequestError, match="reached its spend limit"):
            client.responses.create(model="gpt-5", input="and now?")
        assert len(r.upstream.received) == 1


# --------------------------------------------------------------------------- proxy stats --taxonomy


def _counts(entry: dict[str, Any]) -> dict[str, int]:
    return {name: n for name, n in entry["taxonomy"]["counts"].items() if n}


def test_stats_tag_each_proxied_sessions_context_failures(tmp_path: Path) -> None:
    store = str(tmp_path / "s.db")
    with rig(store, admin_token="operator") as r:
        _research(r, 6)  # 2K-token pages and little else: tool output dominates every later request
        r.anthropic("other").messages.create(model=SONNET, max_tokens=8, messages=[{"role": "user", "content": "hi"}])
        operator = {"x-api-key": "operator"}  # every key's sessions
        served = httpx.get(r.url + "/contextwarden/stats", params={"taxonomy": "1"}, headers=operator).json()
        plain = httpx.get(r.url + "/contextwarden/stats", headers=operator).json()
        events = sum(len(r.proxy.store.read(s.id)) for s in r.proxy.store.list_sessions())
    assert "taxonomy" not in plain["sessions"][0]
    by_requests = sorted(served["sessions"], key=lambda s: s["requests"])
    assert _counts(by_requests[0]) == {}
    assert _counts(by_requests[1]).get("TOOL_OUTPUT_DOMINANCE", 0) >= 4
    env = {**os.environ, "COLUMNS": "200"}
    command = [sys.executable, "-m", "contextwarden", "proxy", "stats", "--taxonomy", "--store", store]
    result = subprocess.run([*command, "--json"], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    # the model note is read from the profiles the reading process knows: this one registered the test's
    # model, the command's process did not, and says so
    got = [{k: v for k, v in s.items() if k != "model_note"} for s in report["sessions"]]
    expected = [{k: v for k, v in s.items() if k != "model_note"} for s in by_requests]
    assert sorted(got, key=lambda s: s["requests"]) == expected
    table = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    assert "context failures per session" in table.stdout and "TOOL_OUTPUT_DOMINANCE" in table.stdout
    # reading only: the store holds what it held
    with rig(store) as again:
        assert sum(len(again.proxy.store.read(s.id)) for s in again.proxy.store.list_sessions()) == events
