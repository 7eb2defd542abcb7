"""The linter reads every wire format through the wire codecs, hashing the raw JSON each item came from."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from contextwarden.governance import lint_file, read_requests
from contextwarden.governance.requests import Request
from contextwarden.wire import FORMATS, get_codec

SYSTEM = "You are a careful coding agent."

# One conversation (system, a user question, a call, its result, an answer) in every wire format.
BODIES: dict[str, dict[str, Any]] = {
    "openai_chat": {
        "model": "gpt-4o",
        "messages": [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": "read a.py"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "read", "arguments": '{"path":"a.py"}'}}
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "print(1)"},
            {"role": "assistant", "content": "It prints 1."},
        ],
        "tools": [{"type": "function", "function": {"name": "read", "parameters": {"type": "object"}}}],
    },
    "openai_responses": {
        "model": "gpt-5",
        "instructions": SYSTEM,
        "input": [
            {"role": "user", "content": "read a.py"},
            {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAAAxyz"},
            {"type": "function_call", "call_id": "c1", "name": "read", "arguments": '{"path":"a.py"}'},
            {"type": "function_call_output", "call_id": "c1", "output": "print(1)"},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "It prints 1."}]},
        ],
        "tools": [{"type": "function", "name": "read", "parameters": {"type": "object"}}],
    },
    "anthropic": {
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "system": [{"type": "text", "text": SYSTEM}],
        "messages": [
            {"role": "user", "content": "read a.py"},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "Look.", "signature": "sig"},
                    {"type": "tool_use", "id": "c1", "name": "read", "input": {"path": "a.py"}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "c1", "content": "print(1)"},
                    {"type": "text", "text": "and?"},
                ],
            },
            {"role": "assistant", "content": [{"type": "text", "text": "It prints 1."}]},
        ],
        "tools": [{"name": "read", "input_schema": {"type": "object"}}],
    },
    "gemini": {
        "systemInstruction": {"parts": [{"text": SYSTEM}]},
        "contents": [
            {"role": "user", "parts": [{"text": "read a.py"}]},
            {"role": "model", "parts": [{"functionCall": {"name": "read", "args": {"path": "a.py"}}}]},
            {"role": "user", "parts": [{"functionResponse": {"name": "read", "response": {"output": "print(1)"}}}]},
            {"role": "model", "parts": [{"text": "It prints 1."}]},
        ],
        "tools": [{"functionDeclarations": [{"name": "read", "parameters": {"type": "object"}}]}],
    },
}


def read_one(body: dict[str, Any]) -> Request:
    (request,) = read_requests([json.dumps(body)])
    assert isinstance(request, Request), request
    return request


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_codec_records_one_span_per_item(fmt: str) -> None:
    parsed = get_codec(fmt).parse_request(BODIES[fmt])
    assert len(parsed.spans) == len(parsed.instructions) + len(parsed.events)
    assert len(parsed.tool_spans) == len(parsed.tools) == 1
    # each span's values are the body's own JSON objects, so hashing them hashes the bytes as sent
    body_text = json.dumps(BODIES[fmt])
    for span in parsed.spans:
        for value in span.values:
            assert json.dumps(value) in body_text, span


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_is_linted_with_calls_results_and_labels(fmt: str) -> None:
    request = read_one(BODIES[fmt])
    assert request.format == fmt
    assert [i.text for i in request.system] == [SYSTEM]
    assert [i.kind for i in request.tools] == ["tool_schema"] and "(read)" in request.tools[0].label
    results = [i for i in request.messages if i.role == "tool"]
    assert [(r.kind, r.text) for r in results] == [("tool_output:read", "print(1)")]
    calls = [c for i in request.messages for c in i.calls]
    assert [(c.name, c.arguments) for c in calls] == [("read", {"path": "a.py"})]
    assert results[0].call_id == calls[0].id
    assert request.messages[-1].text == "It prints 1." and request.messages[-1].kind == "assistant"


def test_anthropic_items_are_turns_and_result_blocks_with_their_paths() -> None:
    labels = [i.label for i in read_one(BODIES["anthropic"]).messages]
    assert labels == [
        "messages[0] (user)",
        "messages[1] (assistant)",
        "messages[2].content[0] (tool result of read, c1)",
        "messages[2].content[1:2] (user)",
        "messages[3] (assistant)",
    ]


def test_responses_assistant_turn_is_one_item_over_its_run_of_input_items() -> None:
    request = read_one(BODIES["openai_responses"])
    assert [i.label for i in request.messages][1] == "input[1:3] (assistant)"
    # the encrypted reasoning is part of the turn's bytes: changing it changes the digest
    changed = copy.deepcopy(BODIES["openai_responses"])
    changed["input"][1]["encrypted_content"] = "gAAAAAother"
    assert read_one(changed).messages[1].digest != request.messages[1].digest
    assert read_one(changed).messages[0].digest == request.messages[0].digest


def gemini_log(turns: int, *, edit_at: int | None = None) -> list[dict[str, Any]]:
    payloads, contents = [], []
    for t in range(turns):
        contents.append({"role": "user", "parts": [{"text": f"step {t}"}]})
        contents.append({"role": "model", "parts": [{"functionCall": {"name": "bash", "args": {"cmd": "ls"}}}]})
        contents.append(
            {"role": "user", "parts": [{"functionResponse": {"name": "bash", "response": {"output": f"out {t}"}}}]}
        )
        body = {"systemInstruction": {"parts": [{"text": SYSTEM}]}, "contents": copy.deepcopy(contents)}
        if t == edit_at:
            body["contents"][2]["parts"][0]["functionResponse"]["response"]["output"] = "out 0 (edited)"
        payloads.append(body)
    return payloads


def test_gemini_logs_are_linted_and_an_edited_result_is_a_break(tmp_path: Path) -> None:
    clean = tmp_path / "clean.jsonl"
    clean.write_text("".join(json.dumps(p) + "\n" for p in gemini_log(6)))
    report = lint_file(clean)
    assert report.requests == 6 and report.breaks == 0 and report.ok, report.findings
    edited = tmp_path / "edited.jsonl"
    edited.write_text("".join(json.dumps(p) + "\n" for p in gemini_log(6, edit_at=3)))
    r1 = [f for f in lint_file(edited).findings if f.rule == "R1"]
    assert (r1[0].request, r1[0].details["cause"], r1[0].item) == (
        4,
        "message_edited",
        "contents[2].parts[0] (tool result of bash, gemini-call-1-0)",
    )


def test_a_payload_its_codec_rejects_is_counted_not_compared(tmp_path: Path) -> None:
    good = {"model": "claude-sonnet-4-5", "system": SYSTEM, "messages": [{"role": "user", "content": "hi"}]}
    bad = {"model": "claude-sonnet-4-5", "system": SYSTEM, "messages": [{"role": "robot", "content": "hi"}]}
    path = tmp_path / "log.jsonl"
    path.write_text("".join(json.dumps(p) + "\n" for p in (good, bad, good)))
    requests = [r for r in read_requests(path) if isinstance(r, Request)]
    assert [r.unreadable != "" for r in requests] == [False, True, False]
    assert "messages[0]" in requests[1].unreadable and requests[1].items == ()
    report = lint_file(path)
    assert report.requests == 3 and report.unchecked_pairs == 1 and report.breaks == 0
