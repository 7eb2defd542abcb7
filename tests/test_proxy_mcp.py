"""``contextwarden mcp`` over the proxy's real store, through the official MCP client (in process and over stdio)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters

from _proxy import Rig, rig
from contextwarden.errors import StoreError
from contextwarden.log.events import ToolResult
from contextwarden.log.store import SQLiteStore
from contextwarden.proxy.mcp import TOOLS, build_server
from contextwarden.proxy.recall import RECALL_KEY, recall_id
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


def _result_id(store: Any, output: str) -> tuple[str, str]:
    """The recall id of the tool result holding ``output``, and its session's key."""
    for info in store.list_sessions():
        for event in store.read(info.id):
            if isinstance(event, ToolResult) and event.output == output:
                key = str(info.metadata[RECALL_KEY])
                return recall_id(key, event.seq), key
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
    rid, _ = _result_id(store, RAW)
    assert _call(server, "recall", id=rid) == (False, RAW)
    lines = RAW.split("\n")
    assert _call(server, "recall", id=rid, start_line=2, end_line=3) == (False, "\n".join(lines[1:3]) + "\n")
    # the last line has no newline, and an end past the end stops there
    assert _call(server, "recall", id=rid, start_line=len(lines), end_line=10**6) == (False, lines[-1])


def test_a_session_reaches_only_what_its_key_names(served: Rig) -> None:
    store = served.proxy.store
    server = build_server(store)
    rid_a, key_a = _result_id(store, RAW)
    _, key_b = _result_id(store, "the other tenant's secret output\n")
    assert key_a != key_b and len(key_a) == 16
    seq_a = int(rid_a.split("-")[1])
    # tenant B knows only its own key: the same position under it is B's own log, never A's output
    error, text = _call(server, "recall", id=recall_id(key_b, seq_a))
    assert "step 1" not in text
    # a key no session has is refused, and so is a guess of A's key
    for guess in ("0" * 16, key_a[:-1] + ("0" if key_a[-1] != "0" else "1")):
        error, text = _call(server, "recall", id=recall_id(guess, seq_a))
        assert error and "no session answers to the key" in text
    error, text = _call(server, "search_history", session=key_b, query="step")
    assert not error and "step 1" not in text
    # nothing the proxy serves shows a key: not the stats, not the upstream's view of B's requests
    stats = httpx.get(served.url + "/contextwarden/stats", timeout=30).text
    assert key_a not in stats and key_b not in stats
    assert all(key_a.encode() not in r.body for r in served.upstream.received)


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        ({"id": "not-an-id"}, "is not a recall id"),
        ({"id": "0123456789abcdef"}, "is not a recall id"),
        ({"start_line": 0}, "line numbers start at 1"),
        ({"start_line": 5, "end_line": 4}, "end_line 4 is before start_line 5"),
        ({"start_line": 10**6}, "is past its end"),
        ({"seq": 10**6}, "names no tool output or message"),
    ],
)
def test_bad_recalls_are_clear_errors_and_change_nothing(served: Rig, arguments: dict[str, Any], says: str) -> None:
    store = served.proxy.store
    rid, key = _result_id(store, RAW)
    if "seq" in arguments:
        arguments = {"id": recall_id(key, arguments.pop("seq"))}
    arguments.setdefault("id", rid)
    before = [len(store.read(i.id)) for i in store.list_sessions()]
    error, text = _call(build_server(store), "recall", **arguments)
    assert error and says in text, text
    assert [len(store.read(i.id)) for i in store.list_sessions()] == before


def test_an_answer_over_the_limit_names_a_range_that_fits(served: Rig) -> None:
    store = served.proxy.store
    server = build_server(store, max_answer_chars=1_000)
    rid, _ = _result_id(store, RAW)
    error, text = _call(server, "recall", id=rid)
    assert error and "recall it by line ranges" in text
    end = int(text.rsplit("end_line=", 1)[1])
    error, part = _call(server, "recall", id=rid, start_line=1, end_line=end)
    assert not error and RAW.startswith(part) and len(part) <= 1_000


def test_search_history_finds_lines_with_the_ids_that_recall_them(served: Rig) -> None:
    store = served.proxy.store
    server = build_server(store)
    rid, key = _result_id(store, RAW)
    error, text = _call(server, "search_history", session=rid, query="STEP 12")
    assert not error
    assert f'{rid} line 12 (output of Bash(command="make")): step 12\r' in text
    assert "step 121" in text and "13 matching lines" in text  # step 12, 112, 120-129, 212
    for bad, says in (({"query": "  "}, "the query is empty"), ({"session": "nope"}, "is not a session key")):
        error, text = _call(server, "search_history", **{"session": key, "query": "step", **bad})
        assert error and says in text


def test_window_shows_what_the_window_holds(served: Rig) -> None:
    store = served.proxy.store
    rid, key = _result_id(store, RAW)
    error, text = _call(build_server(store), "window", session=key)
    assert not error
    assert text.startswith("window of request 3 (claude-sonnet-4-5)") and "sections: " in text
    assert f"{rid} tool tool_output fresh" in text


class _DownStore(SQLiteStore):
    def read(self, session_id: str, *, since_seq: int = 0) -> Any:
        raise StoreError("the session store is unreachable (test)")


def test_a_store_that_is_down_is_a_clear_error(served: Rig, tmp_path: Path) -> None:
    rid, key = _result_id(served.proxy.store, RAW)
    down = _DownStore(tmp_path / "s.db")
    try:
        for tool, arguments in (("recall", {"id": rid}), ("search_history", {"session": key, "query": "x"})):
            error, text = _call(build_server(down), tool, **arguments)
            assert error and "unreachable" in text
    finally:
        down.close()


def test_the_cli_serves_the_tools_over_stdio(served: Rig, tmp_path: Path) -> None:
    store = served.proxy.store
    rid, _ = _result_id(store, RAW)
    src = str(Path(__file__).resolve().parents[1] / "src")
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "contextwarden", "mcp", "--store", str(tmp_path / "s.db")],
        env={**os.environ, "PYTHONPATH": src},
    )

    async def go() -> tuple[list[str], str]:
        async with Client(params) as client:
            tools = sorted(t.name for t in (await client.list_tools()).tools)
            result = await client.call_tool("recall", {"id": rid})
            return tools, "".join(getattr(c, "text", "") for c in result.content)

    tools, text = anyio.run(go)
    assert tools == sorted(TOOLS) and text == RAW
