"""Provider HTTP clients against a real scripted HTTP server on 127.0.0.1, plus rendering details."""

from __future__ import annotations

import email.utils
import json
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from contextwarden.context import Message, ModelContext, ToolDefinition
from contextwarden.errors import (
    Cancelled,
    MalformedResponse,
    PromptTooLongError,
    ProviderError,
    ProviderTimeout,
    RateLimitError,
    ServerError,
    UsageError,
)
from contextwarden.log.events import AssistantMessage, ThinkingBlock, ToolCall, UsageReport
from contextwarden.providers import (
    AnthropicProvider,
    CallOptions,
    ModelReply,
    OpenAICompatProvider,
    Provider,
    RetryPolicy,
    backoff_delay,
    parse_retry_after,
)
from contextwarden.testing import ScriptedProvider, make_response

# --------------------------------------------------------------------------- the scripted server


@dataclass
class Reply:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> dict[str, object]:
        data = json.loads(self.body)
        assert isinstance(data, dict)
        return data


class ScriptedServer:
    """A real HTTP server that answers POSTs from a queue of replies and records every request."""

    def __init__(self) -> None:
        self.replies: deque[Reply] = deque()
        self.received: list[Received] = []
        self.release = threading.Event()  # ends any delayed reply at teardown
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length)
                outer.received.append(Received(self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                reply = outer.replies.popleft() if outer.replies else Reply(599, b"no reply scripted")
                if reply.delay:
                    outer.release.wait(reply.delay)
                try:
                    self.send_response(reply.status)
                    for key, value in reply.headers.items():
                        self.send_header(key, value)
                    self.send_header("Content-Length", str(len(reply.body)))
                    self.end_headers()
                    self.wfile.write(reply.body)
                except OSError:
                    pass  # the client gave up (timeout, cancellation): nothing to answer

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def add(self, *replies: Reply) -> None:
        self.replies.extend(replies)


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    srv = ScriptedServer()
    srv.thread.start()
    yield srv
    srv.release.set()
    srv.httpd.shutdown()
    srv.httpd.server_close()


def as_json(data: object, status: int = 200, headers: dict[str, str] | None = None) -> Reply:
    return Reply(status, json.dumps(data).encode(), {"Content-Type": "application/json", **(headers or {})})


def openai_ok(text: str = "hello", **extra: object) -> Reply:
    return as_json(
        {
            "id": "chatcmpl-1",
            "model": "served-model",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {
                "prompt_tokens": 120,
                "completion_tokens": 7,
                "prompt_tokens_details": {"cached_tokens": 100},
            },
            **extra,
        }
    )


REQUEST = ModelContext(model="test-model", system="You are terse.", messages=(Message(role="user", text="Say hello"),))


def counts(usage: UsageReport) -> tuple[int, int, int, int]:
    """Input, output, cache-read and cache-write tokens."""
    return (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens, usage.cache_write_tokens)


def openai(server: ScriptedServer, **kwargs: object) -> OpenAICompatProvider:
    settings: dict[str, object] = {"timeout": 5.0, "max_retries": 3, "backoff_base": 0.01}
    settings.update(kwargs)
    return OpenAICompatProvider(f"{server.url}/v1", "sk-test", **settings)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- OpenAI-compatible, real HTTP


def test_openai_success_parses_text_usage_and_sends_the_request(server: ScriptedServer) -> None:
    server.add(openai_ok("hello there"))
    with openai(server) as provider:
        assert isinstance(provider, Provider)
        response = provider.complete(REQUEST, options=CallOptions(max_tokens=32))
    assert response.text == "hello there"
    assert response.stop_reason == "end_turn"
    assert response.model == "served-model"
    assert counts(response.usage) == (120, 7, 100, 0)
    assert response.usage.response_event_id == response.message.id and response.usage.model == "served-model"
    assert response.tool_calls == ()
    [sent] = server.received
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == "Bearer sk-test"
    body = sent.json()
    assert body["model"] == "test-model"
    assert body["max_tokens"] == 32
    assert body["messages"] == [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Say hello"},
    ]


def test_rate_limit_honours_retry_after_then_succeeds(server: ScriptedServer) -> None:
    server.add(as_json({"error": {"message": "Rate limit reached"}}, 429, {"Retry-After": "0.3"}), openai_ok())
    started = time.monotonic()
    with openai(server, backoff_base=0.001) as provider:
        response = provider.complete(REQUEST)
    elapsed = time.monotonic() - started
    assert response.text == "hello"
    assert len(server.received) == 2
    # the computed backoff would be about a millisecond; the server asked for 0.3 s
    assert elapsed >= 0.3


def test_server_errors_are_retried_with_growing_backoff(server: ScriptedServer) -> None:
    server.add(Reply(500, b"boom"), Reply(502, b"bad gateway"), Reply(503, b"unavailable"), openai_ok("finally"))
    started = time.monotonic()
    with openai(server, backoff_base=0.04) as provider:
        response = provider.complete(REQUEST)
    elapsed = time.monotonic() - started
    assert response.text == "finally"
    assert len(server.received) == 4
    # equal jitter waits at least half of 0.04, 0.08 and 0.16 seconds
    assert elapsed >= (0.04 + 0.08 + 0.16) / 2


def test_server_errors_give_up_after_max_retries(server: ScriptedServer) -> None:
    server.add(*[Reply(500, b'{"error": {"message": "internal failure"}}') for _ in range(5)])
    with openai(server, max_retries=2) as provider, pytest.raises(ServerError) as info:
        provider.complete(REQUEST)
    assert len(server.received) == 3
    assert info.value.status == 500
    assert "internal failure" in str(info.value)
    assert "gave up after 3 attempts" in str(info.value)


def test_rate_limit_exhausted_raises_rate_limit_error(server: ScriptedServer) -> None:
    server.add(*[as_json({"error": {"message": "slow down"}}, 429, {"retry-after-ms": "1"}) for _ in range(3)])
    with openai(server, max_retries=2) as provider, pytest.raises(RateLimitError):
        provider.complete(REQUEST)
    assert len(server.received) == 3


def test_call_options_override_retries_and_timeout(server: ScriptedServer) -> None:
    server.add(Reply(500, b"boom"), openai_ok())
    with openai(server) as provider, pytest.raises(ServerError):
        provider.complete(REQUEST, options=CallOptions(max_retries=0))
    assert len(server.received) == 1
    server.replies.clear()
    server.add(Reply(200, b"{}", delay=2.0))
    with openai(server, timeout=30.0) as provider, pytest.raises(ProviderTimeout):
        provider.complete(REQUEST, options=CallOptions(timeout=0.2))


def test_hang_past_the_timeout_raises_provider_timeout_without_retry(server: ScriptedServer) -> None:
    server.add(Reply(200, b"{}", delay=3.0), openai_ok())
    started = time.monotonic()
    with openai(server, timeout=0.25) as provider, pytest.raises(ProviderTimeout) as info:
        provider.complete(REQUEST)
    assert time.monotonic() - started < 2.5
    assert len(server.received) == 1
    assert "within 0.25s" in str(info.value)


def test_empty_200_body_is_malformed_and_not_retried(server: ScriptedServer) -> None:
    server.add(Reply(200, b""), openai_ok())
    with openai(server) as provider, pytest.raises(MalformedResponse) as info:
        provider.complete(REQUEST)
    assert "empty body" in str(info.value)
    assert info.value.status == 200
    assert len(server.received) == 1


def test_malformed_json_is_malformed_response(server: ScriptedServer) -> None:
    server.add(Reply(200, b'{"choices": [ {"message": '))
    with openai(server) as provider, pytest.raises(MalformedResponse) as info:
        provider.complete(REQUEST)
    assert "not JSON" in str(info.value)


def test_json_without_choices_is_malformed_response(server: ScriptedServer) -> None:
    server.add(as_json({"id": "x", "choices": []}), as_json([1, 2]), as_json({"choices": [{"index": 0}]}))
    with openai(server) as provider:
        for expected in ("no choices", "instead of an object", "no message"):
            with pytest.raises(MalformedResponse) as info:
                provider.complete(REQUEST)
            assert expected in str(info.value)


def test_overflow_400_is_classified_and_never_retried(server: ScriptedServer) -> None:
    overflow = {
        "error": {
            "message": "This model's maximum context length is 2048 tokens. However, you requested "
            "5000 tokens (4968 in the messages, 32 in the completion). Please reduce the length of "
            "the messages or completion.",
            "type": "invalid_request_error",
            "code": "context_length_exceeded",
        }
    }
    server.add(as_json(overflow, 400), openai_ok())
    with openai(server) as provider, pytest.raises(PromptTooLongError) as info:
        provider.complete(REQUEST)
    assert len(server.received) == 1
    assert info.value.status == 400
    assert "maximum context length is 2048" in str(info.value)
    assert "compact" in str(info.value)
    assert "context_length_exceeded" in info.value.body


def test_llama_cpp_overflow_sent_as_500_is_not_retried(server: ScriptedServer) -> None:
    body = {
        "error": {
            "code": 500,
            "message": "the request exceeds the available context size. try increasing the context size "
            "or enable context shift",
            "type": "exceed_context_size_error",
            "n_prompt_tokens": 1407,
            "n_ctx": 256,
        }
    }
    server.add(as_json(body, 500), openai_ok())
    with openai(server) as provider, pytest.raises(PromptTooLongError):
        provider.complete(REQUEST)
    assert len(server.received) == 1


def test_other_4xx_is_a_plain_provider_error_not_retried(server: ScriptedServer) -> None:
    server.add(as_json({"error": {"message": "Incorrect API key provided"}}, 401), openai_ok())
    with openai(server) as provider, pytest.raises(ProviderError) as info:
        provider.complete(REQUEST)
    assert type(info.value) is ProviderError
    assert "HTTP 401: Incorrect API key provided" in str(info.value)
    assert len(server.received) == 1


def test_error_object_inside_a_200_is_classified(server: ScriptedServer) -> None:
    server.add(as_json({"error": {"code": 400, "message": "prompt is too long: 300000 tokens > 200000 maximum"}}))
    with openai(server) as provider, pytest.raises(PromptTooLongError):
        provider.complete(REQUEST)


def test_cancellation_during_a_backoff_wait(server: ScriptedServer) -> None:
    server.add(as_json({"error": {"message": "busy"}}, 429, {"Retry-After": "30"}), openai_ok())
    cancel = threading.Event()
    with openai(server) as provider, pytest.raises(Cancelled):
        threading.Timer(0.15, cancel.set).start()
        started = time.monotonic()
        provider.complete(REQUEST, options=CallOptions(cancel=cancel))
    assert time.monotonic() - started < 5
    assert len(server.received) == 1


def test_cancellation_during_a_request_in_flight(server: ScriptedServer) -> None:
    server.add(Reply(200, b"{}", delay=10.0))
    cancel = threading.Event()

    def cancel_once_received() -> None:
        while not server.received:
            time.sleep(0.005)
        cancel.set()

    with openai(server, timeout=30.0) as provider, pytest.raises(Cancelled):
        threading.Thread(target=cancel_once_received, daemon=True).start()
        started = time.monotonic()
        provider.complete(REQUEST, options=CallOptions(cancel=cancel))
    assert len(server.received) == 1
    assert time.monotonic() - started < 5


def test_cancellation_before_the_call_sends_nothing(server: ScriptedServer) -> None:
    cancel = threading.Event()
    cancel.set()
    with openai(server) as provider, pytest.raises(Cancelled):
        provider.complete(REQUEST, options=CallOptions(cancel=cancel))
    assert server.received == []


def test_connection_refused_is_retried_then_reported() -> None:
    srv = ScriptedServer()  # bound but never serving: take its port, then close it
    url = srv.url
    srv.httpd.server_close()
    provider = OpenAICompatProvider(f"{url}/v1", timeout=2.0, max_retries=1, backoff_base=0.01)
    with provider, pytest.raises(ProviderError) as info:
        provider.complete(REQUEST)
    assert type(info.value) is ProviderError
    assert "could not reach" in str(info.value)
    assert "gave up after 2 attempts" in str(info.value)


def test_tool_calls_and_reasoning_are_parsed(server: ScriptedServer) -> None:
    message = {
        "role": "assistant",
        "content": None,
        "reasoning_content": "need the file first",
        "tool_calls": [
            {
                "id": "call_a",
                "type": "function",
                "function": {"name": "read", "arguments": '{"path": "a.py"}'},
            },
            {"id": "call_b", "type": "function", "function": {"name": "run", "arguments": "{not json"}},
        ],
    }
    server.add(as_json({"model": "m", "choices": [{"message": message, "finish_reason": "tool_calls"}]}))
    with openai(server) as provider:
        response = provider.complete(REQUEST)
    assert response.stop_reason == "tool_use"
    assert response.text == ""
    assert response.tool_calls == (
        ToolCall(id="call_a", name="read", arguments={"path": "a.py"}),
        ToolCall(id="call_b", name="run", arguments={"_raw": "{not json"}),
    )
    assert response.thinking == (ThinkingBlock(text="need the file first"),)
    assert counts(response.usage) == (0, 0, 0, 0)


def test_openai_request_rendering_of_tools_and_tool_messages(server: ScriptedServer) -> None:
    server.add(openai_ok())
    request = ModelContext(
        model="m",
        system="",
        messages=(
            Message(role="user", text="fix it"),
            Message(
                role="assistant",
                tool_calls=(
                    ToolCall(id="c1", name="read", arguments={"path": "a.py"}),
                    ToolCall(id="c2", name="run", arguments={"_raw": "{broken"}),
                ),
            ),
            Message(role="tool", text="print(1)", tool_call_id="c1", tool_name="read"),
            Message(role="tool", text="error", tool_call_id="c2", tool_name="run"),
        ),
        tools=(
            ToolDefinition(name="read", description="Read a file", parameters={"type": "object"}),
            ToolDefinition(name="run", description="", parameters={"type": "object"}),
        ),
    )
    options = CallOptions(max_tokens=100, temperature=0.2, thinking="low", stop=("END",))
    with openai(server, max_tokens_field="max_completion_tokens") as provider:
        provider.complete(request, options=options)
    body = server.received[0].json()
    assert body["max_completion_tokens"] == 100 and "max_tokens" not in body
    assert body["temperature"] == 0.2
    assert body["reasoning_effort"] == "low"
    assert body["stop"] == ["END"]
    assert body["messages"] == [
        {"role": "user", "content": "fix it"},
        {
            "role": "assistant",
            "content": "",  # never null: llama.cpp rejects it
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "read", "arguments": '{"path":"a.py"}'},  # the codec's compact JSON
                },
                {"id": "c2", "type": "function", "function": {"name": "run", "arguments": "{broken"}},
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "print(1)"},
        {"role": "tool", "tool_call_id": "c2", "content": "error"},
    ]
    assert body["tools"] == [
        {
            "type": "function",
            "function": {"name": "read", "description": "Read a file", "parameters": {"type": "object"}},
        },
        {"type": "function", "function": {"name": "run", "parameters": {"type": "object"}}},
    ]


# --------------------------------------------------------------------------- Anthropic, real HTTP


def anthropic(server: ScriptedServer, **kwargs: object) -> AnthropicProvider:
    settings: dict[str, object] = {"timeout": 5.0, "max_retries": 2, "backoff_base": 0.01}
    settings.update(kwargs)
    return AnthropicProvider("sk-ant-test", server.url, **settings)  # type: ignore[arg-type]


def test_anthropic_success_with_tools_thinking_and_cache_usage(server: ScriptedServer) -> None:
    server.add(
        as_json(
            {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": "claude-test",
                "content": [
                    {"type": "thinking", "thinking": "plan", "signature": "sig1"},
                    {"type": "text", "text": "Reading it."},
                    {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "a.py"}},
                ],
                "stop_reason": "tool_use",
                "usage": {
                    "input_tokens": 10,
                    "cache_creation_input_tokens": 200,
                    "cache_read_input_tokens": 3000,
                    "output_tokens": 40,
                },
            }
        )
    )
    with anthropic(server) as provider:
        response = provider.complete(REQUEST)
    assert response.text == "Reading it."
    assert response.stop_reason == "tool_use"
    assert response.tool_calls == (ToolCall(id="toolu_1", name="read", arguments={"path": "a.py"}),)
    assert response.thinking == (ThinkingBlock(text="plan", signature="sig1"),)
    assert counts(response.usage) == (3210, 40, 3000, 200)
    assert response.model == "claude-test"
    [sent] = server.received
    assert sent.path == "/v1/messages"
    assert sent.headers["x-api-key"] == "sk-ant-test"
    assert sent.headers["anthropic-version"] == "2023-06-01"
    body = sent.json()
    # the Anthropic codec renders the system prompt as blocks, the last one a cache breakpoint
    assert body["system"] == [{"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}}]
    assert body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "Say hello"}]}]


def test_anthropic_rendering_merges_tool_results_into_one_user_turn(server: ScriptedServer) -> None:
    server.add(as_json({"content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn"}))
    request = ModelContext(
        model="claude-test",
        system="rules",
        messages=(
            Message(role="user", text="go"),
            Message(
                role="assistant",
                tool_calls=(ToolCall(id="t1", name="a"), ToolCall(id="t2", name="b", arguments={"x": 1})),
                thinking=(ThinkingBlock(text="why", signature="s"), ThinkingBlock(text="unsigned")),
            ),
            Message(role="tool", text="A", tool_call_id="t1"),
            Message(role="tool", text="B", tool_call_id="t2"),
            Message(role="user", text="and now?"),
        ),
        tools=(ToolDefinition(name="a", description="", parameters={"type": "object"}),),
    )
    with anthropic(server) as provider:
        response = provider.complete(request, options=CallOptions(max_tokens=8000, thinking="low", stop=("STOP",)))
    assert response.model == "claude-test"  # falls back to the requested model
    assert counts(response.usage) == (0, 0, 0, 0)
    body = server.received[0].json()
    assert body["system"] == [{"type": "text", "text": "rules", "cache_control": {"type": "ephemeral"}}]
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 4096}
    assert body["stop_sequences"] == ["STOP"]
    assert body["tools"] == [{"name": "a", "input_schema": {"type": "object"}}]  # the system breakpoint covers it
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "go"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "why", "signature": "s"},
                {"type": "tool_use", "id": "t1", "name": "a", "input": {}},
                {"type": "tool_use", "id": "t2", "name": "b", "input": {"x": 1}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "A"},
                {"type": "tool_result", "tool_use_id": "t2", "content": "B"},
                {"type": "text", "text": "and now?"},
            ],
        },
    ]


def test_anthropic_thinking_is_dropped_when_max_tokens_leaves_no_budget(server: ScriptedServer) -> None:
    server.add(as_json({"content": [], "stop_reason": "max_tokens"}))
    request = ModelContext(model="c", system="", messages=(Message(role="user", text="hi"),))
    with anthropic(server) as provider:
        assert (
            provider.complete(request, options=CallOptions(max_tokens=512, thinking="high")).stop_reason == "max_tokens"
        )
    assert "thinking" not in server.received[0].json()


def test_anthropic_overflow_and_overloaded(server: ScriptedServer) -> None:
    overflow = {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": "prompt is too long: 209353 tokens > 199999 maximum",
        },
    }
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    server.add(as_json(overflow, 400))
    with anthropic(server) as provider, pytest.raises(PromptTooLongError) as info:
        provider.complete(REQUEST)
    assert "209353 tokens > 199999 maximum" in str(info.value)
    server.add(*[as_json(overloaded, 529) for _ in range(3)])
    with anthropic(server) as provider, pytest.raises(ServerError):
        provider.complete(REQUEST)
    assert len(server.received) == 1 + 3


def test_anthropic_malformed_bodies(server: ScriptedServer) -> None:
    server.add(Reply(200, b""), as_json({"id": "x"}))
    with anthropic(server) as provider:
        with pytest.raises(MalformedResponse, match="empty body"):
            provider.complete(REQUEST)
        with pytest.raises(MalformedResponse, match="no content list"):
            provider.complete(REQUEST)


# --------------------------------------------------------------------------- backoff arithmetic


def test_backoff_delay_bounds_and_cap() -> None:
    policy = RetryPolicy(backoff_base=0.5, backoff_max=4.0)
    for attempt, ceiling in [(0, 0.5), (1, 1.0), (2, 2.0), (3, 4.0), (10, 4.0)]:
        assert backoff_delay(attempt, policy, rng=lambda: 0.0) == pytest.approx(ceiling / 2)
        assert backoff_delay(attempt, policy, rng=lambda: 1.0) == pytest.approx(ceiling)
        for _ in range(50):
            assert ceiling / 2 <= backoff_delay(attempt, policy) <= ceiling


def test_backoff_uses_retry_after_only_within_its_limit() -> None:
    policy = RetryPolicy(backoff_base=0.5, max_retry_after=60.0)
    assert backoff_delay(0, policy, retry_after=7.0) == 7.0
    assert backoff_delay(0, policy, retry_after=0.0) == 0.0
    assert backoff_delay(0, policy, retry_after=3600.0, rng=lambda: 1.0) == 0.5


def test_parse_retry_after_forms() -> None:
    assert parse_retry_after({"Retry-After": "2"}) == 2.0
    assert parse_retry_after({"retry-after": "0.25"}) == 0.25
    assert parse_retry_after({"retry-after-ms": "1500", "Retry-After": "9"}) == 1.5
    now = 1_700_000_000.0
    date = email.utils.formatdate(now + 30, usegmt=True)
    assert parse_retry_after({"Retry-After": date}, now=now) == pytest.approx(30.0)
    assert parse_retry_after({"Retry-After": "soon"}) is None
    assert parse_retry_after({}) is None
    assert parse_retry_after({"Retry-After": "-5"}) == 0.0


# --------------------------------------------------------------------------- MockTransport extras


def test_mock_transport_sees_the_same_payload() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"choices": [{"message": {"content": "ok"}, "finish_reason": "length"}]})

    with OpenAICompatProvider("http://model.test/v1", transport=httpx.MockTransport(handler)) as provider:
        response = provider.complete(REQUEST)
    assert response.text == "ok"
    assert response.stop_reason == "max_tokens"
    assert response.model == "test-model"
    assert str(seen[0].url) == "http://model.test/v1/chat/completions"
    assert "authorization" not in seen[0].headers


def test_mock_transport_unknown_finish_reason_passes_through() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        content = [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]
        return httpx.Response(
            200,
            json={
                "choices": [{"message": {"content": content}, "finish_reason": "content_filter"}],
                "usage": {"prompt_tokens": 5, "completion_tokens": 1, "prompt_cache_hit_tokens": 3},
            },
        )

    with OpenAICompatProvider("http://model.test/v1", transport=httpx.MockTransport(handler)) as provider:
        response = provider.complete(REQUEST)
    assert response.text == "ab"
    assert response.stop_reason == "content_filter"
    assert response.usage.cache_read_tokens == 3


# --------------------------------------------------------------------------- ScriptedProvider


def test_scripted_provider_replays_and_records() -> None:
    canned = make_response("canned", usage=UsageReport(input_tokens=9, output_tokens=2))
    provider = ScriptedProvider(["first", RateLimitError("slow down"), canned, lambda r: make_response(r.model)])
    assert isinstance(provider, Provider)
    first = provider.complete(REQUEST)
    assert first.text == "first" and first.stop_reason == "end_turn"
    assert first.usage.input_tokens > 0
    with pytest.raises(RateLimitError):
        provider.complete(REQUEST)
    assert provider.complete(REQUEST) is canned
    assert provider.complete(REQUEST).text == "test-model"
    assert len(provider.requests) == 4 and provider.remaining == 0
    with pytest.raises(UsageError, match="no scripted answer left"):
        provider.complete(REQUEST)
    provider.push("again")
    assert provider.complete(REQUEST).text == "again"


def test_scripted_provider_overflow_and_cancel_do_not_consume_the_script() -> None:
    provider = ScriptedProvider(["fits"], context_window=100)
    big = ModelContext(model="m", system="", messages=(Message(role="user", text="x" * 2000),))
    with pytest.raises(PromptTooLongError, match="context window of 100"):
        provider.complete(big, options=CallOptions(max_tokens=10))
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(Cancelled):
        provider.complete(REQUEST, options=CallOptions(cancel=cancel))
    assert provider.remaining == 1
    assert provider.complete(REQUEST).text == "fits"
    assert provider.options[-1] == CallOptions()


def test_make_response_defaults() -> None:
    call = ToolCall(id="1", name="t")
    assert make_response(tool_calls=[call]).stop_reason == "tool_use"
    response = make_response("abc")
    assert isinstance(response, ModelReply)
    assert response.stop_reason == "end_turn"


def test_a_built_context_reaches_the_wire_as_render_makes_it() -> None:
    from contextwarden import AssistantMessage, ContextManager, ToolResult, UserMessage, open_store, render
    from contextwarden.tokens import HeuristicCounter

    manager = ContextManager(open_store("memory:"), counter=HeuristicCounter())
    tools = (ToolDefinition(name="read", description="Read a file.", parameters={"type": "object"}),)
    session = manager.session("s", model="claude-sonnet-4-5", tools=tools, create=True)
    session.append(UserMessage(text="Read the files."))
    for i in range(6):
        call = ToolCall(id=f"c{i}", name="read", arguments={"path": f"f{i}.py"})
        session.append(
            AssistantMessage(tool_calls=(call,)), ToolResult(call_id=call.id, tool_name="read", output="x\n" * 800)
        )
    context = session.build()
    assert context.cache_breakpoints  # a request long enough to cache
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn"})

    with AnthropicProvider("k", transport=httpx.MockTransport(handler)) as provider:
        provider.complete(context, options=CallOptions(max_tokens=1_000))
    # the cache breakpoints of the build become the same cache_control markers render places
    assert json.loads(seen[0].content) == render(context, "anthropic", max_tokens=1_000)


def test_scripted_provider_answers_an_assistant_message_as_it_is() -> None:
    message = AssistantMessage(text="calling", tool_calls=(ToolCall(id="c1", name="read"),), model="m1")
    provider = ScriptedProvider([message])
    reply = provider.complete(REQUEST)
    assert reply.message.id == message.id and reply.stop_reason == "tool_use" and reply.model == "m1"
    assert reply.usage.input_tokens > 0 and reply.usage.response_event_id == message.id
