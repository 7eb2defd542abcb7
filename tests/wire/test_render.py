from __future__ import annotations

import dataclasses
import itertools
import json
import os
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _paths import TESTS
from contextwarden.context import Message, ModelContext, ToolDefinition
from contextwarden.errors import ImportFormatError, MalformedResponse, UsageError
from contextwarden.log.events import AssistantMessage, BinaryPart, ThinkingBlock, ToolCall
from contextwarden.wire import (
    ABORTED_TEXT,
    get_codec,
    normalize_pairing,
    render_anthropic,
    render_gemini,
    render_openai_chat,
    render_openai_responses,
)
from contextwarden.wire._render_args import OPENING_TEXT
from contextwarden.wire.anthropic import parse_anthropic_response
from contextwarden.wire.gemini import parse_gemini_response
from contextwarden.wire.openai_chat import parse_openai_chat_response
from contextwarden.wire.openai_responses import parse_openai_responses_response


def parse_request_messages(body: dict[str, Any]) -> tuple[str, list[Message]]:
    """The system prompt and messages a codec reads back from a body (what these tests compare)."""
    ctx = (
        get_codec("anthropic" if "system" in body or "max_tokens" in body else "openai_chat")
        .parse_request(body)
        .to_context()
    )
    count = 0
    while count < len(ctx.messages) and ctx.messages[count].role in ("system", "developer"):
        count += 1
    leading = [m.text for m in ctx.messages[:count]]
    return "\n\n".join(t for t in (ctx.system, *leading) if t), [_plain(m) for m in ctx.messages[count:]]


def _plain(message: Message) -> Message:
    return Message(
        role=message.role,
        text=message.text,
        thinking=message.thinking,
        tool_calls=message.tool_calls,
        tool_call_id=message.tool_call_id,
        tool_name=message.tool_name,
        is_error=message.is_error,
        parts=message.parts,
        opaque=message.opaque,
        section=message.section,
    )


SNAPSHOTS = TESTS / "snapshots"

IMG = BinaryPart(media_type="image/png", data=b"\x89PNG\r\n\x1a\nfake", name="shot.png")
PDF = BinaryPart(media_type="application/pdf", data=b"%PDF-1.4", name="spec.pdf")
SIGNED = ThinkingBlock(text="Need to read the test first.", signature="EqQBCkgIARABGAIiQLs1")
UNSIGNED = ThinkingBlock(text="unsigned musing")
RESPONSES_SIGNED = ThinkingBlock(text="Screenshot next.", signature="rs_abc123:gAAAAB-enc==")
REDACTED = ThinkingBlock(text="", signature="redacted:ZGF0YQ==")

TOOLS = (
    ToolDefinition(
        name="read_file",
        description="Read a file.",
        parameters={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    ),
    ToolDefinition(
        name="bash",
        description="Run a shell command.",
        parameters={"type": "object", "properties": {"cmd": {"type": "string"}}},
    ),
    ToolDefinition(name="screenshot", description="Take a screenshot."),
)

MESSAGES = (
    Message(role="developer", text="Project rules: keep tests green.", section="instructions"),
    Message(role="user", text="Fix the failing test. Here is the screen:", parts=(IMG, PDF)),
    Message(
        role="assistant",
        text="Let me look.",
        thinking=(SIGNED, UNSIGNED),
        tool_calls=(
            ToolCall(id="toolu_1", name="read_file", arguments={"path": "tests/test_x.py"}),
            ToolCall(id="toolu_2", name="bash", arguments={"_raw": '{"cmd": "pytest -q'}),
        ),
    ),
    Message(
        role="tool",
        text="def test_x():\n    assert f() == 2\n",
        tool_call_id="toolu_1",
        tool_name="read_file",
    ),
    Message(
        role="tool",
        text="FAILED tests/test_x.py::test_x - assert 1 == 2",
        tool_call_id="toolu_2",
        tool_name="bash",
        is_error=True,
    ),
    Message(role="user", text="Also take a screenshot."),
    Message(
        role="assistant",
        thinking=(RESPONSES_SIGNED,),
        tool_calls=(ToolCall(id="call_3", name="screenshot", arguments={}),),
    ),
    Message(role="tool", text="", tool_call_id="call_3", tool_name="screenshot", parts=(IMG,)),
    Message(role="assistant", text="The test expects 2; f() returned 1. I changed f.", thinking=(REDACTED,)),
    Message(role="user", text="你好, thanks — now run it again."),
)

CTX = ModelContext(
    model="test-model",
    system="You are a careful coding agent.",
    messages=MESSAGES,
    tools=TOOLS,
    cache_breakpoints=(-1, 4, 8),
)


def check_snapshot(name: str, payload: dict[str, Any]) -> None:
    text = json.dumps(payload, indent=2, ensure_ascii=False) + "\n"
    path = SNAPSHOTS / f"render_{name}.json"
    if os.environ.get("CONTEXTWARDEN_UPDATE_SNAPSHOTS") == "1":
        SNAPSHOTS.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return
    if not path.exists():
        pytest.fail(f"snapshot {path} is missing; run with CONTEXTWARDEN_UPDATE_SNAPSHOTS=1 to write it")
    assert text == path.read_text(encoding="utf-8"), f"{name} differs from {path}"


# --------------------------------------------------------------------------- snapshots


def test_openai_chat_snapshot() -> None:
    payload = render_openai_chat(CTX)
    check_snapshot("openai_chat", payload)
    roles = [m["role"] for m in payload["messages"]]
    assert roles == [
        "system",
        "system",
        "user",
        "assistant",
        "tool",
        "tool",
        "user",
        "assistant",
        "tool",
        "user",
        "assistant",
        "user",
    ]
    assert payload["messages"][3]["tool_calls"][1]["function"]["arguments"] == '{"cmd": "pytest -q'
    assert all("reasoning" not in json.dumps(m) for m in payload["messages"])


def test_openai_chat_developer_role() -> None:
    payload = render_openai_chat(CTX, developer_role=True)
    assert [m["role"] for m in payload["messages"][:2]] == ["developer", "developer"]
    assert "system" not in [m["role"] for m in payload["messages"]]


def test_openai_responses_snapshot() -> None:
    payload = render_openai_responses(CTX)
    check_snapshot("openai_responses", payload)
    reasoning = [i for i in payload["input"] if i["type"] == "reasoning"]
    assert reasoning == [
        {
            "type": "reasoning",
            "id": "rs_abc123",
            "summary": [{"type": "summary_text", "text": "Screenshot next."}],
            "encrypted_content": "gAAAAB-enc==",
        }
    ]
    assert payload["instructions"] == CTX.system
    assert all(tool["strict"] is False for tool in payload["tools"])


def test_anthropic_snapshot() -> None:
    payload = render_anthropic(CTX)
    check_snapshot("anthropic", payload)
    first_assistant = payload["messages"][1]["content"]
    assert first_assistant[0] == {"type": "thinking", "thinking": SIGNED.text, "signature": SIGNED.signature}
    assert [b["type"] for b in first_assistant] == ["thinking", "text", "tool_use", "tool_use"]
    results = payload["messages"][2]["content"]
    assert [b["type"] for b in results] == ["tool_result", "tool_result", "text"]
    assert results[1]["is_error"] is True
    assert payload["messages"][-2]["content"][0] == {"type": "redacted_thinking", "data": "ZGF0YQ=="}
    assert [b["text"] for b in payload["system"]] == [CTX.system, "Project rules: keep tests green."]


def test_anthropic_cache_breakpoints_and_ttl() -> None:
    payload = render_anthropic(CTX, cache_ttl="1h")
    marked = list(_cache_marked(payload))
    assert len(marked) == 3
    assert all(block["cache_control"] == {"type": "ephemeral", "ttl": "1h"} for block in marked)
    # tools come before the system prompt in the cached prefix: its breakpoint covers them
    assert payload["system"][-1] in marked and payload["tools"][-1] not in marked
    # Breakpoint 4 (the error result of the parallel calls) and 8 (the final assistant text).
    assert payload["messages"][2]["content"][1] in marked
    assert payload["messages"][-2]["content"][-1] in marked
    five = render_anthropic(CTX)
    assert all(block["cache_control"] == {"type": "ephemeral"} for block in _cache_marked(five))
    with pytest.raises(UsageError):
        render_anthropic(CTX, cache_ttl="2h")


def test_anthropic_latest_breakpoints_win() -> None:
    ctx = ModelContext(
        model="m",
        system="s",
        messages=tuple(Message(role="user" if i % 2 == 0 else "assistant", text=f"m{i}") for i in range(8)),
        tools=TOOLS[:1],
        cache_breakpoints=(0, 1, 2, 3, 4, 5),
    )
    payload = render_anthropic(ctx)
    marked_texts = [b.get("text") for b in _cache_marked(payload) if b in _message_blocks(payload)]
    assert marked_texts == ["m3", "m4", "m5"]  # system (covering the tools) + the latest three
    no_system = render_anthropic(dataclasses.replace(ctx, system=""))
    assert no_system["tools"][-1] in list(_cache_marked(no_system))
    assert [b.get("text") for b in _cache_marked(no_system) if b in _message_blocks(no_system)] == ["m3", "m4", "m5"]


def test_gemini_snapshot() -> None:
    payload = render_gemini(CTX)
    check_snapshot("gemini", payload)
    model = payload["contents"][1]["parts"]
    assert model[1]["thoughtSignature"] == SIGNED.signature  # on the first functionCall part
    responses = payload["contents"][2]["parts"]
    assert responses[1]["functionResponse"]["response"] == {"error": MESSAGES[4].text}
    assert "model" not in payload


def test_renderers_normalize_pairing_themselves() -> None:
    broken = ModelContext(
        model="m",
        system="",
        messages=(
            Message(role="tool", text="stray", tool_call_id="zz"),
            Message(role="user", text="go"),
            Message(role="assistant", tool_calls=(ToolCall(id="a", name="t"), ToolCall(id="b", name="t"))),
            Message(role="tool", text="b done", tool_call_id="b", tool_name="t"),
        ),
    )
    chat = render_openai_chat(broken)["messages"]
    assert [m.get("tool_call_id") for m in chat] == [None, None, "a", "b"]
    assert chat[2]["content"] == ABORTED_TEXT
    anthropic = render_anthropic(broken)["messages"]
    assert [b["tool_use_id"] for b in anthropic[-1]["content"]] == ["a", "b"]
    assert anthropic[-1]["content"][0]["is_error"] is True


def test_empty_and_system_only_contexts() -> None:
    ctx = ModelContext(model="m", system="only a system prompt", messages=(Message(role="user", text=""),))
    assert render_openai_chat(ctx)["messages"] == [{"role": "system", "content": "only a system prompt"}]
    opening = [{"role": "user", "content": [{"type": "text", "text": OPENING_TEXT}]}]
    assert render_anthropic(ctx)["messages"] == opening  # the API rejects an empty list
    assert render_gemini(ctx)["contents"] == [{"role": "user", "parts": [{"text": OPENING_TEXT}]}]
    assert render_openai_responses(ctx)["input"] == []
    assert "tools" not in render_openai_chat(ctx)
    assert "system" not in render_anthropic(ModelContext(model="m", system="", messages=()))


# --------------------------------------------------------------------------- random contexts

CALLS = ["a", "b", "c"]
message_strategy = st.one_of(
    st.builds(
        lambda text, parts: Message(role="user", text=text, parts=parts),
        st.sampled_from(["", "hi", "look at this"]),
        st.sampled_from([(), (IMG,), (PDF,)]),
    ),
    st.builds(lambda text: Message(role="system", text=text), st.sampled_from(["", "rule"])),
    st.builds(
        lambda text, ids, thinking: Message(
            role="assistant",
            text=text,
            thinking=thinking,
            tool_calls=tuple(ToolCall(id=i, name=f"t_{i}", arguments={"n": 1}) for i in ids),
        ),
        st.sampled_from(["", "ok"]),
        st.lists(st.sampled_from(CALLS), max_size=3),
        st.sampled_from([(), (SIGNED,), (UNSIGNED,), (REDACTED,), (RESPONSES_SIGNED,)]),
    ),
    st.builds(
        lambda call_id, text, error, parts: Message(
            role="tool",
            text=text,
            tool_call_id=call_id,
            tool_name=f"t_{call_id}",
            is_error=error,
            parts=parts,
        ),
        st.sampled_from([*CALLS, "zz"]),
        st.sampled_from(["", "out"]),
        st.booleans(),
        st.sampled_from([(), (IMG,)]),
    ),
)


@st.composite
def contexts(draw: st.DrawFn) -> ModelContext:
    messages = tuple(draw(st.lists(message_strategy, max_size=12)))
    breakpoints = draw(st.lists(st.integers(min_value=-1, max_value=max(len(messages) - 1, -1)), max_size=6))
    return ModelContext(
        model="m",
        system=draw(st.sampled_from(["", "system prompt"])),
        messages=messages,
        tools=draw(st.sampled_from([(), TOOLS])),
        cache_breakpoints=tuple(breakpoints),
    )


def _walk(value: Any) -> Any:
    yield value
    if isinstance(value, dict):
        for inner in value.values():
            yield from _walk(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from _walk(inner)


def _cache_marked(payload: dict[str, Any]) -> list[dict[str, Any]]:
    return [v for v in _walk(payload) if isinstance(v, dict) and "cache_control" in v]


def _message_blocks(payload: dict[str, Any]) -> list[dict[str, Any]]:
    return [block for turn in payload["messages"] for block in turn["content"]]


@settings(max_examples=300, deadline=None)
@given(contexts())
def test_anthropic_invariants(ctx: ModelContext) -> None:
    payload = render_anthropic(ctx)
    json.dumps(payload)
    assert len(_cache_marked(payload)) <= 4
    turns = payload["messages"]
    assert all(a["role"] != b["role"] for a, b in itertools.pairwise(turns))
    for value in _walk(payload):
        if isinstance(value, dict) and value.get("type") == "text":
            assert value["text"], "empty text block"
        if isinstance(value, dict) and value.get("type") in ("thinking", "redacted_thinking"):
            assert "cache_control" not in value
            assert not value.get("signature", "x").startswith("rs_")
    for index, turn in enumerate(turns):
        assert turn["content"], "empty turn"
        types = [b["type"] for b in turn["content"]]
        results = [b["tool_use_id"] for b in turn["content"] if b["type"] == "tool_result"]
        assert types[: len(results)] == ["tool_result"] * len(results), "results must come first"
        uses = [b["id"] for b in turn["content"] if b["type"] == "tool_use"]
        if uses:
            answer = turns[index + 1]["content"]
            assert [b.get("tool_use_id") for b in answer[: len(uses)]] == uses
        if results:
            previous = [b["id"] for b in turns[index - 1]["content"] if b["type"] == "tool_use"]
            assert results == previous


@settings(max_examples=300, deadline=None)
@given(contexts())
def test_openai_chat_invariants(ctx: ModelContext) -> None:
    messages = render_openai_chat(ctx)["messages"]
    json.dumps(messages)
    i = 0
    while i < len(messages):
        message = messages[i]
        assert message["role"] != "tool", "tool message without its call"
        i += 1
        ids = [call["id"] for call in message.get("tool_calls", [])]
        answered = []
        while i < len(messages) and messages[i]["role"] == "tool":
            answered.append(messages[i]["tool_call_id"])
            i += 1
        assert answered == ids


@settings(max_examples=300, deadline=None)
@given(contexts())
def test_gemini_and_responses_invariants(ctx: ModelContext) -> None:
    contents = render_gemini(ctx)["contents"]
    assert all(a["role"] != b["role"] for a, b in itertools.pairwise(contents))
    for index, content in enumerate(contents):
        assert content["parts"]
        assert all(p.get("text", "x") for p in content["parts"]), "empty text part"
        calls = [p["functionCall"]["name"] for p in content["parts"] if "functionCall" in p]
        if calls:
            answer = contents[index + 1]["parts"][: len(calls)]
            assert [p["functionResponse"]["name"] for p in answer] == calls
    items = render_openai_responses(ctx)["input"]
    seen: list[str] = []
    for item in items:
        if item["type"] == "function_call":
            seen.append(item["call_id"])
        elif item["type"] == "function_call_output":
            assert item["call_id"] == seen.pop(0), "output without its call, or out of order"
        else:
            assert not seen, "a call left unanswered before the next item"
    assert not seen


def _strip_cache(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_cache(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_strip_cache(v) for v in value]
    return value


def _assert_merged_prefix(short: list[dict[str, Any]], full: list[dict[str, Any]], key: str) -> None:
    """Turns before the last are identical; the last may have grown at its end (role merging)."""
    if not short:
        return
    assert short[:-1] == full[: len(short) - 1]
    last, grown = short[-1], full[len(short) - 1]
    assert last["role"] == grown["role"]
    assert grown[key][: len(last[key])] == last[key]


def _thinking(content: list[dict[str, Any]]) -> int:
    return sum(block["type"] in ("thinking", "redacted_thinking") for block in content)


@settings(max_examples=200, deadline=None)
@given(contexts())
def test_a_context_prefix_renders_to_a_payload_prefix(ctx: ModelContext) -> None:
    messages, _ = normalize_pairing(ctx.messages)
    full = ModelContext(model="m", system=ctx.system, messages=messages, tools=ctx.tools)
    for k in range(len(messages) + 1):
        closed = (k == 0 or not messages[k - 1].tool_calls) and (k == len(messages) or messages[k].role != "tool")
        if not closed:
            continue
        short = ModelContext(model="m", system=ctx.system, messages=messages[:k], tools=ctx.tools)
        chat_short, chat_full = render_openai_chat(short), render_openai_chat(full)
        assert chat_full["messages"][: len(chat_short["messages"])] == chat_short["messages"]
        assert chat_short.get("tools") == chat_full.get("tools")
        resp_short, resp_full = render_openai_responses(short), render_openai_responses(full)
        assert resp_full["input"][: len(resp_short["input"])] == resp_short["input"]
        a_short, a_full = _strip_cache(render_anthropic(short)), _strip_cache(render_anthropic(full))
        assert a_short.get("tools") == a_full.get("tools")
        # With no user turn yet, Anthropic and Gemini get the opening text, which the first real user
        # turn replaces: the one place a longer context does not extend the shorter one's payload.
        a_open = a_short["messages"] == [{"role": "user", "content": [{"type": "text", "text": OPENING_TEXT}]}]
        _assert_system_prefix(a_short.get("system", []), a_full.get("system", []), not a_open)
        # Thinking goes first in an Anthropic assistant turn: a later assistant message's thinking joins
        # the front of the turn the shorter payload ends with, the other place a longer context moves bytes.
        a_last = len(a_short["messages"]) - 1
        a_moved = a_short["messages"][a_last]["role"] == "assistant" and _thinking(
            a_full["messages"][a_last]["content"]
        ) > _thinking(a_short["messages"][a_last]["content"])
        if not a_open and not a_moved:
            _assert_merged_prefix(a_short["messages"], a_full["messages"], "content")
        g_short, g_full = render_gemini(short), render_gemini(full)
        g_open = g_short["contents"] == [{"role": "user", "parts": [{"text": OPENING_TEXT}]}]
        _assert_system_prefix(
            g_short.get("systemInstruction", {}).get("parts", []),
            g_full.get("systemInstruction", {}).get("parts", []),
            not g_open,
        )
        if not g_open:
            _assert_merged_prefix(g_short["contents"], g_full["contents"], "parts")


def _assert_system_prefix(short: list[Any], full: list[Any], has_messages: bool) -> None:
    """Leading system messages join the system blocks, so the system only grows before any message."""
    assert full[: len(short)] == short
    if has_messages:
        assert full == short


def test_rendering_is_byte_stable() -> None:
    first = json.dumps(render_openai_chat(CTX), ensure_ascii=False)
    again = json.dumps(render_openai_chat(CTX), ensure_ascii=False)
    assert first == again
    assert json.dumps(render_anthropic(CTX)) == json.dumps(render_anthropic(CTX))


# --------------------------------------------------------------------------- parsing


def as_message(assistant: AssistantMessage) -> Message:
    return Message(
        role="assistant",
        text=assistant.text,
        thinking=assistant.thinking,
        tool_calls=assistant.tool_calls,
        opaque=assistant.opaque,
    )


def answered(assistant: AssistantMessage) -> tuple[Message, ...]:
    results = tuple(Message(role="tool", text="ok", tool_call_id=c.id, tool_name=c.name) for c in assistant.tool_calls)
    return (as_message(assistant), *results)


def test_parse_openai_chat_round_trip() -> None:
    message = {
        "role": "assistant",
        "content": "Reading both.",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "read_file", "arguments": '{"path":"a.py"}'},
            },
            {"id": "call_2", "type": "function", "function": {"name": "bash", "arguments": '{"cmd": "ls'}},
        ],
    }
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "gpt-4.1",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {**message, "refusal": None}}],
        "usage": {
            "prompt_tokens": 1200,
            "completion_tokens": 30,
            "total_tokens": 1230,
            "prompt_tokens_details": {"cached_tokens": 1024},
        },
    }
    assistant, usage = parse_openai_chat_response(body)
    assert assistant.stop_reason == "tool_use" and assistant.model == "gpt-4.1"
    assert assistant.tool_calls[0].arguments == {"path": "a.py"}
    assert assistant.tool_calls[1].arguments == {"_raw": '{"cmd": "ls'}
    assert usage is not None
    assert (usage.input_tokens, usage.cache_read_tokens, usage.output_tokens) == (1200, 1024, 30)
    assert usage.request_id == "chatcmpl-1" and usage.response_event_id == assistant.id
    rendered = render_openai_chat(ModelContext(model="m", system="", messages=answered(assistant)))
    assert rendered["messages"][0] == message


def test_parse_openai_chat_stop_reasons_and_missing_usage() -> None:
    def body(reason: str) -> dict[str, Any]:
        return {"choices": [{"finish_reason": reason, "message": {"role": "assistant", "content": "x"}}]}

    assert parse_openai_chat_response(body("stop"))[0].stop_reason == "end_turn"
    assert parse_openai_chat_response(body("length"))[0].stop_reason == "max_tokens"
    assert parse_openai_chat_response(body("content_filter"))[0].stop_reason == "content_filter"
    assert parse_openai_chat_response(body("stop"))[1] is None
    reasoning = {"choices": [{"finish_reason": "stop", "message": {"content": "4", "reasoning_content": "2+2"}}]}
    assert parse_openai_chat_response(reasoning)[0].thinking == (ThinkingBlock(text="2+2"),)


def test_parse_openai_responses_round_trip() -> None:
    reasoning = {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [{"type": "summary_text", "text": "Plan."}],
        "encrypted_content": "gAAAA-xyz",
    }
    call = {"type": "function_call", "call_id": "call_9", "name": "bash", "arguments": '{"cmd":"ls"}'}
    body = {
        "id": "resp_1",
        "object": "response",
        "status": "completed",
        "model": "gpt-5",
        "output": [
            reasoning,
            {
                "id": "msg_1",
                "type": "message",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Checking.", "annotations": []}],
            },
            {**call, "id": "fc_1", "status": "completed"},
        ],
        "usage": {
            "input_tokens": 2000,
            "input_tokens_details": {"cached_tokens": 1536},
            "output_tokens": 50,
            "output_tokens_details": {"reasoning_tokens": 20},
            "total_tokens": 2050,
        },
    }
    assistant, usage = parse_openai_responses_response(body)
    assert assistant.text == "Checking." and assistant.stop_reason == "tool_use"
    # The reasoning item is kept verbatim (encrypted content and all) for Responses; its text is readable.
    assert assistant.thinking == (ThinkingBlock(text="Plan."),)
    assert [(p.kind, json.loads(p.raw_json)) for p in assistant.opaque] == [("reasoning", reasoning)]
    assert usage is not None and (usage.input_tokens, usage.cache_read_tokens) == (2000, 1536)
    assert usage.reasoning_tokens == 20  # billed again as input while the item is re-sent within its turn
    items = render_openai_responses(ModelContext(model="m", system="", messages=answered(assistant)))["input"]
    assert items[:3] == [reasoning, {"type": "message", "role": "assistant", "content": "Checking."}, call]
    incomplete = {"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}, "output": []}
    assert parse_openai_responses_response(incomplete)[0].stop_reason == "max_tokens"


def test_parse_anthropic_round_trip() -> None:
    content = [
        {"type": "thinking", "thinking": "Plan.", "signature": "EqQB"},
        {"type": "redacted_thinking", "data": "abc"},
        {"type": "text", "text": "Reading."},
        {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a.py"}},
    ]
    body = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": content,
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {
            "input_tokens": 10,
            "cache_creation_input_tokens": 200,
            "cache_read_input_tokens": 3000,
            "output_tokens": 40,
        },
    }
    assistant, usage = parse_anthropic_response(body)
    assert usage is not None
    assert (usage.input_tokens, usage.cache_read_tokens, usage.cache_write_tokens) == (3210, 3000, 200)
    assert assistant.stop_reason == "tool_use"
    rendered = render_anthropic(ModelContext(model="m", system="", messages=answered(assistant)))
    assert rendered["messages"][0] == {"role": "user", "content": [{"type": "text", "text": OPENING_TEXT}]}
    assert rendered["messages"][1] == {"role": "assistant", "content": content}
    end = {**body, "content": [{"type": "text", "text": "done"}], "stop_reason": "end_turn"}
    assert parse_anthropic_response(end)[0].stop_reason == "end_turn"
    assert parse_anthropic_response({**end, "stop_reason": "max_tokens"})[0].stop_reason == "max_tokens"


def test_parse_gemini_round_trip() -> None:
    parts = [
        {"text": "Reading."},
        {"functionCall": {"name": "read_file", "args": {"path": "a.py"}}, "thoughtSignature": "c2ln"},
        {"functionCall": {"name": "bash", "args": {"cmd": "ls"}}},
    ]
    body = {
        "candidates": [
            {
                "content": {"role": "model", "parts": [{"text": "musing", "thought": True}, *parts]},
                "finishReason": "STOP",
                "index": 0,
            }
        ],
        "usageMetadata": {
            "promptTokenCount": 5000,
            "cachedContentTokenCount": 4000,
            "candidatesTokenCount": 30,
            "thoughtsTokenCount": 100,
            "totalTokenCount": 5130,
        },
        "modelVersion": "gemini-2.5-flash",
        "responseId": "resp-abc",
    }
    assistant, usage = parse_gemini_response(body)
    assert assistant.stop_reason == "tool_use" and assistant.model == "gemini-2.5-flash"
    assert [c.id for c in assistant.tool_calls] == ["gemini-resp-abc-0", "gemini-resp-abc-1"]
    assert assistant.thinking == (ThinkingBlock(text="musing"), ThinkingBlock(text="", signature="c2ln"))
    assert usage is not None
    assert (usage.input_tokens, usage.cache_read_tokens, usage.output_tokens) == (5000, 4000, 130)
    rendered = render_gemini(ModelContext(model="m", system="", messages=answered(assistant)))
    assert rendered["contents"][1] == {"role": "model", "parts": parts}
    assert parse_gemini_response(body)[0].tool_calls == assistant.tool_calls  # deterministic ids
    blocked = {"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": {"promptTokenCount": 12}}
    blocked_message, blocked_usage = parse_gemini_response(blocked)
    assert blocked_message.stop_reason == "content_filter" and blocked_usage is not None
    truncated = {"candidates": [{"content": {"parts": [{"text": "x"}]}, "finishReason": "MAX_TOKENS"}]}
    assert parse_gemini_response(truncated)[0].stop_reason == "max_tokens"


@pytest.mark.parametrize(
    ("parser", "body"),
    [
        (parse_openai_chat_response, {}),
        (parse_openai_chat_response, {"choices": [{"message": "text"}]}),
        (parse_openai_responses_response, {"output": None}),
        (parse_anthropic_response, {"content": "x"}),
        (parse_gemini_response, {"candidates": []}),
    ],
)
def test_malformed_bodies_raise(parser: Any, body: dict[str, Any]) -> None:
    with pytest.raises(MalformedResponse):
        parser(body)


ROUND_TRIP = ModelContext(
    model="m",
    system="Be brief.",
    messages=(
        Message(role="user", text="Look:", parts=(IMG,)),
        Message(
            role="assistant",
            text="Reading.",
            thinking=(SIGNED,),
            tool_calls=(
                ToolCall(id="c1", name="read_file", arguments={"path": "a.py"}),
                ToolCall(id="c2", name="bash", arguments={"_raw": "not json"}),
            ),
        ),
        Message(role="tool", text="print(1)", tool_call_id="c1", tool_name="read_file"),
        Message(role="tool", text="boom", tool_call_id="c2", tool_name="bash", is_error=True),
        Message(role="user", text="And?"),
        Message(role="assistant", text="Done."),
    ),
)


def _key(message: Message, *, thinking: bool, errors: bool) -> tuple[Any, ...]:
    return (
        message.role,
        message.text,
        message.tool_calls,
        message.tool_call_id,
        message.tool_name,
        message.parts and tuple((p.media_type, p.data) for p in message.parts),
        message.thinking if thinking else (),
        message.is_error if errors else False,
    )


def test_parse_request_messages_openai_round_trip() -> None:
    system, messages = parse_request_messages(render_openai_chat(ROUND_TRIP))
    assert system == ROUND_TRIP.system
    # Chat Completions carries neither thinking nor the error flag.
    assert [_key(m, thinking=False, errors=False) for m in messages] == [
        _key(m, thinking=False, errors=False) for m in ROUND_TRIP.messages
    ]


def test_parse_request_messages_anthropic_round_trip() -> None:
    system, messages = parse_request_messages(render_anthropic(ROUND_TRIP))
    assert system == ROUND_TRIP.system
    assert [_key(m, thinking=True, errors=True) for m in messages] == [
        _key(m, thinking=True, errors=True) for m in ROUND_TRIP.messages
    ]


def test_parse_request_messages_edge_cases() -> None:
    system, messages = parse_request_messages({"messages": [{"role": "user", "content": "hi"}]})
    assert system == "" and messages == [Message(role="user", text="hi")]
    remote = {
        "system": "s",
        "messages": [
            {
                "role": "user",
                "content": [{"type": "image", "source": {"type": "url", "url": "https://x/y.png"}}],
            }
        ],
    }
    # A remote image only Anthropic can fetch stays an opaque block and goes back to Anthropic as it came.
    (opaque,) = parse_request_messages(remote)[1][0].opaque
    assert opaque.kind == "image" and json.loads(opaque.raw_json) == remote["messages"][0]["content"][0]
    chat_remote = {
        "messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "https://x/y.png"}}]}]
    }
    assert parse_request_messages(chat_remote)[1][0].text == "[image: https://x/y.png]"
    later_system = {"messages": [{"role": "user", "content": "a"}, {"role": "system", "content": "late"}]}
    assert parse_request_messages(later_system)[1][1] == Message(role="system", text="late", section="instructions")
    with pytest.raises(ImportFormatError):
        parse_request_messages({"input": []})
    with pytest.raises(ImportFormatError):
        parse_request_messages({"messages": ["not an object"]})


def test_undecodable_output_still_encodes() -> None:
    bad = "ok\udcff\udcfe\x00end"
    ctx = ModelContext(
        model="m",
        system="sys \udc80",
        messages=(
            Message(role="user", text="run it"),
            Message(role="assistant", tool_calls=(ToolCall(id="c", name="bash", arguments={"_raw": "x\udcff"}),)),
            Message(role="tool", text=bad, tool_call_id="c", tool_name="bash", parts=(PDF,)),
        ),
    )
    renderers = (render_openai_chat, render_openai_responses, render_anthropic, render_gemini)
    for render in renderers:
        encoded = json.dumps(render(ctx), ensure_ascii=False).encode("utf-8")
        assert "ok\ufffd\ufffd\\u0000end".encode() in encoded
        assert "\ufffd".encode() in encoded.split("ok\ufffd".encode())[0]  # the system prompt was cleaned too


def test_thinking_without_output_is_not_sent() -> None:
    ctx = ModelContext(
        model="m",
        system="",
        messages=(
            Message(role="user", text="hi"),
            Message(role="assistant", thinking=(RESPONSES_SIGNED, SIGNED)),
            Message(role="user", text="well?"),
        ),
    )
    assert [i["type"] for i in render_openai_responses(ctx)["input"]] == ["message", "message"]
    assert render_anthropic(ctx)["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "hi"}, {"type": "text", "text": "well?"}]}
    ]
