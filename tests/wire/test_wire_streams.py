"""Streamed responses, fed event by event, give the same events as the non-streamed body."""

from __future__ import annotations

import json
from typing import Any

from contextwarden.log.events import ThinkingBlock, ToolCall
from contextwarden.wire import get_codec


def feed(fmt: str, events: list[tuple[str, dict[str, Any]]]) -> Any:
    acc = get_codec(fmt).stream_accumulator()
    for event_type, data in events:
        acc.feed(event_type, data)
    return acc.result()


def test_anthropic_stream_builds_text_thinking_and_tool_calls() -> None:
    events = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": "msg_1",
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-sonnet-4-5",
                    "content": [],
                    "stop_reason": None,
                    "usage": {
                        "input_tokens": 10,
                        "cache_read_input_tokens": 3000,
                        "cache_creation_input_tokens": 200,
                        "output_tokens": 1,
                    },
                },
            },
        ),
        ("content_block_start", {"index": 0, "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
        ("content_block_delta", {"index": 0, "delta": {"type": "thinking_delta", "thinking": "Plan "}}),
        ("content_block_delta", {"index": 0, "delta": {"type": "thinking_delta", "thinking": "it."}}),
        ("content_block_delta", {"index": 0, "delta": {"type": "signature_delta", "signature": "EqQB"}}),
        ("content_block_stop", {"index": 0}),
        ("content_block_start", {"index": 1, "content_block": {"type": "text", "text": ""}}),
        ("content_block_delta", {"index": 1, "delta": {"type": "text_delta", "text": "Reading "}}),
        ("content_block_delta", {"index": 1, "delta": {"type": "text_delta", "text": "it."}}),
        ("content_block_stop", {"index": 1}),
        (
            "content_block_start",
            {"index": 2, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {}}},
        ),
        ("content_block_delta", {"index": 2, "delta": {"type": "input_json_delta", "partial_json": '{"path": '}}),
        ("content_block_delta", {"index": 2, "delta": {"type": "input_json_delta", "partial_json": '"a.py"}'}}),
        ("content_block_stop", {"index": 2}),
        (
            "message_delta",
            {"delta": {"stop_reason": "tool_use", "stop_sequence": None}, "usage": {"output_tokens": 40}},
        ),
        ("message_stop", {}),
    ]
    message, usage = feed("anthropic", events)
    assert message.text == "Reading it." and message.stop_reason == "tool_use"
    assert message.thinking == (ThinkingBlock(text="Plan it.", signature="EqQB"),)
    assert message.tool_calls == (ToolCall(id="toolu_1", name="read_file", arguments={"path": "a.py"}),)
    assert usage is not None and (usage.input_tokens, usage.cache_read_tokens, usage.output_tokens) == (3210, 3000, 40)
    # The same response as one body gives the same events.
    body = {
        "id": "msg_1",
        "model": "claude-sonnet-4-5",
        "stop_reason": "tool_use",
        "content": [
            {"type": "thinking", "thinking": "Plan it.", "signature": "EqQB"},
            {"type": "text", "text": "Reading it."},
            {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a.py"}},
        ],
        "usage": {
            "input_tokens": 10,
            "cache_read_input_tokens": 3000,
            "cache_creation_input_tokens": 200,
            "output_tokens": 40,
        },
    }
    whole, _ = get_codec("anthropic").parse_response(body)
    assert (whole.text, whole.thinking, whole.tool_calls) == (message.text, message.thinking, message.tool_calls)


def test_anthropic_stream_keeps_unknown_blocks_opaque() -> None:
    block = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}
    events = [
        ("message_start", {"message": {"id": "m", "content": [], "usage": {"input_tokens": 1}}}),
        ("content_block_start", {"index": 0, "content_block": block}),
        ("content_block_delta", {"index": 0, "delta": {"type": "input_json_delta", "partial_json": '{"query":"x"}'}}),
        ("content_block_stop", {"index": 0}),
        ("message_delta", {"delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}}),
    ]
    message, _ = feed("anthropic", events)
    assert [json.loads(p.raw_json) for p in message.opaque] == [{**block, "input": {"query": "x"}}]


def test_openai_chat_stream_joins_content_and_tool_call_fragments() -> None:
    chunks = [
        {"id": "c1", "model": "gpt-4.1", "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]},
        {"id": "c1", "choices": [{"index": 0, "delta": {"content": "Checking"}}]},
        {"id": "c1", "choices": [{"index": 0, "delta": {"content": " both."}}]},
        {
            "id": "c1",
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": "call_1",
                                "type": "function",
                                "function": {"name": "get_weather", "arguments": ""},
                            }
                        ]
                    },
                }
            ],
        },
        {
            "id": "c1",
            "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": '{"city":'}}]}}],
        },
        {
            "id": "c1",
            "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": '"Lyon"}'}}]}}],
        },
        {
            "id": "c1",
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "tool_calls": [
                            {
                                "index": 1,
                                "id": "call_2",
                                "type": "function",
                                "function": {"name": "get_weather", "arguments": '{"city":"Porto"}'},
                            }
                        ]
                    },
                }
            ],
        },
        {"id": "c1", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        {
            "id": "c1",
            "choices": [],
            "usage": {"prompt_tokens": 900, "completion_tokens": 30, "prompt_tokens_details": {"cached_tokens": 512}},
        },
    ]
    message, usage = feed("openai_chat", [("", c) for c in chunks])
    assert message.text == "Checking both." and message.stop_reason == "tool_use" and message.model == "gpt-4.1"
    assert [(c.id, c.arguments) for c in message.tool_calls] == [
        ("call_1", {"city": "Lyon"}),
        ("call_2", {"city": "Porto"}),
    ]
    assert usage is not None and (usage.input_tokens, usage.cache_read_tokens, usage.output_tokens) == (900, 512, 30)


def test_openai_responses_stream_takes_the_completed_response() -> None:
    reasoning = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAA"}
    call = {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_1",
        "name": "bash",
        "arguments": '{"cmd":"ls"}',
        "status": "completed",
    }
    final = {
        "id": "resp_1",
        "status": "completed",
        "model": "gpt-5",
        "output": [reasoning, call],
        "usage": {"input_tokens": 2000, "input_tokens_details": {"cached_tokens": 1536}, "output_tokens": 50},
    }
    events = [
        (
            "response.created",
            {"type": "response.created", "response": {**final, "status": "in_progress", "output": [], "usage": None}},
        ),
        ("response.output_item.added", {"output_index": 0, "item": {**reasoning, "encrypted_content": None}}),
        ("response.output_item.done", {"output_index": 0, "item": reasoning}),
        ("response.output_item.done", {"output_index": 1, "item": call}),
        ("response.completed", {"type": "response.completed", "response": final}),
    ]
    message, usage = feed("openai_responses", events)
    assert message.stop_reason == "tool_use" and message.tool_calls[0].id == "call_1"
    assert [json.loads(p.raw_json) for p in message.opaque] == [reasoning]
    assert usage is not None and usage.cache_read_tokens == 1536
    # Cut off before the end: the items and text seen so far.
    cut, cut_usage = feed(
        "openai_responses",
        [
            *events[:2],
            ("response.output_text.delta", {"output_index": 1, "delta": "Hel"}),
            ("response.output_text.delta", {"output_index": 1, "delta": "lo"}),
        ],
    )
    assert cut.text == "Hello" and cut_usage is None


def test_gemini_stream_joins_text_and_keeps_calls_and_usage() -> None:
    chunks = [
        {
            "candidates": [{"content": {"role": "model", "parts": [{"text": "musing", "thought": True}]}}],
            "modelVersion": "gemini-2.5-flash",
        },
        {"candidates": [{"content": {"role": "model", "parts": [{"text": "Read"}]}}]},
        {"candidates": [{"content": {"role": "model", "parts": [{"text": "ing."}]}}]},
        {
            "candidates": [
                {
                    "content": {
                        "role": "model",
                        "parts": [
                            {
                                "functionCall": {"name": "read_file", "args": {"path": "a.py"}},
                                "thoughtSignature": "c2ln",
                            }
                        ],
                    },
                    "finishReason": "STOP",
                }
            ],
            "usageMetadata": {
                "promptTokenCount": 5000,
                "cachedContentTokenCount": 4000,
                "candidatesTokenCount": 30,
                "thoughtsTokenCount": 100,
            },
            "responseId": "resp-abc",
        },
    ]
    message, usage = feed("gemini", [("", c) for c in chunks])
    assert message.text == "Reading." and message.stop_reason == "tool_use"
    assert message.tool_calls == (ToolCall(id="gemini-resp-abc-0", name="read_file", arguments={"path": "a.py"}),)
    assert message.thinking == (ThinkingBlock(text="musing"), ThinkingBlock(text="", signature="c2ln"))
    assert usage is not None and (usage.input_tokens, usage.output_tokens) == (5000, 130)
