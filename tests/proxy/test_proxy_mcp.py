"""``contextwarden mcp`` over the proxy's real store, through the official MCP client (in process and over stdio)."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters

from _paths import ROOT
from _proxy import Rig, rig
from contextwarden.context import ToolDefinition
from contextwarden.errors import StoreError
from contextwarden.log.events import ToolResult
from contextwarden.log.store import SQLiteStore
from contextwarden.models import get_profile, register_profile
from contextwarden.proxy.mcp import TOOLS, build_server
from contextwarden.proxy.policy import recall_tool_of
from contextwarden.proxy.recall import RECALL_DESCRIPTION, Credential
from contextwarden.proxy.scripted import Reply

# what a terminal tool prints: CRLF, a progress bar redrawn with \r, ANSI colour, trailing blanks, no final newline
RAW = "".join(f"step {i}\r\n" for i in range(1, 301)) + "50%\r100%\r\n\x1b[32mok\x1b[0m   \n\tlast line, no newline  "


def _session(r: Rig, key: str, output: str) -> None:
    client = r.anthropic(key)
    messages: list[Any] = [{"role": "user", "content": "run the build"}]
    r.upstream.push(Reply(text="running", tool_calls=(("toolu_1", "Bash", {"command": "make"}),)))
    reply = client.messages.create(model="claude-sonnet-4-5", max_tokens=64, messages=messages)
    messages += [
        {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in reply.content]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": output}]},
    ]
    r.upstream.push(Reply(text="built"))
    client.messages.create(model="claude-sonnet-4-5", max_tokens=64, messages=messages)
    r.proxy.settle()


def _result_id(store: Any, output: str) -> str:
    """The recall id (the event id) of the tool result holding ``output``."""
    for info in store.list_sessions():
        for event in store.read(info.id):
            if isinstance(event, ToolResult) and event.output == output:
                return event.id
    raise AssertionError("no such tool result")


def _call(server: Any, tool: str, **arguments: Any) -> tuple[bool, str]:
    async def go() -> tuple[bool, str]:
        async with Client(server) as client:
            result = await client.call_tool(tool, arguments)
            return bool(result.is_error), "".join(getattr(c, "text", "") for c in result.content)

    return anyio.run(go)


@pytest.fixture
def served(tmp_path: Path) -> Any:
    with rig(str(tmp_path / "s.db")) as r:
        _session(r, "key-a", RAW)
        _session(r, "key-b", "the other tenant's secret output\n")
        yield r


def test_recall_returns_the_output_byte_for_byte_whole_and_by_lines(served: Rig) -> None:
    store = served.proxy.store
    server = build_server(store)
    rid = _result_id(store, RAW)
    assert _call(server, "recall", id=rid) == (False, RAW)
    lines = RAW.split("\n")
    assert _call(server, "recall", id=rid, start_line=2, end_line=3) == (False, "\n".join(lines[1:3]) + "\n")
    # the last line has no newline, and an end past the end stops there
    assert _call(server, "recall", id=rid, start_line=len(lines), end_line=10**6) == (False, lines[-1])


def test_the_tools_answer_plain_text_with_no_structured_copy(served: Rig) -> None:
    """A client given a structured copy may show the model that instead, JSON-escaped (Claude Code does)."""
    server = build_server(served.proxy.store)
    rid = _result_id(served.proxy.store, RAW)

    async def go() -> tuple[list[Any], Any]:
        async with Client(server) as client:
            tools = (await client.list_tools()).tools
            return [t.output_schema for t in tools], await client.call_tool("recall", {"id": rid})

    schemas, result = anyio.run(go)
    assert schemas == [None] * len(TOOLS)
    assert result.structured_content is None
    assert [c.text for c in result.content] == [RAW]  # type: ignore[union-attr]


def test_a_caller_reaches_only_the_ids_its_own_conversation_was_shown(served: Rig) -> None:
    store = served.proxy.store
    server = build_server(store)
    rid_a = _result_id(store, RAW)
    rid_b = _result_id(store, "the other tenant's secret output\n")
    # tenant B holds only its own ids: they recall B's output and search B's log, never A's
    assert _call(server, "recall", id=rid_b) == (False, "the other tenant's secret output\n")
    error, text = _call(server, "search_history", session=rid_b, query="step")
    assert not error and "step 1" not in text and "no line of this session" in text
    # an id no session holds is refused: a guess near A's id, and an id of the right shape
    near = rid_a[:-1] + ("0" if rid_a[-1] != "0" else "1")
    for guess in (near, "0" * 32):
        error, text = _call(server, "recall", id=guess)
        assert error and "no session holds" in text
    # nothing the proxy serves shows an id: not the stats, not what B's requests carried
    stats = httpx.get(served.url + "/contextwarden/stats", timeout=30).text
    assert rid_a not in stats and rid_b not in stats
    assert all(rid_a.encode() not in r.body for r in served.upstream.received)


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        ({"id": "not-an-id"}, "is not a recall id"),
        ({"id": "0123456789abcdef-12"}, "is not a recall id"),
        ({"start_line": 0}, "line numbers start at 1"),
        ({"start_line": 5, "end_line": 4}, "end_line 4 is before start_line 5"),
        ({"start_line": 10**6}, "is past its end"),
    ],
)
def test_bad_recalls_are_clear_errors_and_change_nothing(served: Rig, arguments: dict[str, Any], says: str) -> None:
    store = served.proxy.store
    rid = _result_id(store, RAW)
    arguments.setdefault("id", rid)
    before = [len(store.read(i.id)) for i in store.list_sessions()]
    error, text = _call(build_server(store), "recall", **arguments)
    assert error and says in text, text
    assert [len(store.read(i.id)) for i in store.list_sessions()] == before


def test_an_answer_over_the_limit_names_a_range_that_fits(served: Rig) -> None:
    store = served.proxy.store
    server = build_server(store, max_answer_chars=1_000)
    rid = _result_id(store, RAW)
    error, text = _call(server, "recall", id=rid)
    assert error and "recall it by line ranges" in text
    end = int(text.rsplit("end_line=", 1)[1])
    error, part = _call(server, "recall", id=rid, start_line=1, end_line=end)
    assert not error and RAW.startswith(part) and len(part) <= 1_000


def test_search_history_finds_lines_with_the_ids_that_recall_them(served: Rig) -> None:
    store = served.proxy.store
    server = build_server(store)
    rid = _result_id(store, RAW)
    error, text = _call(server, "search_history", session=rid, query="STEP 12")
    assert not error
    assert f'{rid} line 12 (output of Bash(command="make")): step 12\r' in text
    assert "step 121" in text and "13 matching lines" in text  # step 12, 112, 120-129, 212
    for bad, says in (({"query": "  "}, "the query is empty"), ({"session": "nope"}, "is not a recall id")):
        error, text = _call(server, "search_history", **{"session": rid, "query": "step", **bad})
        assert error and says in text


@pytest.mark.parametrize(
    ("tool", "arguments", "says"),
    [
        ("window", {"session": "nope"}, "is not a recall id"),
        ("window", {"session": "0" * 32}, "no session holds"),
        ("search_history", {"session": "0" * 32, "query": "step"}, "no session holds"),
        ("search_history", {"query": "step", "limit": 0}, "limit"),
    ],
)
def test_bad_searches_and_window_views_are_clear_errors_and_change_nothing(
    served: Rig, tool: str, arguments: dict[str, Any], says: str
) -> None:
    store = served.proxy.store
    arguments.setdefault("session", _result_id(store, RAW))
    before = [len(store.read(i.id)) for i in store.list_sessions()]
    error, text = _call(build_server(store), tool, **arguments)
    assert error and says in text, text
    assert [len(store.read(i.id)) for i in store.list_sessions()] == before


def test_window_shows_what_the_window_holds(served: Rig) -> None:
    store = served.proxy.store
    rid = _result_id(store, RAW)
    error, text = _call(build_server(store), "window", session=rid)
    assert not error
    assert text.startswith("window of request 3 (claude-sonnet-4-5)") and "sections: " in text
    assert f"{rid} tool tool_output fresh" in text


def test_a_server_bound_to_a_credential_serves_only_that_credentials_sessions(served: Rig) -> None:
    store = served.proxy.store
    rid_a = _result_id(store, RAW)
    as_b = build_server(store, credential=Credential(secret="key-b", salt=served.proxy.pipeline.salt))
    for tool, arguments in (("recall", {"id": rid_a}), ("window", {"session": rid_a})):
        error, text = _call(as_b, tool, **arguments)
        assert error and "no session of this credential holds" in text and "step" not in text
    as_a = build_server(store, credential=Credential(secret="key-a", salt=served.proxy.pipeline.salt))
    assert _call(as_a, "recall", id=rid_a) == (False, RAW)


class _DownStore(SQLiteStore):
    """A real store whose reads all fail, as if its database went away."""

    def __getattribute__(self, name: str) -> Any:
        if name in ("read", "iter_events", "get_session", "list_sessions", "read_window"):
            raise StoreError("the session store is unreachable (test)")
        return object.__getattribute__(self, name)


def test_a_store_that_is_down_is_a_clear_error(served: Rig, tmp_path: Path) -> None:
    rid = _result_id(served.proxy.store, RAW)
    down = _DownStore(tmp_path / "s.db")
    try:
        calls = [("recall", {"id": rid}), ("search_history", {"session": rid, "query": "x"})]
        calls.append(("window", {"session": rid}))
        for tool, arguments in calls:
            error, text = _call(build_server(down), tool, **arguments)
            assert error and "unreachable" in text
    finally:
        down.close()


def test_the_cli_serves_the_tools_over_stdio(served: Rig, tmp_path: Path) -> None:
    store = served.proxy.store
    rid = _result_id(store, RAW)
    src = str(ROOT / "src")

    def serve(key: str) -> StdioServerParameters:
        return StdioServerParameters(
            command=sys.executable,
            args=["-m", "contextwarden", "mcp", "--store", str(tmp_path / "s.db"), "--credential-env", "AGENT_KEY"],
            env={**os.environ, "PYTHONPATH": src, "AGENT_KEY": key},
        )

    async def go(params: StdioServerParameters) -> tuple[list[str], str]:
        async with Client(params) as client:
            tools = sorted(t.name for t in (await client.list_tools()).tools)
            result = await client.call_tool("recall", {"id": rid})
            return tools, "".join(getattr(c, "text", "") for c in result.content)

    tools, text = anyio.run(go, serve("key-a"))
    assert tools == sorted(TOOLS) and text == RAW
    _, text = anyio.run(go, serve("key-b"))
    assert "no session of this credential holds" in text
    unset = subprocess.run(
        [sys.executable, "-m", "contextwarden", "mcp", "--store", str(tmp_path / "s.db"), "--credential-env", "NOPE"],
        env={**os.environ, "PYTHONPATH": src},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert unset.returncode == 2 and "NOPE: that environment variable is not set" in unset.stderr


SMALL = "proxy-test-claude-mcp"
"""A Claude profile with a 60K window, so a test session reaches the planner's trigger quickly."""

RECALL_TOOL = {
    "name": "mcp__contextwarden__recall",
    "description": RECALL_DESCRIPTION,
    "input_schema": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
}
BASH = {"name": "Bash", "description": "Run a command", "input_schema": {"type": "object"}}


def _output(n: int) -> str:
    return "\n".join(f"src/module_{n}/file_{i}.py:{i}: def handler_{n}_{i}(request): return {i * n}" for i in range(80))


def _long_session(r: Rig, tools: list[dict[str, Any]], key: str) -> dict[str, Any]:
    client = r.anthropic(key)
    messages: list[Any] = [{"role": "user", "content": "find every handler and fix the failing one"}]
    for n in range(60):
        r.upstream.push(Reply(text=f"part {n}", tool_calls=((f"toolu_{n:03d}", "Bash", {"command": f"grep {n}"}),)))
        reply = client.messages.create(model=SMALL, max_tokens=64, system="agent", tools=tools, messages=messages)  # type: ignore[arg-type]
        messages += [
            {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in reply.content]},
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"toolu_{n:03d}", "content": _output(n)}],
            },
        ]
    r.proxy.settle()
    return json.loads(r.upstream.received[-1].body)


def _results(body: dict[str, Any]) -> list[str]:
    return [
        b["content"]
        for m in body["messages"]
        if isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "tool_result" and isinstance(b["content"], str)
    ]


@pytest.fixture
def small_profile() -> None:
    base = get_profile("claude-sonnet-4-5")
    register_profile(dataclasses.replace(base, name=SMALL, aliases=(), context_window=60_000, max_input_tokens=None))


def test_placeholders_name_the_clients_recall_tool_and_recall_gives_the_bytes_back(
    tmp_path: Path, small_profile: None
) -> None:
    with rig(str(tmp_path / "s.db")) as r:
        body = _long_session(r, [BASH, RECALL_TOOL], "key-a")
        masked = [c for c in _results(body) if "masked" in c]
        assert masked, "60 turns of 2K-token outputs on a 60K window must mask some"
        assert all("mcp__contextwarden__recall(id=" in c and "not retrievable" not in c for c in masked)
        ids = [re.search(r'recall\(id="([0-9a-f]{32})"\)', c)[1] for c in masked]  # type: ignore[index]
        server = build_server(r.proxy.store)
        for n, rid in enumerate(ids[:3]):
            assert _call(server, "recall", id=rid) == (False, _output(n))
        # the tool list is the client's own: the proxy added nothing to it
        assert body["tools"] == [BASH, RECALL_TOOL]


def test_without_the_recall_tool_placeholders_say_nothing_can_be_recalled(tmp_path: Path, small_profile: None) -> None:
    with rig(str(tmp_path / "s.db")) as r:
        body = _long_session(r, [BASH], "key-a")
        masked = [c for c in _results(body) if "masked" in c]
        assert masked and all("(not retrievable in this session)" in c and "recall(" not in c for c in masked)


def test_the_recall_tool_is_found_under_each_clients_naming() -> None:
    def tool(name: str, description: str = RECALL_DESCRIPTION) -> ToolDefinition:
        return ToolDefinition(name=name, description=description)

    assert recall_tool_of([tool("Bash", "Run"), tool("mcp__cw__recall")]) == "mcp__cw__recall"  # Claude Code
    assert recall_tool_of([tool("recall")]) == "recall"  # Gemini CLI and other clients: the tool's own name
    namespace = {
        "type": "namespace",
        "name": "mcp__contextwarden",
        "tools": [{"type": "function", "name": "recall", "description": RECALL_DESCRIPTION}],
    }
    codex = ToolDefinition(
        name="mcp__contextwarden", description="", format="openai_responses", raw_json=json.dumps(namespace)
    )
    assert recall_tool_of([codex]) == "mcp__contextwarden.recall"  # Codex: the namespace's tool
    # a tool merely called recall is someone else's
    assert recall_tool_of([tool("recall", "Recall a memory")]) == ""


def test_a_truncation_marker_names_the_recall_tool_with_the_omitted_lines() -> None:
    from contextwarden.tokens import best_counter
    from contextwarden.window.policies.truncate import truncate_output

    text = "".join(f"line {i} of a long build log with some words\n" for i in range(1, 2001))
    cut = truncate_output(
        text, max_tokens=400, counter=best_counter(), artifact_id="a" * 32, retrievable="mcp__cw__recall"
    )
    marker = re.search(r'mcp__cw__recall\(id="a{32}", start_line=(\d+), end_line=(\d+)\)', cut.text)
    assert marker is not None and "read_range" not in cut.text
    first, last = int(marker[1]), int(marker[2])
    assert f"line {first - 1} " in cut.text and f"line {first} " not in cut.text and f"line {last + 1} " in cut.text
