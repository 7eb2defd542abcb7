"""OpenAI Chat Completions and Responses through the proxy with the official ``openai`` client."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from _proxy import Rig, rig
from contextwarden.log.events import AssistantMessage, ToolResult, UsageReport
from contextwarden.proxy.scripted import Reply


@pytest.fixture
def proxied(tmp_path: Path) -> Any:
    with rig(str(tmp_path / "s.db")) as r:
        yield r


def _client(r: Rig) -> Any:
    return r.openai()


def _log(r: Rig) -> list[Any]:
    r.proxy.settle()  # answers are filed on the recorder thread, after the client has them
    (info,) = r.proxy.store.list_sessions()
    return r.proxy.store.read(info.id)


@pytest.mark.parametrize("stream", [False, True])
def test_chat_tool_loop_is_logged_with_usage(proxied: Rig, stream: bool) -> None:
    client = _client(proxied)
    messages: list[Any] = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "list files"}]
    for n in range(3):
        proxied.upstream.push(Reply(text="", tool_calls=((f"call_{n}", "shell", {"cmd": "ls"}),)))
        if stream:
            chunks = list(
                client.chat.completions.create(
                    model="gpt-4.1", messages=messages, stream=True, stream_options={"include_usage": True}
                )
            )
            call_id = next(
                c.choices[0].delta.tool_calls[0].id for c in chunks if c.choices and c.choices[0].delta.tool_calls
            )
            assert chunks[-1].usage is not None
        else:
            reply = client.chat.completions.create(model="gpt-4.1", messages=messages)
            call_id = reply.choices[0].message.tool_calls[0].id
        messages += [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": call_id, "type": "function", "function": {"name": "shell", "arguments": '{"cmd": "ls"}'}}
                ],
            },
            {"role": "tool", "tool_call_id": call_id, "content": f"file_{n}.py"},
        ]
    events = _log(proxied)
    assert [e.call_id for e in events if isinstance(e, ToolResult)] == ["call_0", "call_1"]
    assert [c.id for e in events if isinstance(e, AssistantMessage) for c in e.tool_calls] == [
        "call_0",
        "call_1",
        "call_2",
    ]
    billed = [rec.usage.input_tokens for rec in proxied.upstream.received if rec.usage]
    assert [e.input_tokens for e in events if isinstance(e, UsageReport)] == billed


def test_responses_keep_encrypted_reasoning_and_compaction_items_byte_for_byte(proxied: Rig) -> None:
    client = _client(proxied)
    proxied.upstream.push(Reply(text="done", thinking=("", "gAAAAB-encrypted-blob")))
    with client.responses.stream(model="gpt-5", input=[{"role": "user", "content": "start"}]) as s:
        first = s.get_final_response()
    reasoning = next(item for item in first.output if item.type == "reasoning")
    assert reasoning.encrypted_content == "gAAAAB-encrypted-blob"
    history = [
        {"type": "compaction", "encrypted_content": "cmp-opaque-1", "id": "cmp_1"},
        {"role": "user", "content": "start"},
        {"type": "reasoning", "id": reasoning.id, "summary": [], "encrypted_content": reasoning.encrypted_content},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]},
        {"type": "compaction_trigger", "x_future_field": [1, 2]},
        {"role": "user", "content": "next"},
    ]
    raw = json.dumps({"model": "gpt-5", "input": history, "store": False, "include": ["reasoning.encrypted_content"]})
    response = httpx.post(
        proxied.url + "/v1/responses", content=raw.encode(), headers={"authorization": "Bearer sk-test"}
    )
    assert response.status_code == 200
    assert proxied.upstream.received[-1].body == raw.encode()


def test_previous_response_id_is_passed_through_and_counted(proxied: Rig) -> None:
    client = _client(proxied)
    client.responses.create(model="gpt-4.1", input="hi", previous_response_id="resp_earlier")
    (row,) = proxied.rows()
    assert row.outcome == "passthrough"
    assert "previous_response_id" in row.note
