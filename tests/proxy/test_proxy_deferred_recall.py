"""Recall through a client that defers MCP tools (Codex): the proxy reads the server from the listing.

Codex declares no MCP tool up front: its opening developer text lists each server as a namespace
(``Deferred tool namespaces:``), the model loads one with a client-executed ``tool_search``, and then
calls ``recall`` in it (a ``function_call`` with a ``namespace``). The session is played over real
HTTP through the proxy in Codex's own item shapes.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import httpx
import pytest

from _proxy import Rig, rig
from contextwarden.log.events import Compaction
from contextwarden.models import get_profile, register_profile
from contextwarden.proxy.recall import SERVER_INSTRUCTIONS
from contextwarden.proxy.scripted import Reply

SMALL = "proxy-test-gpt-deferred"
"""A GPT profile with a 60K window, so a test session reaches the planner's trigger quickly."""

LISTING = (
    "<tools>\nDeferred tool namespaces:\n"
    f"- mcp__contextwarden: {SERVER_INSTRUCTIONS[:200]}...\n"
    "- multi_agent_v1: Tools for spawning and managing sub-agents.\n</tools>"
)
"""Codex 0.171.0's listing of deferred tools, as its opening developer message ends (the server's instructions cut)."""

EXEC = {"type": "function", "name": "exec_command", "description": "Run", "parameters": {"type": "object"}}
SEARCH = {"type": "tool_search", "execution": "client", "description": "Find deferred tools", "parameters": {}}
NAMESPACE = {
    "type": "namespace",
    "name": "mcp__contextwarden",
    "description": SERVER_INSTRUCTIONS,
    "tools": [{"type": "function", "name": "recall", "description": "...", "defer_loading": True, "parameters": {}}],
}


@pytest.fixture
def small_profile() -> None:
    base = get_profile("gpt-5")
    register_profile(
        dataclasses.replace(
            base, name=SMALL, aliases=(), context_window=60_000, max_output_tokens=16_000, max_input_tokens=None
        )
    )


def _output(n: int) -> str:
    return "\n".join(f"src/module_{n}/file_{i}.py:{i}: def handler_{n}_{i}(request): return {i * n}" for i in range(80))


def _developer(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": text}]}


def _post(r: Rig, items: list[Any]) -> list[Any]:
    body = {"model": SMALL, "input": items, "tools": [EXEC, SEARCH], "store": False, "stream": False}
    answer = httpx.post(f"{r.url}/v1/responses", json=body, headers={"authorization": "Bearer sk-codex"}, timeout=60)
    assert answer.status_code == 200, answer.text
    return list(answer.json()["output"])


def _play(r: Rig, opening: str, *, added_at: int | None = None, recall_at: int | None = None) -> list[dict[str, Any]]:
    """60 shell calls of 2K-token outputs; ``added_at``: the listing arrives then, as a later developer message."""
    items: list[Any] = [_developer(opening), {"type": "message", "role": "user", "content": "fix the failing handler"}]
    for n in range(60):
        if n == added_at:
            items.append(_developer(LISTING.replace("Deferred tool namespaces", "Added deferred tool namespaces")))
        if n == recall_at:
            r.upstream.push(Reply(text="", tool_calls=(("call_search", "tool_search", {"query": "recall"}),)))
            items += _post(r, items)
            items.append(
                {"type": "tool_search_output", "call_id": "call_search", "status": "completed", "execution": "client"}
                | {"tools": [NAMESPACE]}
            )
            recall = ("call_recall", "mcp__contextwarden.recall", {"id": "0" * 32})
            r.upstream.push(Reply(text="", tool_calls=(recall,)))
            items += _post(r, items)
            items.append({"type": "function_call_output", "call_id": "call_recall", "output": "recalled"})
        r.upstream.push(Reply(text=f"part {n}", tool_calls=((f"call_{n:03d}", "exec_command", {"cmd": f"grep {n}"}),)))
        items += _post(r, items)
        items.append({"type": "function_call_output", "call_id": f"call_{n:03d}", "output": _output(n)})
    r.upstream.push(Reply(text="done"))
    _post(r, items)
    r.proxy.settle()
    return r.forwarded("/v1/responses")


def _placeholders(body: dict[str, Any]) -> dict[str, str]:
    return {
        i["call_id"]: i["output"]
        for i in body["input"]
        if i.get("type") == "function_call_output" and isinstance(i["output"], str) and i["output"].startswith("[")
    }


def test_placeholders_name_the_deferred_recall_and_never_change(tmp_path: Path, small_profile: None) -> None:
    with rig(str(tmp_path / "s.db")) as r:
        bodies = _play(r, "You are Codex.\n" + LISTING)
        events = [e for s in r.proxy.store.list_sessions() for e in r.proxy.store.read(s.id)]
    shown: dict[str, str] = {}
    for body in bodies:
        for call_id, text in _placeholders(body).items():
            assert shown.setdefault(call_id, text) == text, "a placeholder once forwarded changed"
    masked = [t for t in shown.values() if "masked" in t]
    assert masked, "60 outputs of 2K tokens on a 60K window must mask some"
    assert all(re.search(r'Get it back with mcp__contextwarden\.recall\(id="[0-9a-f]{32}"\)\]$', t) for t in masked)
    assert not [e for e in events if isinstance(e, Compaction)]


def test_a_server_listed_only_later_leaves_the_wording_as_it_began(tmp_path: Path, small_profile: None) -> None:
    """Naming the tool from the middle of a session on would reword every placeholder already sent."""
    with rig(str(tmp_path / "s.db")) as r:
        bodies = _play(r, "You are Codex.", added_at=5)
    masked = [t for body in bodies for t in _placeholders(body).values() if "masked" in t]
    assert masked and all("(not retrievable in this session)" in t and "recall(" not in t for t in masked)


def test_a_tool_search_and_a_namespaced_call_go_through_as_the_client_sent_them(
    tmp_path: Path, small_profile: None
) -> None:
    with rig(str(tmp_path / "s.db")) as r:
        bodies = _play(r, "You are Codex.\n" + LISTING, recall_at=3)
        events = [e for s in r.proxy.store.list_sessions() for e in r.proxy.store.read(s.id)]
        rows = r.rows()
    # the model's tool search and namespaced call, and the client's search output, reach the upstream
    # in every later request as the client sent them, and the session is never restarted for them
    last = bodies[-1]["input"]
    search = next(i for i in last if i.get("type") == "tool_search_call")
    assert search["call_id"] == "call_search" and search["execution"] == "client"
    found = next(i for i in last if i.get("type") == "tool_search_output")
    assert found["tools"] == [NAMESPACE]
    call = next(i for i in last if i.get("call_id") == "call_recall" and i["type"] == "function_call")
    assert (call["namespace"], call["name"]) == ("mcp__contextwarden", "recall")
    assert not [e for e in events if isinstance(e, Compaction)]
    assert [row.outcome for row in rows if row.outcome in ("fallback", "upstream_error")] == []
    assert json.dumps(found) in json.dumps(bodies[-1])
