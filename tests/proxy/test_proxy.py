"""The proxy over real HTTP: official SDK clients -> proxy -> scripted upstream, every byte checked."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest

from _proxy import Rig, rig, without_cache_control
from contextwarden.assemble.checkpoints import checkpoint_key
from contextwarden.log.events import AssistantMessage, ToolResult, UsageReport
from contextwarden.proxy.scripted import Reply

SONNET = "claude-sonnet-4-5"


@pytest.fixture
def proxied(tmp_path: Path) -> Any:
    with rig(str(tmp_path / "s.db")) as r:
        yield r


def _anthropic(r: Rig, key: str = "key-a", **headers: str) -> anthropic.Anthropic:
    return r.anthropic(key, **headers)


def _events(r: Rig, session_id: str) -> list[Any]:
    r.proxy.settle()  # answers are filed on the recorder thread, after the client has them
    return r.proxy.store.read(session_id)


def _sessions(r: Rig) -> list[str]:
    r.proxy.settle()
    return [s.id for s in r.proxy.store.list_sessions()]


# --------------------------------------------------------------------------- pass-through and headers


def test_other_endpoints_pass_through_with_headers(proxied: Rig) -> None:
    client = openai.OpenAI(base_url=proxied.url + "/v1", api_key="sk-secret", default_headers={"openai-beta": "x=1"})
    proxied.clients.append(client)
    models = client.models.list()
    assert [m.id for m in models.data] == ["scripted"]
    seen = proxied.upstream.received[-1]
    assert seen.path == "/v1/models"
    assert seen.headers["authorization"] == "Bearer sk-secret"
    assert seen.headers["openai-beta"] == "x=1"


def test_headers_reach_upstream_as_sent_and_credentials_are_not_stored(proxied: Rig, tmp_path: Path) -> None:
    sent = {
        "x-api-key": "sk-ant-very-secret",
        "anthropic-beta": "context-1m-2025-08-07,foo",
        "anthropic-version": "2023-06-01",
        "x-custom": "kept",
        "content-type": "application/json",
        "accept": "text/plain",
        "user-agent": "claude-cli/2.0",
    }
    body = {"model": SONNET, "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]}
    with httpx.Client(headers={}) as http:
        http.post(proxied.url + "/v1/messages", json=body, headers=sent)
    seen = dict(proxied.upstream.received[-1].headers)
    assert {
        k: v for k, v in seen.items() if k not in ("host", "content-length", "accept-encoding", "connection")
    } == sent
    client = _anthropic(proxied, key="sk-ant-very-secret")
    client.messages.create(model=SONNET, max_tokens=16, messages=[{"role": "user", "content": "hi"}])
    assert "very-secret" in proxied.upstream.received[-1].headers["authorization"]
    for file in tmp_path.iterdir():
        assert b"very-secret" not in file.read_bytes(), file


def test_unchanged_request_is_forwarded_as_the_original_bytes(proxied: Rig) -> None:
    # odd spacing, escaped unicode, unknown fields: nothing to project, so not one byte may change
    raw = (
        b'{ "model" : "gpt-4.1", "messages": [ {"role": "system", "content": "be brief \\u00e9"},'
        b' {"role": "user", "content": "hello", "x_unknown": {"k": [1, 2.50]}} ], "zz_top": true }'
    )
    response = httpx.post(proxied.url + "/v1/chat/completions", content=raw, headers={"authorization": "Bearer k"})
    assert response.status_code == 200
    assert proxied.upstream.received[-1].body == raw


def test_breakpoint_added_on_the_tail_changes_nothing_else(proxied: Rig) -> None:
    body = {
        "model": SONNET,
        "max_tokens": 16,
        "system": [{"type": "text", "text": "You are terse."}],
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hello", "x_extra": 1}]}],
        "zz_unknown": {"a": "é"},
    }
    raw = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()
    httpx.post(proxied.url + "/v1/messages", content=raw, headers={"x-api-key": "k", "anthropic-version": "2023-06-01"})
    sent = proxied.upstream.received[-1].body
    assert sent != raw
    parsed = json.loads(sent)
    assert parsed["messages"][0]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert without_cache_control(parsed) == body
    assert list(parsed) == list(body)  # the client's key order


def test_malformed_body_gets_the_upstreams_own_error(proxied: Rig) -> None:
    response = httpx.post(proxied.url + "/v1/messages", content=b"{not json", headers={"x-api-key": "k"})
    assert response.status_code == 400
    assert response.json()["error"]["message"].startswith("request body is not valid JSON")
    assert proxied.upstream.received[-1].body == b"{not json"


@pytest.mark.parametrize("status", [429, 500])
def test_upstream_errors_reach_the_client_with_status_and_body(proxied: Rig, status: int) -> None:
    error = json.dumps({"type": "error", "error": {"type": "rate_limit_error", "message": f"scripted {status}"}})
    proxied.upstream.push(Reply(status=status, error_body=error.encode()))
    client = _anthropic(proxied)
    with pytest.raises(anthropic.APIStatusError) as caught:
        client.messages.create(model=SONNET, max_tokens=16, messages=[{"role": "user", "content": "hi"}])
    assert caught.value.status_code == status
    assert f"scripted {status}" in str(caught.value)


# --------------------------------------------------------------------------- turns, tee and the log


def _agent_turns(client: anthropic.Anthropic, r: Rig, turns: int, *, stream: bool, output: str = "line\n") -> list[Any]:
    """A tool-using agent: each reply calls a tool, each result goes back, the whole history every time."""
    messages: list[Any] = [{"role": "user", "content": "fix the failing test"}]
    replies = []
    for n in range(turns):
        r.upstream.push(
            Reply(
                text=f"step {n}", thinking=(f"think {n}", f"sig-{n}=="), tool_calls=((f"toolu_{n}", "Bash", {"n": n}),)
            )
        )
        args: dict[str, Any] = {"model": SONNET, "max_tokens": 64, "messages": messages, "system": "You are an agent."}
        if stream:
            with client.messages.stream(**args) as s:
                reply = s.get_final_message()
        else:
            reply = client.messages.create(**args)
        replies.append(reply)
        messages = [
            *messages,
            {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in reply.content]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": output * 3}]},
        ]
    return replies


@pytest.mark.parametrize("stream", [False, True])
def test_multi_turn_session_is_logged_once_with_real_usage(proxied: Rig, stream: bool) -> None:
    client = _anthropic(proxied)
    replies = _agent_turns(client, proxied, 4, stream=stream)
    assert [b.type for b in replies[-1].content] == ["thinking", "text", "tool_use"]
    assert replies[-1].content[0].signature == "sig-3=="
    (session,) = _sessions(proxied)
    events = _events(proxied, session)
    assistants = [e for e in events if isinstance(e, AssistantMessage)]
    assert [a.text for a in assistants] == ["step 0", "step 1", "step 2", "step 3"]
    assert [t.signature for a in assistants for t in a.thinking] == ["sig-0==", "sig-1==", "sig-2==", "sig-3=="]
    assert [e.call_id for e in events if isinstance(e, ToolResult)] == ["toolu_0", "toolu_1", "toolu_2"]
    usages = [e for e in events if isinstance(e, UsageReport)]
    billed = [r.usage for r in proxied.upstream.received if r.usage is not None]
    assert [u.input_tokens for u in usages] == [b.input_tokens for b in billed]
    assert [u.cache_read_tokens for u in usages] == [b.cache_read_tokens for b in billed]
    rows = proxied.rows()
    assert [row.cache_write_tokens for row in rows] == [b.cache_write_tokens for b in billed]
    # the client's thinking signatures went upstream untouched on every later turn
    last = proxied.forwarded("/v1/messages")[-1]
    blocks = [b for m in last["messages"] if isinstance(m["content"], list) for b in m["content"]]
    signatures = [b["signature"] for b in blocks if b.get("type") == "thinking"]
    assert signatures == ["sig-0==", "sig-1==", "sig-2=="]


def test_the_window_checkpoint_is_saved_after_an_answer_not_inside_a_request(proxied: Rig) -> None:
    _agent_turns(_anthropic(proxied), proxied, 30, stream=True)
    (session,) = _sessions(proxied)
    manager = proxied.proxy.pipeline.manager
    saved = proxied.proxy.store.load_checkpoint(session, checkpoint_key(manager.policy, manager.counter))  # type: ignore[attr-defined]
    assert saved is not None
    covered = next(e for e in proxied.proxy.store.read(session) if e.id == saved.event_id)
    assert isinstance(covered, UsageReport)  # the last event an answer files; a request's build ends on its own


def test_client_disconnect_mid_stream_records_an_interrupted_turn(proxied: Rig) -> None:
    proxied.upstream.push(Reply(text="a long answer " * 20, delay=0.2))
    body = {"model": SONNET, "max_tokens": 64, "stream": True, "messages": [{"role": "user", "content": "go"}]}
    with httpx.stream("POST", proxied.url + "/v1/messages", json=body, headers={"x-api-key": "k"}) as response:
        next(response.iter_bytes())
    for _ in range(100):
        rows = proxied.rows()
        if rows:
            break
        import time

        time.sleep(0.05)
    assert [row.outcome for row in rows] == ["interrupted"]
    (session,) = _sessions(proxied)
    assert not any(isinstance(e, AssistantMessage) for e in _events(proxied, session))


# --------------------------------------------------------------------------- session identity


def _ask(r: Rig, key: str, text: str, **headers: str) -> None:
    client = _anthropic(r, key=key, **headers)
    client.messages.create(model=SONNET, max_tokens=16, messages=[{"role": "user", "content": text}])


def test_two_credentials_with_one_session_id_stay_apart(proxied: Rig) -> None:
    _ask(proxied, "key-a", "secret plan of a", **{"x-contextwarden-session": "shared"})
    _ask(proxied, "key-b", "plan of b", **{"x-contextwarden-session": "shared"})
    sessions = _sessions(proxied)
    assert len(sessions) == 2
    texts = [[e.text for e in _events(proxied, s) if e.kind == "user"] for s in sessions]
    assert sorted(texts) == [["plan of b"], ["secret plan of a"]]


def test_parallel_sessions_with_the_same_first_message_are_kept_apart(proxied: Rig) -> None:
    client = _anthropic(proxied)
    first = [{"role": "user", "content": "run the tests"}]
    proxied.upstream.push(Reply(text="answer A"), Reply(text="answer B"))
    a = client.messages.create(model=SONNET, max_tokens=16, messages=first)
    b = client.messages.create(model=SONNET, max_tokens=16, messages=first)
    for reply, follow in ((a, "then fix A"), (b, "then fix B")):
        client.messages.create(
            model=SONNET,
            max_tokens=16,
            messages=[
                *first,
                {"role": "assistant", "content": reply.content[0].text},
                {"role": "user", "content": follow},
            ],
        )
    sessions = _sessions(proxied)
    assert len(sessions) == 2
    users = sorted([e.text for e in _events(proxied, s) if e.kind == "user"] for s in sessions)
    assert users == [["run the tests", "then fix A"], ["run the tests", "then fix B"]]


def test_claude_code_side_requests_get_their_own_session(proxied: Rig) -> None:
    header = {"x-claude-code-session-id": "cc-1"}
    client = _anthropic(proxied, **header)
    main = [{"role": "user", "content": "refactor the parser"}]
    reply = client.messages.create(model=SONNET, max_tokens=16, system="You are Claude Code.", messages=main)
    client.messages.create(
        model="claude-haiku-4-5",
        max_tokens=16,
        system="Write a 5-word title.",
        messages=[{"role": "user", "content": "refactor the parser"}],
    )
    client.messages.create(
        model=SONNET,
        max_tokens=16,
        system="You are Claude Code.",
        messages=[*main, {"role": "assistant", "content": reply.content[0].text}, {"role": "user", "content": "go on"}],
    )
    sessions = _sessions(proxied)
    assert len(sessions) == 2
    sizes = sorted(sum(e.kind == "user" for e in _events(proxied, s)) for s in sessions)
    assert sizes == [1, 2]
