"""The strict scripted upstream refuses, with a 400 in the provider's shape, what the real API refuses."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from contextwarden.proxy._validate import encrypted, signature
from contextwarden.proxy.agentgemini import RECALL, RECALL_LINES, GeminiTaskAgent
from contextwarden.proxy.agentscript import TASK_MARKER, ScriptedAgent
from contextwarden.proxy.agenttask import claude_code_script, codex_script
from contextwarden.proxy.scripted import ScriptedUpstream
from contextwarden.proxy.serve import BackgroundServer


@pytest.fixture
def strict() -> Iterator[tuple[ScriptedUpstream, httpx.Client]]:
    upstream = ScriptedUpstream(strict=True)
    with BackgroundServer(upstream.app) as server, httpx.Client(base_url=server.url, timeout=30) as client:
        yield upstream, client


def _anthropic(messages: list[Any], **extra: Any) -> dict[str, Any]:
    return {"model": "claude-sonnet-4-5", "max_tokens": 100, "messages": messages, **extra}


def _think(text: str) -> dict[str, Any]:
    return {"type": "thinking", "thinking": text, "signature": signature(text)}


CALL = {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}
RESULT = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.py"}
ON = {"thinking": {"type": "enabled", "budget_tokens": 1024}}

ANTHROPIC_REFUSED = {
    "orphan tool_result": (_anthropic([{"role": "user", "content": [RESULT]}]), "unexpected `tool_use_id`"),
    "tool_use without result": (
        _anthropic(
            [
                {"role": "user", "content": "go"},
                {"role": "assistant", "content": [CALL]},
                {"role": "user", "content": "next"},
            ]
        ),
        "without `tool_result`",
    ),
    "two user turns": (
        _anthropic(
            [
                {"role": "user", "content": "a"},
                {"role": "assistant", "content": "b"},
                {"role": "assistant", "content": "c"},
            ]
        ),
        "alternate",
    ),
    "assistant first": (
        _anthropic([{"role": "assistant", "content": "a"}, {"role": "user", "content": "b"}]),
        "alternate",
    ),
    "empty text": (_anthropic([{"role": "user", "content": [{"type": "text", "text": ""}]}]), "non-empty"),
    "five breakpoints": (
        _anthropic(
            [
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": f"t{i}", "cache_control": {"type": "ephemeral"}} for i in range(5)
                    ],
                }
            ]
        ),
        "A maximum of 4 blocks with cache_control",
    ),
    "thinking after text": (
        _anthropic(
            [
                {"role": "user", "content": "go"},
                {"role": "assistant", "content": [{"type": "text", "text": "x"}, _think("t"), CALL]},
                {"role": "user", "content": [RESULT]},
            ],
            **ON,
        ),
        "cannot follow text",
    ),
    "tool call without thinking": (
        _anthropic(
            [
                {"role": "user", "content": "go"},
                {"role": "assistant", "content": [CALL]},
                {"role": "user", "content": [RESULT]},
            ],
            **ON,
        ),
        "Expected `thinking`",
    ),
    "edited thinking": (
        _anthropic(
            [
                {"role": "user", "content": "go"},
                {"role": "assistant", "content": [{**_think("plan"), "thinking": "plan, edited"}, CALL]},
                {"role": "user", "content": [RESULT]},
            ],
            **ON,
        ),
        "Invalid `signature`",
    ),
}


@pytest.mark.parametrize("case", list(ANTHROPIC_REFUSED))
def test_anthropic_refusals(strict: tuple[ScriptedUpstream, httpx.Client], case: str) -> None:
    upstream, client = strict
    body, words = ANTHROPIC_REFUSED[case]
    answer = client.post("/v1/messages", json=body)
    assert answer.status_code == 400
    error = answer.json()
    assert error["type"] == "error" and error["error"]["type"] == "invalid_request_error"
    assert words in error["error"]["message"]
    assert len(upstream.refusals) == 1


def test_anthropic_accepts_a_valid_conversation_with_system_messages_and_thinking(
    strict: tuple[ScriptedUpstream, httpx.Client],
) -> None:
    upstream, client = strict
    messages = [
        {"role": "user", "content": "go"},
        {"role": "system", "content": "a reminder"},
        {"role": "assistant", "content": [_think("plan"), CALL]},
        {"role": "user", "content": [RESULT]},
    ]
    assert client.post("/v1/messages", json=_anthropic(messages, **ON)).status_code == 200
    assert upstream.refusals == []


def _responses(items: list[Any]) -> dict[str, Any]:
    return {"model": "gpt-5", "input": items}


FC = {"type": "function_call", "call_id": "call_1", "name": "exec_command", "arguments": "{}"}
FCO = {"type": "function_call_output", "call_id": "call_1", "output": "ok"}
USER = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]}
SEARCH = {"type": "tool_search_call", "call_id": "call_s", "execution": "client", "arguments": {"query": "recall"}}
FOUND = {"type": "tool_search_output", "call_id": "call_s", "execution": "client", "tools": []}

RESPONSES_REFUSED = {
    "orphan output": ([USER, FCO], "No tool call found"),
    "call without output": ([USER, FC], "No tool output found"),
    "custom output for a function call": ([USER, FC, {**FCO, "type": "custom_tool_call_output"}], "No tool call found"),
    "tool search without its output": ([USER, SEARCH], "No tool output found"),
    "search output without its search": ([USER, FOUND], "No tool call found"),
    "foreign encrypted reasoning": (
        [USER, {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAAAforged"}],
        "could not be verified",
    ),
}


@pytest.mark.parametrize("case", list(RESPONSES_REFUSED))
def test_responses_refusals(strict: tuple[ScriptedUpstream, httpx.Client], case: str) -> None:
    _, client = strict
    items, words = RESPONSES_REFUSED[case]
    answer = client.post("/v1/responses", json=_responses(items))
    assert answer.status_code == 400
    assert answer.json()["error"]["type"] == "invalid_request_error"
    assert words in answer.json()["error"]["message"]


def test_responses_accepts_issued_reasoning(strict: tuple[ScriptedUpstream, httpx.Client]) -> None:
    _, client = strict
    reasoning = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": encrypted("plan")}
    assert client.post("/v1/responses", json=_responses([USER, reasoning, FC, FCO])).status_code == 200
    # a client-executed tool search is answered by the client; one the API ran itself has no output to match
    assert client.post("/v1/responses", json=_responses([USER, SEARCH, FOUND, FC, FCO])).status_code == 200
    hosted = {**SEARCH, "execution": "server"}
    assert client.post("/v1/responses", json=_responses([USER, hosted, FC, FCO])).status_code == 200


def test_lenient_upstream_keeps_answering_what_it_always_did() -> None:
    upstream = ScriptedUpstream()
    with BackgroundServer(upstream.app) as server:
        answer = httpx.post(server.url + "/v1/messages", json=_anthropic([{"role": "user", "content": [RESULT]}]))
    assert answer.status_code == 200


def test_the_agent_plays_the_step_after_the_newest_call_and_checks_its_result(tmp_path: Any) -> None:
    script = codex_script(tmp_path)
    agent = ScriptedAgent(script)
    prompt = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": TASK_MARKER}]}
    first = agent("openai_responses", {"input": [prompt]})
    call_id, name, _ = first.tool_calls[0]
    assert (call_id, name) == ("call_cwconf000", "exec_command")
    output = {"type": "function_call_output", "call_id": call_id, "output": "nothing useful"}
    call = {"type": "function_call", "call_id": call_id, "name": name, "arguments": "{}"}
    second = agent("openai_responses", {"input": [prompt, call, output]})
    assert second.tool_calls[0][0] == "call_cwconf001"
    assert agent.failures and "step 0" in agent.failures[0]  # the result lacked what the step expects
    assert agent("openai_responses", {"input": [USER]}).tool_calls == ()  # not the task: a side call
    assert agent.side_calls == 1
    assert claude_code_script(tmp_path).steps[1].tool == "Read"


def test_the_agent_loads_a_deferred_namespace_with_a_tool_search_before_it_recalls(tmp_path: Any) -> None:
    """Codex's protocol: ``tool_search`` loads the namespace, then ``recall`` is called in it."""
    agent = ScriptedAgent(dataclasses.replace(codex_script(tmp_path), recall=True))
    prompt = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": TASK_MARKER}]}
    rid = "0123456789abcdef" * 2
    placeholder = (
        f'[output of exec_command masked: 9 tokens, 1 line. Get it back with mcp__contextwarden.recall(id="{rid}")]'
    )
    items: list[Any] = [
        prompt,
        {"type": "function_call", "call_id": "call_cwconf000", "name": "exec_command", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_cwconf000", "output": placeholder},
    ]
    search = agent("openai_responses", {"input": items}).tool_calls[0]
    assert search[1] == "tool_search" and agent.searches == [search[0]]
    namespace = {"type": "namespace", "name": "mcp__contextwarden", "tools": []}
    items += [
        {"type": "tool_search_call", "call_id": search[0], "execution": "client", "arguments": search[2]},
        {"type": "tool_search_output", "call_id": search[0], "execution": "client", "tools": [namespace]},
    ]
    recall = agent("openai_responses", {"input": items}).tool_calls[0]
    assert recall[1:] == ("mcp__contextwarden.recall", {"id": rid}) and agent.recall_of == "call_cwconf000"
    answer = [
        {"type": "input_text", "text": "Wall time: 0.2 seconds\nOutput:"},
        {"type": "input_text", "text": "a\nb\n"},
    ]
    items += [
        {"type": "function_call", "call_id": recall[0], "name": "recall", "namespace": "mcp__contextwarden"},
        {"type": "function_call_output", "call_id": recall[0], "output": answer},
    ]
    after = agent("openai_responses", {"input": items}).tool_calls[0]
    assert after[0] == "call_cwconf001" and agent.recalled == {recall[0]: "a\nb\n"}  # the task goes on


def test_a_tool_search_that_loads_nothing_is_a_failure_not_a_loop(tmp_path: Any) -> None:
    agent = ScriptedAgent(dataclasses.replace(codex_script(tmp_path), recall=True))
    prompt = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": TASK_MARKER}]}
    placeholder = f'Get it back with mcp__contextwarden.recall(id="{"a" * 32}")]'
    items: list[Any] = [
        prompt,
        {"type": "function_call", "call_id": "call_cwconf000", "name": "exec_command", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_cwconf000", "output": placeholder},
    ]
    search = agent("openai_responses", {"input": items}).tool_calls[0]
    items += [
        {"type": "tool_search_call", "call_id": search[0], "execution": "client", "arguments": search[2]},
        {"type": "tool_search_output", "call_id": search[0], "execution": "client", "tools": []},
    ]
    assert agent("openai_responses", {"input": items}).tool_calls[0][0] == "call_cwconf001"
    assert agent.recall_calls == [] and any("did not load mcp__contextwarden" in f for f in agent.failures)
    assert agent("openai_responses", {"input": items}).tool_calls[0][0] == "call_cwconf001"
    assert len(agent.searches) == 1


def test_the_gemini_agent_recalls_a_placeholder_by_line_ranges_under_the_clis_cut() -> None:
    agent = GeminiTaskAgent(["ls  # cw-step-00", "pwd  # cw-step-01"], recall=True)
    rid = "b" * 32

    def response(name: str, output: str, ident: str) -> dict[str, Any]:
        return {"functionResponse": {"id": ident, "name": name, "response": {"output": output}}}

    shown = f'[output of run_shell_command(command="ls") masked. Get it back with {RECALL}(id="{rid}")]'
    contents: list[Any] = [
        {"role": "user", "parts": [{"text": "go"}]},
        {
            "role": "model",
            "parts": [{"functionCall": {"name": "run_shell_command", "args": {"command": "ls  # cw-step-00"}}}],
        },
        {"role": "user", "parts": [response("run_shell_command", shown, "s0")]},
    ]
    first = agent({"contents": contents}).tool_calls[0]
    assert first[1:] == (RECALL, {"id": rid, "start_line": 1, "end_line": RECALL_LINES}) and agent.recall_of == "s0"
    full = "".join(f"line {i}\n" for i in range(1, RECALL_LINES + 11))
    piece_one = "".join(f"line {i}\n" for i in range(1, RECALL_LINES + 1))
    contents += [
        {"role": "model", "parts": [{"functionCall": {"name": RECALL, "args": first[2]}}]},
        {"role": "user", "parts": [response(RECALL, f"<untrusted_context>\n{piece_one}\n</untrusted_context>", "r0")]},
    ]
    second = agent({"contents": contents}).tool_calls[0]
    assert second[2] == {"id": rid, "start_line": RECALL_LINES + 1, "end_line": 2 * RECALL_LINES}
    rest = full[len(piece_one) :]
    contents += [
        {"role": "model", "parts": [{"functionCall": {"name": RECALL, "args": second[2]}}]},
        {"role": "user", "parts": [response(RECALL, f"<untrusted_context>\n{rest}\n</untrusted_context>", "r1")]},
    ]
    assert agent({"contents": contents}).tool_calls[0][2]["command"] == "pwd  # cw-step-01"  # the task goes on
    assert agent.recalled_as_sent() == full
