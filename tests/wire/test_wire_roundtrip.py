"""Parse -> render gives the body back, per format: hand-written bodies with every documented block
type (exactly equal), and real request bodies from agent transcripts (equal up to the renderer's one
spelling of equivalent forms, listed in :func:`canonical`). Opaque provider items come back byte for
byte and in their place.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from _paths import DATA, ROOT
from contextwarden.wire import detect_format, get_codec
from contextwarden.wire._common import dumps_compact

TRANSCRIPTS = DATA / "transcripts"
TRAJECTORIES = ROOT / "src" / "contextwarden" / "data" / "trajectories"
PNG = "iVBORw0KGgpmYWtl"

# ----------------------------------------------------------------------------- hand-written bodies

ANTHROPIC = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 2048,
    "system": [{"type": "text", "text": "You are careful."}, {"type": "text", "text": "Project rules."}],
    "messages": [
        {
            "role": "user",
            "content": [
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
                {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}},
                {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0="}},
                {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "plain"}},
                {
                    "type": "search_result",
                    "source": "https://x",
                    "title": "X",
                    "content": [{"type": "text", "text": "x"}],
                },
                {"type": "container_upload", "file_id": "file_1"},
                {"type": "text", "text": "Look at these."},
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "Plan it.", "signature": "EqQBCkgIARABGAIiQLs1"},
                {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"},
                {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "q"}},
                {
                    "type": "web_search_tool_result",
                    "tool_use_id": "srvtoolu_1",
                    "content": [
                        {"type": "web_search_result", "url": "https://x", "title": "X", "encrypted_content": "Eo8B"}
                    ],
                },
                {"type": "mcp_tool_use", "id": "mcptoolu_1", "name": "echo", "server_name": "s", "input": {}},
                {"type": "mcp_tool_result", "tool_use_id": "mcptoolu_1", "is_error": False, "content": "echoed"},
                {"type": "text", "text": "Reading the file."},
                {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a.py"}},
                {"type": "tool_use", "id": "toolu_2", "name": "bash", "input": {"cmd": "ls"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "print(1)"},
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_2",
                    "content": [
                        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
                        {"type": "text", "text": "a.py"},
                    ],
                    "is_error": True,
                },
                {"type": "text", "text": "And?"},
            ],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "Done.", "citations": [{"type": "char_location"}]}]},
    ],
    "tools": [
        {"name": "read_file", "description": "Read a file.", "input_schema": {"type": "object", "properties": {}}},
        {"name": "bash", "input_schema": {"type": "object", "properties": {"cmd": {"type": "string"}}}},
        {"type": "web_search_20250305", "name": "web_search", "max_uses": 3},
    ],
    "temperature": 0.2,
    "thinking": {"type": "enabled", "budget_tokens": 1024},
    "stream": True,
}

OPENAI_CHAT = {
    "model": "gpt-4.1",
    "messages": [
        {"role": "system", "content": "You are careful."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Look."},
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
                {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}},
                {"type": "file", "file": {"file_id": "file-1"}},
            ],
        },
        {
            "role": "assistant",
            "content": "Reading.",
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": '{"path":"a.py"}'}},
                {"id": "call_2", "type": "function", "function": {"name": "bash", "arguments": "not json"}},
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "print(1)"},
        {"role": "tool", "tool_call_id": "call_2", "content": "boom"},
        {"role": "user", "content": "And?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "call_3", "type": "function", "function": {"name": "bash", "arguments": "{}"}},
            ],
        },
        {"role": "tool", "tool_call_id": "call_3", "content": "ok"},
        {"role": "assistant", "content": "Done."},
    ],
    "tools": [
        {
            "type": "function",
            "function": {
                "name": "read_file",
                "description": "Read.",
                "parameters": {"type": "object", "properties": {}},
            },
        },
        {"type": "function", "function": {"name": "bash", "parameters": {"type": "object", "properties": {}}}},
        {"type": "custom", "custom": {"name": "grammar_tool"}},
    ],
    "max_completion_tokens": 500,
    "temperature": 0,
    "stream": True,
    "stream_options": {"include_usage": True},
}

OPENAI_RESPONSES = {
    "model": "gpt-5",
    "instructions": "You are careful.",
    "input": [
        {"type": "message", "role": "developer", "content": "Project rules."},
        {
            "type": "message",
            "role": "user",
            "content": [
                {"type": "input_text", "text": "Look."},
                {"type": "input_image", "image_url": f"data:image/png;base64,{PNG}", "detail": "auto"},
                {"type": "input_file", "file_id": "file-1"},
            ],
        },
        {"type": "compaction", "id": "cmp_1", "encrypted_content": "gAAAAB-compacted=="},
        {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [{"type": "summary_text", "text": "Plan."}],
            "encrypted_content": "gAAAA-enc==",
        },
        {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"type": "search", "query": "q"}},
        {"type": "message", "role": "assistant", "content": "Reading."},
        {"type": "function_call", "call_id": "call_1", "name": "read_file", "arguments": '{"path":"a.py"}'},
        {"type": "function_call_output", "call_id": "call_1", "output": "print(1)"},
        {"type": "reasoning", "id": "rs_2", "summary": [], "encrypted_content": "gAAAA-two==", "content": None},
        {"type": "custom_tool_call", "call_id": "ct_1", "name": "grammar", "input": "x"},
        {"type": "custom_tool_call_output", "call_id": "ct_1", "output": "y"},
        {"type": "message", "role": "assistant", "content": "Done."},
    ],
    "tools": [
        {
            "type": "function",
            "name": "read_file",
            "description": "Read.",
            "parameters": {"type": "object", "properties": {}},
            "strict": False,
        },
        {"type": "web_search"},
    ],
    "max_output_tokens": 800,
    "reasoning": {"effort": "medium", "summary": "auto"},
    "include": ["reasoning.encrypted_content"],
    "store": False,
}

GEMINI = {
    "systemInstruction": {"parts": [{"text": "You are careful."}]},
    "contents": [
        {
            "role": "user",
            "parts": [
                {"text": "Look."},
                {"inlineData": {"mimeType": "image/png", "data": PNG}},
                {"fileData": {"mimeType": "application/pdf", "fileUri": "gs://b/a.pdf"}},
            ],
        },
        {
            "role": "model",
            "parts": [
                {"text": "Reading."},
                {"functionCall": {"name": "read_file", "args": {"path": "a.py"}}, "thoughtSignature": "c2ln"},
                {"functionCall": {"name": "bash", "args": {"cmd": "ls"}}},
                {"executableCode": {"language": "PYTHON", "code": "print(1)"}},
                {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "1"}},
            ],
        },
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "read_file", "response": {"output": "print(1)"}}},
                {"functionResponse": {"name": "bash", "response": {"error": "boom"}}},
            ],
        },
        {"role": "model", "parts": [{"text": "Done."}]},
    ],
    "tools": [
        {
            "functionDeclarations": [
                {"name": "read_file", "description": "Read.", "parameters": {"type": "object"}},
                {"name": "bash"},
            ]
        },
        {"codeExecution": {}},
    ],
    "generationConfig": {"temperature": 0.1, "maxOutputTokens": 300},
}

HAND_WRITTEN = {
    "anthropic": ANTHROPIC,
    "openai_chat": OPENAI_CHAT,
    "openai_responses": OPENAI_RESPONSES,
    "gemini": GEMINI,
}


def round_trip(body: dict[str, Any]) -> dict[str, Any]:
    """Parse a body with the codec of its detected format and render it back, same settings."""
    fmt = detect_format(body)
    assert fmt is not None
    codec = get_codec(fmt)
    parsed = codec.parse_request(body)
    rendered = codec.render_request(parsed.to_context(), max_tokens=parsed.max_tokens, extra=parsed.extra)
    return strip_cache_control(rendered)


def strip_cache_control(value: Any) -> Any:
    """The body without ``cache_control`` markers: placement is the renderer's decision, not content."""
    if isinstance(value, dict):
        return {k: strip_cache_control(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [strip_cache_control(v) for v in value]
    return value


@pytest.mark.parametrize("fmt", sorted(HAND_WRITTEN))
def test_hand_written_bodies_with_every_block_type_come_back_equal(fmt: str) -> None:
    body = HAND_WRITTEN[fmt]
    assert detect_format(body) == fmt
    assert round_trip(body) == body
    # Equal as bytes too, item by item, for everything the codec does not interpret.
    rendered = json.dumps(round_trip(body), ensure_ascii=False, separators=(",", ":"))
    for part in opaque_parts(fmt, body):
        assert part.raw_json in rendered


def opaque_parts(fmt: str, body: dict[str, Any]) -> list[Any]:
    parsed = get_codec(fmt).parse_request(body)
    return [p for e in parsed.events for p in getattr(e, "opaque", ())]


def test_opaque_items_stay_attached_to_their_turn() -> None:
    parsed = get_codec("openai_responses").parse_request(OPENAI_RESPONSES)
    turns = [(type(e).__name__, [p.kind for p in getattr(e, "opaque", ())]) for e in parsed.events]
    assert turns == [
        ("UserMessage", ["input_file"]),
        ("AssistantMessage", ["compaction", "reasoning", "web_search_call"]),
        ("ToolResult", []),
        ("AssistantMessage", ["reasoning"]),  # and the freeform call, read as a tool call
        ("ToolResult", []),
        ("AssistantMessage", []),
    ]
    raw = next(p.raw_json for e in parsed.events for p in getattr(e, "opaque", ()) if p.kind == "compaction")
    assert raw == dumps_compact(OPENAI_RESPONSES["input"][2])
    anthropic = get_codec("anthropic").parse_request(ANTHROPIC)
    assistant = anthropic.events[1]
    assert [p.kind for p in assistant.opaque] == [
        "server_tool_use",
        "web_search_tool_result",
        "mcp_tool_use",
        "mcp_tool_result",
    ]
    assert [p.position for p in assistant.opaque] == [2, 3, 4, 5]


def test_opaque_items_go_only_to_their_own_provider() -> None:
    ctx = get_codec("openai_responses").parse_request(OPENAI_RESPONSES).to_context()
    for fmt in ("anthropic", "openai_chat", "gemini"):
        text = json.dumps(get_codec(fmt).render_request(ctx))
        assert "gAAAA" not in text and "web_search_call" not in text


# ----------------------------------------------------------------------------- real bodies


def canonical(fmt: str, body: dict[str, Any]) -> dict[str, Any]:
    """The renderer's one spelling of a body: what a real body equals after a round trip.

    - Anthropic: string ``content``/``system`` as one text block; a user turn as its tool results,
      then its images, then its text (the order the API recommends); consecutive text blocks of a turn
      joined (assistant: directly, user: by blank lines), and so are a tool result's text-only
      blocks, into one string; message fields other than role and content
      (a stored response's ``usage``, ``id``...) left out; no ``cache_control``.
    - OpenAI Chat: message fields other than role, content, tool_calls, tool_call_id left out; text-only
      content lists as one string; orphan tool messages left out and a reused call id renamed
      ``<id>_dup<n>`` with its result (the pairing rule: a provider rejects either);
      tool-call arguments that are a JSON object as compact JSON; an assistant's missing or null
      content beside calls as ``""``.
    - OpenAI Responses: text-only content lists as strings; ``id``/``status`` of message and
      function_call items left out; function-call arguments as compact JSON.
    """
    body = strip_cache_control(json.loads(json.dumps(body)))
    if fmt == "anthropic":
        if isinstance(body.get("system"), str):
            body["system"] = [{"type": "text", "text": body["system"]}]
        body["messages"] = [_anthropic_turn(m) for m in body["messages"]]
    elif fmt == "openai_chat":
        body["messages"] = _unique_ids([_chat_message(m) for m in _answered_only(body["messages"])])
    elif fmt == "openai_responses":
        body["input"] = [_responses_item(i) for i in body["input"]]
    return body


def _anthropic_turn(message: dict[str, Any]) -> dict[str, Any]:
    content = message["content"]
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    if message["role"] == "user" and all(b["type"] in ("tool_result", "text", "image") for b in blocks):
        order = {"tool_result": 0, "image": 1, "text": 2}  # results first, then images, then the text
        blocks = sorted(blocks, key=lambda b: order[b["type"]])
    joined: list[dict[str, Any]] = []
    glue = "" if message["role"] == "assistant" else "\n\n"
    for block in blocks:
        if block.get("type") == "text" and joined and joined[-1].get("type") == "text":
            joined[-1] = {"type": "text", "text": joined[-1]["text"] + glue + block["text"]}
        else:
            joined.append(block)
    for i, block in enumerate(joined):
        inner = block.get("content") if block.get("type") == "tool_result" else None
        if isinstance(inner, list) and all(b.get("type") == "text" and set(b) == {"type", "text"} for b in inner):
            joined[i] = {**block, "content": "\n\n".join(b["text"] for b in inner)}
    return {"role": message["role"], "content": joined}


def _answered_only(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Chat messages without orphan tool messages (answering no call of the assistant before them)."""
    out: list[dict[str, Any]] = []
    open_ids: set[str] = set()
    for m in messages:
        if m["role"] == "tool":
            if m.get("tool_call_id") not in open_ids:
                continue
            open_ids.discard(m["tool_call_id"])
        else:
            open_ids = {c["id"] for c in m.get("tool_calls") or ()}
        out.append(m)
    return out


def _unique_ids(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Chat messages with a call id used again later renamed ``<id>_dup<n>``, its result with it."""
    seen: set[str] = set()
    rename: dict[str, str] = {}
    for m in messages:
        for c in m.get("tool_calls") or ():
            new, n = c["id"], 2
            while new in seen:
                new, n = f"{c['id']}_dup{n}", n + 1
            seen.add(new)
            rename[c["id"]] = new
            c["id"] = new
        if m["role"] == "tool":
            m["tool_call_id"] = rename.get(m["tool_call_id"], m["tool_call_id"])
    return messages


def _chat_message(message: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in message.items() if k in ("role", "content", "tool_calls", "tool_call_id")}
    content = out.get("content")
    if isinstance(content, list) and all(p.get("type") == "text" for p in content):
        out["content"] = "\n".join(p["text"] for p in content)
    if out.get("tool_calls"):
        out["tool_calls"] = [
            {**c, "function": {**c["function"], "arguments": _compact(c["function"]["arguments"])}}
            for c in out["tool_calls"]
        ]
        out["content"] = out.get("content") or ""
    return out


def _compact(arguments: str) -> str:
    """Argument text as the renderer writes it: compact JSON for an object, any other text unchanged."""
    try:
        value = json.loads(arguments or "{}")
    except ValueError:
        return arguments
    return dumps_compact(value) if isinstance(value, dict) else arguments


def _responses_item(item: dict[str, Any]) -> dict[str, Any]:
    if item.get("type") in ("message", "function_call"):
        item = {k: v for k, v in item.items() if k not in ("id", "status")}
    if item.get("type") == "function_call":
        item["arguments"] = _compact(item["arguments"])
    content = item.get("content")
    if isinstance(content, list) and all(
        isinstance(p, dict) and set(p) <= {"type", "text", "annotations"} for p in content
    ):
        item["content"] = (
            "\n".join(p["text"] for p in content)
            if item.get("role") != "assistant"
            else "".join(p["text"] for p in content)
        )
    return item


def _claude_code_body(path: Path) -> dict[str, Any]:
    """The Messages request body a Claude Code session amounts to (one turn per message id)."""
    messages: list[dict[str, Any]] = []
    for line in path.read_text().splitlines():
        record = json.loads(line)
        message = record.get("message")
        if record.get("type") not in ("user", "assistant") or not isinstance(message, dict):
            continue
        content = message["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
        if messages and messages[-1]["role"] == message["role"]:  # one turn per role, as the API wants
            messages[-1]["content"].extend(blocks)
        else:
            messages.append({"role": message["role"], "content": blocks})
    while (
        messages
        and messages[-1]["role"] == "assistant"
        and any(b["type"] == "tool_use" for b in messages[-1]["content"])
    ):
        messages.pop()
    return {"model": "claude-sonnet-4-5", "max_tokens": 1024, "system": "You are Claude Code.", "messages": messages}


def _codex_body(path: Path) -> dict[str, Any]:
    """The Responses request body a Codex rollout amounts to (its response items, in order)."""
    items = [json.loads(line)["payload"] for line in path.read_text().splitlines() if '"response_item"' in line]
    items = [i for i in items if i.get("type") in ("message", "reasoning", "function_call", "function_call_output")]
    while items and items[-1]["type"] == "function_call":
        items.pop()
    return {"model": "gpt-5-codex", "instructions": "You are Codex.", "input": items}


def _swe_agent_body(path: Path) -> dict[str, Any]:
    """The Chat Completions request body of a SWE-agent trajectory's history."""
    messages = []
    for m in json.loads(path.read_text())["history"]:
        out: dict[str, Any] = {"role": m["role"], "content": m["content"]}
        if m.get("tool_calls"):
            out["tool_calls"] = m["tool_calls"]
        if m.get("tool_call_ids"):
            out["tool_call_id"] = m["tool_call_ids"][0]
        messages.append(out)
    while messages and messages[-1].get("tool_calls"):
        messages.pop()
    return {"model": "gpt-4o", "messages": messages}


REAL = [
    ("chat/anthropic.json", lambda p: json.loads(p.read_text())),
    ("chat/openai.json", lambda p: json.loads(p.read_text())),
    ("claude-code/session.jsonl", _claude_code_body),
    ("claude-code/parallel-siblings.jsonl", _claude_code_body),
    ("codex/rollout.jsonl", _codex_body),
]


@pytest.mark.parametrize(("name", "load"), REAL, ids=[name for name, _ in REAL])
def test_real_bodies_come_back_equal(name: str, load: Any) -> None:
    body = load(TRANSCRIPTS / name)
    fmt = detect_format(body)
    assert fmt is not None
    assert round_trip(body) == canonical(fmt, body)
    again = round_trip(round_trip(body))
    assert again == round_trip(body)  # the renderer's spelling is a fixed point


@pytest.mark.parametrize("path", sorted((TRAJECTORIES / "swe-agent").glob("*.traj")), ids=lambda p: p.name)
def test_real_swe_agent_histories_come_back_equal(path: Path) -> None:
    body = _swe_agent_body(path)
    assert round_trip(body) == canonical("openai_chat", body)


def test_an_imported_transcript_replays_its_reasoning_as_the_provider_sent_it() -> None:
    """Importers read blocks through the same codec: a redacted block goes back as ``redacted_thinking``."""
    from contextwarden.importers import load_transcript
    from contextwarden.wire._messages import message_of

    transcript = load_transcript(TRANSCRIPTS / "chat" / "anthropic.json")
    messages = tuple(m for m in map(message_of, transcript.events) if m is not None)
    from contextwarden.context import ModelContext

    body = get_codec("anthropic").render_request(ModelContext(model="m", system="", messages=messages))
    blocks = [b for m in body["messages"] for b in m["content"]]
    assert {"type": "redacted_thinking", "data": "EmwKAhgBEgy-redacted"} in blocks
    assert {
        "type": "thinking",
        "thinking": "Check the largest directories first.",
        "signature": "ErUBCkYIBBgCIkB-sig",
    } in [strip_cache_control(b) for b in blocks]


def test_legacy_function_calls_become_tool_calls_with_their_results() -> None:
    body = json.loads((TRANSCRIPTS / "chat" / "openai-functions.json").read_text())
    parsed = get_codec("openai_chat").parse_request(body)
    rendered = get_codec("openai_chat").render_request(parsed.to_context())
    calls = [c for m in rendered["messages"] for c in m.get("tool_calls") or ()]
    results = [m for m in rendered["messages"] if m["role"] == "tool"]
    assert calls and [c["id"] for c in calls] == [m["tool_call_id"] for m in results]
    assert calls[0]["id"] == "function-call-1" and results[0]["content"] == "4.828"


def test_openai_encrypted_reasoning_from_an_import_never_reaches_anthropic_or_gemini() -> None:
    """Codex transcripts keep a reasoning item whole, as an opaque Responses item (never a signature)."""
    from contextwarden.importers import load_transcript
    from contextwarden.wire._messages import message_of

    transcript = load_transcript(TRANSCRIPTS / "codex" / "rollout.jsonl")
    messages = tuple(m for m in map(message_of, transcript.events) if m is not None)
    assert not any(b.signature for m in messages for b in m.thinking)
    assert any("gAAAAA" in p.raw_json and p.format == "openai_responses" for m in messages for p in m.opaque)
    from contextwarden.context import ModelContext

    ctx = ModelContext(model="m", system="", messages=messages)
    for fmt in ("anthropic", "gemini"):
        assert "gAAAAA" not in json.dumps(get_codec(fmt).render_request(ctx))
    assert "gAAAAA" in json.dumps(get_codec("openai_responses").render_request(ctx))


def test_a_deferred_tools_search_and_namespaced_call_come_back_as_sent() -> None:
    """Codex loads its MCP tools with a client-executed ``tool_search``, then calls one in its namespace."""
    namespace = {"type": "namespace", "name": "mcp__srv", "description": "A server.", "tools": []}
    body = {
        "model": "gpt-5",
        "input": [
            {"type": "message", "role": "user", "content": "recall it"},
            {"type": "tool_search_call", "call_id": "c1", "execution": "client", "arguments": {"query": "recall"}},
            {"type": "tool_search_output", "call_id": "c1", "status": "completed", "execution": "client"}
            | {"tools": [namespace]},
            {"type": "function_call", "call_id": "c2", "name": "recall", "namespace": "mcp__srv", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c2", "output": "the original"},
        ],
    }
    parsed = get_codec("openai_responses").parse_request(body)
    # the search output answers the search: a message of its own, not part of the turn before it
    kinds = [(type(e).__name__, [p.kind for p in getattr(e, "opaque", ())]) for e in parsed.events]
    assert kinds == [
        ("UserMessage", []),
        ("AssistantMessage", ["tool_search_call"]),
        ("UserMessage", ["tool_search_output"]),
        ("AssistantMessage", []),
        ("ToolResult", []),
    ]
    assert [c.name for c in parsed.events[3].tool_calls] == ["mcp__srv.recall"]
    assert round_trip(body) == body
