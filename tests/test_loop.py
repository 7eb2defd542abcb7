"""The reference agent loop: recording, tools, before-turn compaction, overflow recovery."""

from __future__ import annotations

import threading

import pytest

from _agentlog import COUNTER, Agent, manager, profile
from contextwarden.context import ToolDefinition
from contextwarden.errors import Cancelled, PromptTooLongError, ProviderError, RateLimitError, ServerError
from contextwarden.log.events import AssistantMessage, Compaction, SettingChange, ToolCall, ToolResult, UsageReport
from contextwarden.log.store.memory import MemoryStore
from contextwarden.loop import AgentTool, ToolOutput, run_agent_loop, to_chat_request, window_hint
from contextwarden.providers import ChatRequest, ChatResponse, Usage
from contextwarden.testing import ScriptedProvider, estimate_request_tokens, make_response

FILES: dict[str, str] = {}


def read_file(args: dict[str, object]) -> str:
    return FILES.get(str(args.get("path")), "") or f"no such file: {args.get('path')}"


def failing(args: dict[str, object]) -> str:
    raise OSError("disk on fire")


TOOLS = [
    AgentTool(
        definition=ToolDefinition(
            name="read_file",
            description="Read a file.",
            parameters={"type": "object", "properties": {"path": {"type": "string"}}},
        ),
        run=read_file,
    ),
    AgentTool(
        definition=ToolDefinition(name="run", description="Run a command.", parameters={"type": "object"}),
        run=lambda args: ToolOutput(output="1 failed", is_error=True, exit_code=1),
    ),
    AgentTool(
        definition=ToolDefinition(name="explode", description="Fails.", parameters={"type": "object"}), run=failing
    ),
]


def call(name: str, n: int, **args: object) -> ChatResponse:
    return make_response(
        tool_calls=[ToolCall(id=f"k{n}", name=name, arguments=dict(args))],  # type: ignore[arg-type]
        usage=Usage(input_tokens=500, output_tokens=20),
    )


def sized(text: str = "", calls: tuple[ToolCall, ...] = ()) -> object:
    def respond(request: ChatRequest) -> ChatResponse:
        return make_response(
            text, tool_calls=calls, usage=Usage(input_tokens=estimate_request_tokens(request), output_tokens=10)
        )

    return respond


def test_loop_records_answers_usage_and_tool_results() -> None:
    FILES["a.py"] = "print('a')"
    store = MemoryStore()
    Agent(store).start()
    provider = ScriptedProvider(
        [call("read_file", 1, path="a.py"), call("run", 2), call("explode", 3), call("nope", 4), "All done."]
    )
    result = run_agent_loop(provider, TOOLS, manager(store), "s", model=profile(), max_turns=10)
    assert result.stop_reason == "end_turn" and result.text == "All done." and result.turns == 5
    events = [e for e in store.read("s") if not isinstance(e, SettingChange)]  # builds record their settings
    kinds = [type(e).__name__ for e in events[2:5]]
    assert kinds == ["AssistantMessage", "UsageReport", "ToolResult"]
    usage = events[3]
    assert isinstance(usage, UsageReport) and usage.response_event_id == events[2].id
    results = [e for e in events if isinstance(e, ToolResult)]
    assert results[0].output == "print('a')"
    assert results[1].is_error and results[1].exit_code == 1
    assert results[2].is_error and "disk on fire" in results[2].output
    assert results[3].is_error and "no tool named 'nope'" in results[3].output
    second = provider.requests[1]
    assert second.messages[-1].role == "tool" and second.messages[-1].content == "print('a')"
    assert [t["name"] for t in second.tools][:3] == ["read_file", "run", "explode"]
    assert result.input_tokens == 4 * 500 + estimate_request_tokens(provider.requests[-1])


def test_max_turns_stops_the_loop() -> None:
    store = MemoryStore()
    Agent(store).start()
    provider = ScriptedProvider([call("run", i) for i in range(5)])
    result = run_agent_loop(provider, TOOLS, manager(store), "s", model=profile(), max_turns=3)
    assert result.stop_reason == "max_turns" and result.turns == 3


def test_provider_overflow_is_compacted_and_retried_exactly_once() -> None:
    store = MemoryStore()
    Agent(store).start().work(20)  # enough verbatim history for a compaction to keep 2,000 tokens and cut the rest
    provider = ScriptedProvider(
        [PromptTooLongError("This model's maximum context length is 8192 tokens", status=400), "fixed"]
    )
    result = run_agent_loop(provider, TOOLS, manager(store), "s", model=profile(), max_turns=2)
    assert result.text == "fixed" and result.overflow_recoveries == 1
    (event,) = [e for e in store.read("s") if isinstance(e, Compaction)]
    assert event.details["trigger"] == "overflow"
    assert len(provider.requests) == 2
    assert estimate_request_tokens(provider.requests[1]) < estimate_request_tokens(provider.requests[0])


def test_a_second_overflow_raises_a_clear_error_naming_the_sizes() -> None:
    store = MemoryStore()
    Agent(store).start().work(20)  # enough verbatim history for a compaction to keep 2,000 tokens and cut the rest
    overflow = PromptTooLongError("prompt is too long: 9000 tokens > 8000 maximum", status=400)
    provider = ScriptedProvider([overflow, overflow, "never"])
    sizes = r"still overflowing after compaction and one retry: \d+ tokens before, \d+ after .* window \d+"
    with pytest.raises(PromptTooLongError, match=sizes):
        run_agent_loop(provider, TOOLS, manager(store), "s", model=profile(), max_turns=2)
    assert len(provider.requests) == 2


def test_overflow_with_nothing_to_compact_says_so() -> None:
    store = MemoryStore()
    Agent(store).start()
    provider = ScriptedProvider([PromptTooLongError("context_length_exceeded", status=400)])
    with pytest.raises(PromptTooLongError, match="nothing was old enough to compact"):
        run_agent_loop(provider, TOOLS, manager(store), "s", model=profile(), max_turns=2)
    assert not [e for e in store.read("s") if isinstance(e, Compaction)]


def test_real_window_from_the_error_message_is_used_for_the_retry() -> None:
    store = MemoryStore()
    Agent(store).start().work(12)
    small_server = ScriptedProvider([sized("ok")], context_window=3_000)
    # the profile claims 40K; the server really has 3K and says so in its error
    result = run_agent_loop(small_server, TOOLS, manager(store), "s", model=profile(40_000), max_turns=1)
    assert result.overflow_recoveries == 1 and result.text == "ok"
    assert estimate_request_tokens(small_server.requests[-1]) + small_server.requests[-1].max_tokens <= 3_000
    assert window_hint(PromptTooLongError("Requested tokens (2285) exceed context window of 2048")) == 2048
    assert window_hint(PromptTooLongError('{"n_ctx": 4096, "n_prompt_tokens": 5000}')) == 4096


def test_silent_overflow_is_recovered_without_recording_the_truncated_answer() -> None:
    store = MemoryStore()
    Agent(store).start().work(20)  # enough verbatim history for a compaction to keep 2,000 tokens and cut the rest
    window = profile(40_000)
    silent = make_response("garbage from a truncated prompt", usage=Usage(input_tokens=40_000, output_tokens=5))
    provider = ScriptedProvider([silent, "good answer"])
    result = run_agent_loop(provider, TOOLS, manager(store), "s", model=window, max_turns=1)
    assert result.text == "good answer" and result.overflow_recoveries == 1
    texts = [e.text for e in store.read("s") if isinstance(e, AssistantMessage)]
    assert "garbage from a truncated prompt" not in texts


@pytest.mark.parametrize(
    "error",
    [RateLimitError("429 too many tokens per minute", status=429), ServerError("503 overloaded", status=503)],
    ids=["429", "5xx"],
)
def test_rate_limits_and_server_errors_are_never_answered_by_compaction(error: ProviderError) -> None:
    store = MemoryStore()
    Agent(store).start().work(20)  # enough verbatim history for a compaction to keep 2,000 tokens and cut the rest
    provider = ScriptedProvider([error])
    with pytest.raises(type(error)):
        run_agent_loop(provider, TOOLS, manager(store), "s", model=profile(), max_turns=1)
    assert not [e for e in store.read("s") if isinstance(e, Compaction)]


def test_before_turn_hook_compacts_long_sessions() -> None:
    store = MemoryStore()
    Agent(store).start()
    FILES.update({f"m{i}.py": f"# module {i}\n" + "x = compute()\n" * 120 for i in range(40)})
    notes = "I read the module and noted its helpers: " + "helper_function_name, " * 150
    script = [
        sized(notes, calls=(ToolCall(id=f"r{i}", name="read_file", arguments={"path": f"m{i}.py"}),)) for i in range(40)
    ]
    provider = ScriptedProvider([*script, sized("finished")])
    result = run_agent_loop(provider, TOOLS, manager(store), "s", model=profile(40_000), max_turns=50)
    assert result.text == "finished"
    assert result.compactions, "a 40-read session in a 40K window compacts"
    assert all(estimate_request_tokens(r) <= 40_000 for r in provider.requests)
    assert result.overflow_recoveries == 0


def test_cancellation_stops_the_loop() -> None:
    store = MemoryStore()
    Agent(store).start()
    cancel = threading.Event()
    cancel.set()
    from contextwarden.providers import CallOptions

    with pytest.raises(Cancelled):
        run_agent_loop(
            ScriptedProvider(["x"]), TOOLS, manager(store), "s", model=profile(), options=CallOptions(cancel=cancel)
        )


def test_to_chat_request_maps_roles() -> None:
    store = MemoryStore()
    agent = Agent(store).start()
    agent.read("a.py")
    ctx = manager(store).build("s", model=profile(), tools=[t.definition for t in TOOLS])
    request = to_chat_request(ctx, model="m", max_tokens=100)
    assert [m.role for m in request.messages] == ["system", "user", "assistant", "tool"]
    assert request.messages[2].tool_calls[0].name == "read_file"
    assert request.messages[3].tool_call_id == request.messages[2].tool_calls[0].id
    assert COUNTER.count(request.messages[0].content) > 0
