"""The proxy's suffix reader: reading only a request's new messages gives what reading it whole gives."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from _paths import DATA
from contextwarden.importers import load_transcript
from contextwarden.log.events import Instruction
from contextwarden.mirror import content_digest
from contextwarden.proxy.bodyedit import count_message_marks
from contextwarden.proxy.suffix import SuffixCache, _whole
from contextwarden.wire import ParsedRequest, get_codec
from contextwarden.wire.openai_responses import is_user_side

TRANSCRIPT = DATA / "transcripts" / "codex" / "rollout.jsonl"


def _rendered(fmt: str, model: str) -> dict[str, Any]:
    """A real Codex session rendered as one request of ``fmt`` (tool calls and results included)."""
    transcript = load_transcript(TRANSCRIPT)
    events = tuple(e for e in transcript.events if e.kind in ("user", "assistant", "tool_result"))
    parsed = ParsedRequest(format=fmt, model=model, instructions=(Instruction(text="You are terse."),), events=events)
    return get_codec(fmt).render_request(parsed.to_context(), max_tokens=256)


def _real_body() -> dict[str, Any]:
    """The real session as one Anthropic request."""
    return _rendered("anthropic", "claude-sonnet-4-5")


def _turn_ends(messages: list[dict[str, Any]]) -> list[int]:
    """Lengths at which the client would send: each prefix that ends with a user message."""
    return [k for k in range(1, len(messages) + 1) if messages[k - 1]["role"] == "user"]


def _same(a: Any, b: Any) -> None:
    assert [content_digest(e) for e in a.parsed.events] == [content_digest(e) for e in b.parsed.events]
    assert [(type(e), getattr(e, "tool_name", None)) for e in a.parsed.events] == [
        (type(e), getattr(e, "tool_name", None)) for e in b.parsed.events
    ]
    assert a.digests == b.digests
    assert a.root == b.root and a.chain == b.chain
    assert [content_digest(i) for i in a.parsed.instructions] == [content_digest(i) for i in b.parsed.instructions]
    assert a.parsed.tools == b.parsed.tools
    assert a.parsed.spans == b.parsed.spans and a.parsed.tool_spans == b.parsed.tool_spans
    assert a.parsed.extra == b.parsed.extra and a.parsed.max_tokens == b.parsed.max_tokens


def test_a_real_session_read_turn_by_turn_matches_the_whole_parse() -> None:
    body = _real_body()
    messages = body["messages"]
    ends = _turn_ends(messages)
    assert len(ends) >= 5 and any(b.get("type") == "tool_result" for m in messages for b in m["content"])
    cache = SuffixCache()
    reused = []
    for k in ends:
        request = copy.deepcopy({**body, "messages": messages[:k]})  # a fresh JSON parse each call
        read = cache.read("anthropic", request, "caller")
        _same(read, _whole("anthropic", request))
        reused.append(read.reused)
    assert reused[0] == 0 and all(r > 0 for r in reused[2:])  # after the first turns, only the suffix is read


def test_a_tool_result_whose_call_came_before_the_anchor_keeps_its_tool_name() -> None:
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "c1", "name": "read_file", "input": {}}]},
        {"role": "user", "content": "wait"},
        {"role": "assistant", "content": "waiting"},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "late"}]},
    ]
    body = {"model": "m", "max_tokens": 5, "messages": messages[:3]}
    cache = SuffixCache()
    cache.read("anthropic", body, "caller")
    cache.read("anthropic", {**body, "messages": messages[:4]}, "caller")
    read = cache.read("anthropic", {**body, "messages": messages}, "caller")
    assert read.reused > 0
    assert read.parsed.events[-1].tool_name == "read_file"  # type: ignore[attr-defined]
    _same(read, _whole("anthropic", {**body, "messages": messages}))


@pytest.mark.parametrize("change", ["edited", "system", "other_caller"])
def test_anything_but_an_extension_is_read_whole_or_rechained(change: str) -> None:
    body = _real_body()
    messages = body["messages"]
    k = _turn_ends(messages)[3]
    cache = SuffixCache()
    cache.read("anthropic", {**body, "messages": messages[:k]}, "caller")
    longer = copy.deepcopy({**body, "messages": messages[: _turn_ends(messages)[4]]})
    caller = "caller"
    if change == "edited":
        longer["messages"][0] = {"role": "user", "content": "a different opening"}
    elif change == "system":
        longer["system"] = "Another system prompt."
    else:
        caller = "someone else"
    read = cache.read("anthropic", longer, caller)
    _same(read, _whole("anthropic", longer))
    if change != "system":
        assert read.reused == 0


def _responses_body() -> dict[str, Any]:
    """The same real session as one OpenAI Responses request, as Codex sends it.

    ``instructions``, then leading developer and user messages, each assistant turn a run of items
    (encrypted reasoning and a compaction item among them), tool outputs as ``function_call_output``.
    """
    body = _rendered("openai_responses", "gpt-5")
    items: list[dict[str, Any]] = [
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "sandbox: none"}]}
    ]
    turns = 0
    for item in body["input"]:
        if not is_user_side(item) and is_user_side(items[-1]):
            turns += 1  # the first item of an assistant turn: reasoning goes before it, as a model emits it
            items.append({"type": "reasoning", "summary": [], "encrypted_content": f"enc-{turns}"})
            if turns == 3:
                items.append({"type": "compaction", "encrypted_content": "summary-blob"})
        items.append(item)
    return {"model": body["model"], "instructions": "Work in small steps.", **body, "input": items}


def _responses_ends(items: list[dict[str, Any]]) -> list[int]:
    """Lengths at which a Responses client would send: after the user-side items that precede a turn."""
    return [
        k
        for k in range(2, len(items) + 1)
        if is_user_side(items[k - 1]) and (k == len(items) or not is_user_side(items[k]))
    ]


def test_an_openai_responses_session_read_turn_by_turn_matches_the_whole_parse() -> None:
    body = _responses_body()
    items = body["input"]
    ends = _responses_ends(items)
    kinds = {i.get("type") for i in items}
    assert {"reasoning", "compaction", "function_call", "function_call_output"} <= kinds and len(ends) >= 5
    assert body["instructions"] and items[0]["role"] == "developer"
    cache = SuffixCache()
    based, reused = [], []
    for k in ends:
        raw = _raw({**body, "input": items[:k]})
        loaded = cache.load("openai_responses", raw, "caller")
        assert loaded.body == json.loads(raw)
        read = cache.read("openai_responses", loaded.body, "caller", loaded=loaded)
        _same(read, _whole("openai_responses", json.loads(raw)))
        based.append(loaded.base is not None)
        reused.append(read.reused)
    assert not based[0] and all(based[2:]) and all(r > 0 for r in reused[2:])
    # the same from parsed bodies, matched against the remembered lists
    cache = SuffixCache()
    for k in ends:
        request = copy.deepcopy({**body, "input": items[:k]})
        read = cache.read("openai_responses", request, "caller")
        _same(read, _whole("openai_responses", request))
    assert read.reused > 0


@pytest.mark.parametrize("change", ["instructions", "developer", "string_input"])
def test_an_openai_responses_request_that_changes_before_its_anchor_is_read_as_the_whole_parse(change: str) -> None:
    body = _responses_body()
    items = body["input"]
    ends = _responses_ends(items)
    cache = SuffixCache()
    cache.read("openai_responses", copy.deepcopy({**body, "input": items[: ends[3]]}), "caller")
    longer = copy.deepcopy({**body, "input": items[: ends[4]]})
    if change == "instructions":  # a body field: read afresh, the list's prefix still reused
        longer["instructions"] = "You are verbose."
    elif change == "developer":
        longer["input"][0] = {"type": "message", "role": "developer", "content": "sandbox: full"}
    else:
        longer["input"] = "just a question"
    read = cache.read("openai_responses", longer, "caller")
    _same(read, _whole("openai_responses", longer))
    assert (read.reused > 0) == (change == "instructions")


def _chat_body() -> dict[str, Any]:
    """The same real session as one OpenAI Chat request: a system message, tool calls and tool messages."""
    return _rendered("openai_chat", "gpt-5")


def _chat_ends(messages: list[dict[str, Any]]) -> list[int]:
    """Lengths at which a Chat client would send: after a user message or the last tool message of a turn."""
    return [
        k
        for k in range(1, len(messages) + 1)
        if messages[k - 1]["role"] in ("user", "tool") and (k == len(messages) or messages[k]["role"] == "assistant")
    ]


def test_an_openai_chat_session_read_from_its_bytes_turn_by_turn_matches_the_whole_parse() -> None:
    body = _chat_body()
    messages = body["messages"]
    ends = _chat_ends(messages)
    assert messages[0]["role"] == "system" and any(m["role"] == "tool" for m in messages) and len(ends) >= 5
    cache = SuffixCache()
    based, reused = [], []
    for k in ends:
        raw = _raw({**body, "messages": messages[:k]})
        loaded = cache.load("openai_chat", raw, "caller")
        assert loaded.body == json.loads(raw)
        read = cache.read("openai_chat", loaded.body, "caller", loaded=loaded)
        _same(read, _whole("openai_chat", json.loads(raw)))
        assert read.marks is None and read.holders is None
        based.append(loaded.base is not None)
        reused.append(read.reused)
    assert not based[0] and all(based[2:]) and all(r > 0 for r in reused[2:])
    # the same from parsed bodies, matched against the remembered lists
    cache = SuffixCache()
    for k in ends:
        request = copy.deepcopy({**body, "messages": messages[:k]})
        read = cache.read("openai_chat", request, "caller")
        _same(read, _whole("openai_chat", request))
    assert read.reused > 0


@pytest.mark.parametrize("change", ["function_call", "function_message", "named_tool_message", "system"])
def test_an_openai_chat_tail_that_does_not_read_alone_is_read_whole(change: str) -> None:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "function_call": {"name": "ls", "arguments": "{}"}},
        {"role": "function", "name": "ls", "content": "a b"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "text"},
        {"role": "assistant", "content": "done"},
        {"role": "user", "content": "again"},
    ]
    body = {"model": "m", "messages": messages}
    cache = SuffixCache()
    cache.read("openai_chat", body, "caller")
    longer = copy.deepcopy(body)
    if change == "function_call":
        longer["messages"] += [
            {"role": "assistant", "content": None, "function_call": {"name": "ls", "arguments": "{}"}},
            {"role": "function", "name": "ls", "content": "c"},
        ]
    elif change == "function_message":
        longer["messages"] += [
            {"role": "assistant", "content": "ok"},
            {"role": "function", "name": "ls", "content": "c"},
        ]
    elif change == "named_tool_message":
        longer["messages"] += [
            {"role": "assistant", "content": "ok"},
            {"role": "tool", "tool_call_id": "c1", "name": "other", "content": "late"},
        ]
    else:
        longer["messages"][0] = {"role": "system", "content": "Be verbose."}
        longer["messages"] += [{"role": "assistant", "content": "ok"}, {"role": "user", "content": "more"}]
    read = cache.read("openai_chat", longer, "caller")
    _same(read, _whole("openai_chat", longer))
    assert read.reused == 0
    plain = copy.deepcopy(body)
    plain["messages"] += [
        {"role": "assistant", "content": "ok"},
        {"role": "tool", "tool_call_id": "c1", "content": "x"},
    ]
    assert cache.read("openai_chat", plain, "caller").reused > 0  # the same list with a plain tail: suffix only


def test_a_lanes_cut_reuses_its_shared_messages_and_equals_a_fresh_cut() -> None:
    from contextwarden.tokens import HeuristicCounter
    from contextwarden.wire.blocks import BlockMeter

    body = _real_body()
    messages = body["messages"]
    lane, fresh = BlockMeter(HeuristicCounter()), BlockMeter(HeuristicCounter())
    serialized = []
    cut_one = lane._block
    lane._block = lambda value, tokens_of: (serialized.append(1), cut_one(value, tokens_of))[1]  # type: ignore[method-assign]
    ends = _turn_ends(messages)
    per_turn = []
    for k in ends:
        request = copy.deepcopy({**body, "messages": messages[:k]})
        request["messages"][-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}  # a moving breakpoint
        if k == ends[-1]:
            request["messages"][0]["content"] = "an edited opening"  # the client rewrote its history
        before = len(serialized)
        assert lane.cut("anthropic", request, lane=("s", "client")) == fresh.cut("anthropic", request)
        per_turn.append(len(serialized) - before)
    blocks = [len(fresh.cut("anthropic", {**body, "messages": messages[:k]})[0]) for k in ends]
    # between turns only the new messages (and the one whose breakpoint moved) are cut again
    assert all(per_turn[i] < blocks[i] for i in range(2, len(ends) - 1))
    assert per_turn[-1] == blocks[-1]  # after an edit at the front, everything is


def _raw(body: dict[str, Any]) -> bytes:
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()


def test_bodies_read_from_their_bytes_turn_by_turn_match_json_loads_and_the_whole_parse() -> None:
    body = _real_body()
    messages = body["messages"]
    ends = _turn_ends(messages)
    cache = SuffixCache()
    based = []
    for k in ends:
        request = {**body, "messages": copy.deepcopy(messages[:k])}
        request["messages"][0]["content"][-1]["cache_control"] = {"type": "ephemeral"}  # counted before the anchor
        if k == ends[-1]:
            request["messages"][-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
        raw = _raw(request)
        loaded = cache.load("anthropic", raw, "caller")
        assert loaded.body == json.loads(raw)
        read = cache.read("anthropic", loaded.body, "caller", loaded=loaded)
        _same(read, _whole("anthropic", json.loads(raw)))
        assert read.marks == count_message_marks(json.loads(raw)["messages"])
        based.append(loaded.base is not None)
    assert not based[0] and all(based[2:])  # after the first turns, only the bytes after the anchor are parsed


def test_a_body_whose_bytes_differ_before_the_anchor_is_parsed_whole() -> None:
    body = _real_body()
    messages = body["messages"]
    ends = _turn_ends(messages)
    cache = SuffixCache()
    first = _raw({**body, "messages": messages[: ends[3]]})
    loaded = cache.load("anthropic", first, "caller")
    cache.read("anthropic", loaded.body, "caller", loaded=loaded)
    edited = copy.deepcopy({**body, "messages": messages[: ends[4]]})
    edited["messages"][0] = {"role": "user", "content": "a different opening"}
    loaded = cache.load("anthropic", _raw(edited), "caller")
    assert loaded.base is None and loaded.body == edited
    assert cache.load("anthropic", _raw({**body, "messages": messages[: ends[4]]}), "other").base is None


def test_a_body_that_is_not_json_raises_as_json_loads_does() -> None:
    cache = SuffixCache()
    raw = _raw({**_real_body()})
    loaded = cache.load("anthropic", raw, "caller")
    cache.read("anthropic", loaded.body, "caller", loaded=loaded)
    for bad in (raw[:-1], raw[: len(raw) // 2], b"not json", raw + b"}"):
        with pytest.raises(ValueError):
            cache.load("anthropic", bad, "caller")
    assert cache.load("openai_chat", b'{"messages":[]}', "caller").body == {"messages": []}
