"""Behind the proxy, an output the window already shows is forwarded as a reference, the same bytes every time."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx

from _proxy import rig
from contextwarden.proxy._reply import Reply
from contextwarden.proxy.scripted import ScriptedUpstream

LISTING = "\n".join(f"-rw-r--r-- 1 dev dev {100 + i} Jan  1 00:00 module_{i}.py" for i in range(120))
HEADERS = {"x-api-key": "k1", "anthropic-version": "2023-06-01", "x-claude-code-session-id": "cc-ref"}


def _body(messages: list[Any]) -> dict[str, Any]:
    tools = [{"name": "Bash", "description": "run a command", "input_schema": {"type": "object", "properties": {}}}]
    return {"model": "claude-sonnet-4-5", "max_tokens": 1000, "system": "You are a coding agent.",
            "messages": messages, "tools": tools}  # fmt: skip


def _exchange(call_id: str, output: str) -> list[Any]:
    call = {"type": "tool_use", "id": call_id, "name": "Bash", "input": {"command": "ls -l"}}
    return [
        {"role": "assistant", "content": [call]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_id, "content": output}]},
    ]


def _result_content(body: dict[str, Any], call_id: str) -> str:
    """The forwarded content of one tool result, as JSON (the cache marks around it may move)."""
    for message in body["messages"]:
        for block in message["content"] if isinstance(message["content"], list) else ():
            if block.get("tool_use_id") == call_id:
                return json.dumps(block["content"])
    raise AssertionError(f"no result of {call_id}")


def test_a_repeated_output_is_forwarded_as_a_reference_and_stays_byte_identical(tmp_path: Path) -> None:
    up = ScriptedUpstream()
    messages: list[Any] = [{"role": "user", "content": "List the modules, twice."}]
    with rig(str(tmp_path / "s.db"), upstream=up) as r, httpx.Client(timeout=60) as client:
        for n, call_id in enumerate(("toolu_a", "toolu_b", None, None)):
            up.push(Reply(text="done") if call_id is None else Reply(text="", tool_calls=((call_id, "Bash", {}),)))
            resp = client.post(r.url + "/v1/messages", json=_body(messages), headers=HEADERS)
            assert resp.status_code == 200, resp.text
            if call_id is not None:
                messages = [*messages, *_exchange(call_id, LISTING)]
            else:
                messages = [*messages, {"role": "assistant", "content": "ok"}, {"role": "user", "content": f"go {n}"}]
        third, fourth = r.forwarded("/v1/messages")[-2:]
    assert json.loads(_result_content(third, "toolu_a")) == LISTING
    assert json.loads(_result_content(third, "toolu_b")) == "[same output as call toolu_a above]"
    assert _result_content(fourth, "toolu_b") == _result_content(third, "toolu_b")
