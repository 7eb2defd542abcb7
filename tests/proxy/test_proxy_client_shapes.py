"""Today's clients' request shapes through the proxy: managed, never a fall-back, no restart they did not make.

Claude Code puts ``role: "system"`` messages inside ``messages``, sends top-level fields the proxy does
not know (``context_management``, ``output_config``), writes its tools' defaults into the calls it
echoes (``"replace_all": false``) and answers a re-read of an unchanged file with a pointer back to
the earlier result. Codex echoes its reasoning items in its own key order with ``"content": null``.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import pytest

from _proxy import Rig, rig
from contextwarden.log.events import Compaction, ContextEditBatch
from contextwarden.proxy._reply import Reply
from contextwarden.proxy.identity import client_session_id
from contextwarden.proxy.scripted import ScriptedUpstream

BIG = "\n".join(f"line {i}: " + "x" * 60 for i in range(1500))
HEADERS = {"x-api-key": "k1", "anthropic-version": "2023-06-01", "x-claude-code-session-id": "cc-1"}
POINTER = "Wasted call \u2014 file unchanged since your last Read. Refer to that earlier tool_result instead."


def _claude_body(messages: list[Any], **extra: Any) -> dict[str, Any]:
    tools = [
        {"name": n, "description": f"{n} tool", "input_schema": {"type": "object", "properties": {}}}
        for n in ("Bash", "Read", "Edit", "Agent")
    ]
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 32000,
        "system": [{"type": "text", "text": "You are a coding agent. " * 60, "cache_control": {"type": "ephemeral"}}],
        "messages": messages,
        "tools": tools,
        "stream": True,
        **extra,
    }


def _post(r: Rig, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
    with httpx.Client(timeout=60) as client:
        resp = client.post(r.url + "/v1/messages", json=body, headers=headers or HEADERS)
        assert resp.status_code == 200, resp.text


def _call(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "tool_use", "id": call_id, "name": name, "input": args}]}


def _result(call_id: str, output: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_id, "content": output}]}


def _window_events(r: Rig) -> Counter[str]:
    store = r.proxy.pipeline.store
    out: Counter[str] = Counter()
    for info in store.list_sessions():
        for event in store.iter_events(info.id):
            if isinstance(event, Compaction):
                out[f"compaction:{event.details.get('mirror', event.summarizer)}"] += 1
            elif isinstance(event, ContextEditBatch):
                out["edits"] += 1
    return out


def _claude_session(
    r: Rig,
    up: ScriptedUpstream,
    steps: int,
    *,
    echo: Any,
    extra: dict[str, Any] | None = None,
    system_messages: bool = True,
) -> list[Any]:
    """A Claude Code-shaped session: reads of large files, edits echoed through ``echo``, system messages."""
    messages: list[Any] = [{"role": "user", "content": [{"type": "text", "text": "Fix the bug in big.py"}]}]
    if system_messages:
        messages.append({"role": "system", "content": "Available agent types: general-purpose, Explore"})
    for step in range(steps):
        name, args = (
            ("Edit", {"file_path": "/r/a.py", "old_string": "a", "new_string": "b"})
            if step % 3 == 2
            else (
                "Read",
                {"file_path": f"/r/f{step}.py"},
            )
        )
        call_id = f"toolu_{step:02d}"
        up.push(Reply(text="", tool_calls=((call_id, name, args),)))
        _post(r, _claude_body(messages, **(extra or {})))
        messages = [
            *messages,
            _call(call_id, name, echo(name, args)),
            _result(call_id, f"{args['file_path']}\n{BIG}" if name == "Read" else "ok"),  # each file its own
        ]
        if step % 5 == 4 and system_messages:
            messages.append({"role": "system", "content": "<system-reminder>the task list is empty</system-reminder>"})
    return messages


def _with_defaults(name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {**args, "replace_all": False} if name == "Edit" else args


def test_system_messages_inside_messages_are_managed_and_forwarded_verbatim(tmp_path: Path) -> None:
    up = ScriptedUpstream()
    extra = {
        "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
        "output_config": {"effort": "high"},
    }
    with rig(str(tmp_path / "s.db"), upstream=up) as r:
        _claude_session(r, up, 12, echo=lambda n, a: a, extra=extra)
        outcomes = Counter(row.outcome for row in r.rows())
        forwarded = r.forwarded("/v1/messages")
    assert outcomes["fallback"] == 0 and outcomes["passthrough"] == 0, outcomes
    assert outcomes["projected"] > 0
    last = forwarded[-1]
    assert last["context_management"] == extra["context_management"] and last["output_config"] == {"effort": "high"}
    systems = [m for m in last["messages"] if m["role"] == "system"]
    assert len(systems) == 3 and systems[0]["content"].startswith("Available agent types")


def test_client_filled_in_defaults_do_not_restart_the_window(tmp_path: Path) -> None:
    up = ScriptedUpstream()
    with rig(str(tmp_path / "s.db"), upstream=up) as r:
        # no system messages: before they were read, such a request was not managed at all
        _claude_session(r, up, 12, echo=_with_defaults, system_messages=False)
        events = _window_events(r)
        sessions = r.proxy.pipeline.store.list_sessions()
    assert events["compaction:reset"] == 0, events
    assert len(sessions) == 1


def test_a_real_edit_of_an_echoed_call_still_restarts(tmp_path: Path) -> None:
    up = ScriptedUpstream()

    def edited(name: str, args: dict[str, Any]) -> dict[str, Any]:
        return {**args, "new_string": "changed by the client"} if name == "Edit" else args

    with rig(str(tmp_path / "s.db"), upstream=up) as r:
        _claude_session(r, up, 6, echo=edited, system_messages=False)
        events = _window_events(r)
    assert events["compaction:reset"] >= 1, events


def test_a_pointer_back_to_a_masked_read_shows_the_earlier_output(tmp_path: Path) -> None:
    up = ScriptedUpstream()
    with rig(str(tmp_path / "s.db"), upstream=up) as r:
        messages = _claude_session(r, up, 12, echo=lambda n, a: a, system_messages=False)
        # the agent reads f0.py again; the client answers with a pointer instead of the file
        up.push(Reply(text="", tool_calls=(("toolu_again", "Read", {"file_path": "/r/f0.py"}),)))
        _post(r, _claude_body(messages))
        first = r.forwarded("/v1/messages")[-1]
        masked = [
            b for m in first["messages"] if m["role"] == "user" and isinstance(m["content"], list)
            for b in m["content"] if b.get("tool_use_id") == "toolu_00"
        ]  # fmt: skip
        assert masked and BIG not in json.dumps(masked), "the first read should be masked by now"
        messages = [*messages, _call("toolu_again", "Read", {"file_path": "/r/f0.py"}), _result("toolu_again", POINTER)]
        _post(r, _claude_body(messages))
        sent = r.forwarded("/v1/messages")[-1]
    again = next(b for b in sent["messages"][-1]["content"] if b.get("tool_use_id") == "toolu_again")
    text = again["content"] if isinstance(again["content"], str) else json.dumps(again["content"])
    assert "line 0: " in text and "toolu_00" in text


def test_a_pointer_to_a_result_still_shown_is_left_alone(tmp_path: Path) -> None:
    up = ScriptedUpstream()
    with rig(str(tmp_path / "s.db"), upstream=up) as r:
        messages = [{"role": "user", "content": "Look at f.py"}]
        for call_id in ("toolu_a", "toolu_b"):
            up.push(Reply(text="", tool_calls=((call_id, "Read", {"file_path": "/r/f.py"}),)))
            _post(r, _claude_body(messages))
            output = "short file\n" if call_id == "toolu_a" else POINTER
            messages = [*messages, _call(call_id, "Read", {"file_path": "/r/f.py"}), _result(call_id, output)]
        _post(r, _claude_body(messages))
        sent = r.forwarded("/v1/messages")[-1]
    assert sent["messages"][-1]["content"][0]["content"] == POINTER


def test_provider_side_clearing_of_tool_uses_is_not_paid_for_twice(tmp_path: Path) -> None:
    clearing = {"context_management": {"edits": [{"type": "clear_tool_uses_20250919"}]}}
    counts = {}
    for name, extra in (("plain", {}), ("clearing", clearing)):
        up = ScriptedUpstream()
        with rig(str(tmp_path / f"{name}.db"), upstream=up) as r:
            _claude_session(r, up, 12, echo=lambda n, a: a, extra=extra, system_messages=False)
            counts[name] = _window_events(r)["edits"]
    assert counts["plain"] > 0
    assert counts["clearing"] == 0, counts


@pytest.mark.parametrize(
    ("user_id", "expected"),
    [
        (json.dumps({"device_id": "d1", "account_uuid": "", "session_id": "s-42"}), "x-claude-code-session-id=s-42"),
        ("user_abc_account_x_session_s-42", "user_id=user_abc_account_x_session_s-42"),
    ],
)
def test_client_session_id_from_a_json_user_id(user_id: str, expected: str) -> None:
    assert client_session_id({}, {"metadata": {"user_id": user_id}}) == expected


def _responses_body(items: list[Any]) -> dict[str, Any]:
    return {"model": "gpt-5", "instructions": "You are Codex. " * 40, "input": items, "stream": True, "tools": []}


def test_reasoning_items_echoed_in_the_clients_own_order_do_not_restart(tmp_path: Path) -> None:
    up = ScriptedUpstream()
    with rig(str(tmp_path / "s.db"), upstream=up) as r:
        items: list[Any] = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]}]
        key = {"authorization": "Bearer sk-1", "session_id": "codex-1"}
        for step in range(8):
            call_id = f"call_{step}"
            call = (call_id, "shell", {"cmd": "ls"})
            up.push(Reply(text="", thinking=(f"thought {step}", f"enc{step}"), tool_calls=(call,)))
            with httpx.Client(timeout=60) as client:
                resp = client.post(r.url + "/v1/responses", json=_responses_body(items), headers=key)
                assert resp.status_code == 200, resp.text
            answered = [json.loads(line[6:]) for line in resp.text.splitlines() if line.startswith("data: {")]
            done = next(e for e in answered if e.get("type") == "response.completed")["response"]["output"]
            echoed = []
            for item in done:
                if item["type"] == "reasoning":  # the client's own key order, and a null it fills in
                    item = {"content": None, **{k: item[k] for k in reversed(list(item))}}
                echoed.append(item)
            items = [*items, *echoed, {"type": "function_call_output", "call_id": call_id, "output": BIG}]
        events = _window_events(r)
        outcomes = Counter(row.outcome for row in r.rows())
        sessions = r.proxy.pipeline.store.list_sessions()
    assert outcomes["fallback"] == 0, outcomes
    assert events["compaction:reset"] == 0, events
    assert len(sessions) == 1


def _shell_reads(*commands: tuple[str, str]) -> dict[str, Any]:
    from contextwarden.log.events import AssistantMessage, ToolCall, ToolResult, UserMessage
    from contextwarden.log.store.memory import MemoryStore
    from contextwarden.tokens import HeuristicCounter
    from contextwarden.window.policies.presets import CODING_TOOL_POLICIES
    from contextwarden.window.projection import Projection, ProjectionConfig

    events: list[Any] = [UserMessage(text="fix engine.py")]
    for n, (command, output) in enumerate(commands):
        call = ToolCall(id=f"k{n}", name="shell", arguments={"command": command})
        events += [AssistantMessage(tool_calls=(call,)), ToolResult(call_id=f"k{n}", tool_name="shell", output=output)]
    store = MemoryStore()
    store.create_session("p")
    projection = Projection(ProjectionConfig(counter=HeuristicCounter(), tool_policies=CODING_TOOL_POLICIES))
    for event in store.append("p", events, expected_last_seq=0):
        projection.add(event)
    return {i.message.tool_call_id: i.id in projection.candidates for i in projection.items if i.message.role == "tool"}


ENGINE = "\n".join(f"def f{i}(x):\n    return x + {i}" for i in range(900))


def test_a_whole_read_the_client_cut_supersedes_nothing() -> None:
    lines = ENGINE.splitlines()
    cut = "\n".join([*lines[:100], "[... omitted 1600 of 1800 lines ...]", *lines[-100:]])
    ranged = "\n".join(lines[:450])
    assert _shell_reads(("sed -n 1,450p engine.py", ranged), ("cat engine.py", cut)) == {"k0": False, "k1": False}
    assert _shell_reads(("sed -n 1,450p engine.py", ranged), ("cat engine.py", ENGINE))["k0"] is True
    # a whole read whose output goes on through a pipe shows what the pipe lets through
    assert _shell_reads(("cat engine.py", ENGINE), ("nl -ba engine.py | sed -n 5,9p", "5 def f2(x):"))["k0"] is False


def _results(body: dict[str, Any]) -> dict[str, str]:
    return {
        block["tool_use_id"]: json.dumps(block.get("content"))
        for message in body["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    }


def test_a_real_restart_keeps_every_placeholder_the_model_has_seen(tmp_path: Path) -> None:
    up = ScriptedUpstream()
    with rig(str(tmp_path / "s.db"), upstream=up) as r:
        messages: list[Any] = [{"role": "user", "content": "Fix f.py"}]
        for step in range(10):  # the same file read again and again: each read supersedes the one before
            call_id = f"toolu_{step:02d}"
            up.push(Reply(text="", tool_calls=((call_id, "Read", {"file_path": "/r/f.py"}),)))
            _post(r, _claude_body(messages))
            output = BIG.replace("line 0:", f"version {step} line 0:")
            messages = [*messages, _call(call_id, "Read", {"file_path": "/r/f.py"}), _result(call_id, output)]
        _post(r, _claude_body(messages))
        before = _results(r.forwarded("/v1/messages")[-1])
        placeholders = {k for k, v in before.items() if "line 0: " not in v}
        assert placeholders, "earlier reads should be replaced by now"
        # the client clears the content of its latest read (as Claude Code's own clearing does)
        edited = [*messages[:-1], _result("toolu_09", "[Old tool result content cleared]")]
        _post(r, _claude_body(edited))
        after = _results(r.forwarded("/v1/messages")[-1])
        events = _window_events(r)
    assert events["compaction:reset"] == 1, events
    assert {k: after[k] for k in placeholders} == {k: before[k] for k in placeholders}


def test_inspect_shows_a_proxied_session_as_it_was_forwarded(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from contextwarden.cli.inspect import command as inspect_command

    db = str(tmp_path / "s.db")
    up = ScriptedUpstream()
    with rig(db, upstream=up) as r:
        messages = _claude_session(r, up, 12, echo=lambda n, a: a, system_messages=False)
        up.push(Reply(text="", tool_calls=(("toolu_x", "Bash", {"command": "ls"}),)))
        _post(r, _claude_body(messages))
        edited = [*messages[:-1], _result("toolu_11", "[Old tool result content cleared]")]  # the client's rewind
        up.push(Reply(text="done"))
        _post(r, _claude_body(edited))
        assert _window_events(r)["compaction:reset"] == 1
        forwarded = r.forwarded("/v1/messages")
        (session,) = r.proxy.pipeline.store.list_sessions()
    assert session.metadata.get("client_session") == "cc-1"
    result = CliRunner().invoke(inspect_command, [session.id, "--store", db, "--turn", str(len(forwarded)), "--json"])
    assert result.exit_code == 0, result.output
    shown = json.loads(result.output)
    assert shown["turns"] == len(forwarded) + 1  # every forwarded request, then the one it would build now
    assert {item["section"] for item in shown["items"]} <= {"conversation", "tool_output", "instructions"}
    sent = _results(forwarded[-1])
    tool_items = [i for i in shown["items"] if i["role"] == "tool"]
    assert len(tool_items) == len(sent)
    assert not any("_dup" in json.dumps(i) for i in shown["items"])


def test_null_members_a_client_writes_into_an_echoed_turn_change_nothing() -> None:
    from contextwarden.mirror import content_digest
    from contextwarden.wire import get_codec

    def turn(text_block: dict[str, Any]) -> Any:
        body = _claude_body([{"role": "user", "content": "hi"}, {"role": "assistant", "content": [text_block]}])
        return get_codec("anthropic").parse_request(body).events[-1]

    plain = turn({"type": "text", "text": "done"})
    echoed = turn({"type": "text", "text": "done", "citations": None})
    assert content_digest(plain) == content_digest(echoed)


def test_a_clients_own_compaction_is_recorded_as_its_cause(tmp_path: Path) -> None:
    up = ScriptedUpstream()
    with rig(str(tmp_path / "s.db"), upstream=up) as r, httpx.Client(timeout=60) as client:
        key = {"authorization": "Bearer sk-1", "session_id": "codex-2"}
        items: list[Any] = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]}]
        for step in range(3):
            up.push(Reply(text="", tool_calls=((f"call_{step}", "shell", {"cmd": "ls"}),)))
            client.post(r.url + "/v1/responses", json=_responses_body(items), headers=key)
            call = {"type": "function_call", "call_id": f"call_{step}", "name": "shell", "arguments": '{"cmd":"ls"}'}
            items = [*items, call, {"type": "function_call_output", "call_id": f"call_{step}", "output": BIG}]
        # Codex compacted remotely: its history is now the provider's compaction item and the user's words
        compacted = [{"type": "compaction", "encrypted_content": "gAAAA-opaque=="}, items[0]]
        answer = client.post(r.url + "/v1/responses", json=_responses_body(compacted), headers=key)
        assert answer.status_code == 200
        store = r.proxy.pipeline.store
        (session,) = store.list_sessions()
        (opening,) = [e for e in store.iter_events(session.id) if isinstance(e, Compaction)]
    assert opening.details.get("client_compaction") is True and "compacted it" in opening.summary
