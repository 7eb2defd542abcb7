"""The reference agent loop: recording, tools, before-turn compaction, overflow recovery."""

from __future__ import annotations

import threading

import pytest

from _agentlog import COUNTER, Agent, manager, profile
from contextwarden.context import ModelContext, ToolDefinition
from contextwarden.errors import Cancelled, PromptTooLongError, ProviderError, RateLimitError, ServerError
from contextwarden.log.events import AssistantMessage, Compaction, SettingChange, ToolCall, ToolResult, UsageReport
from contextwarden.log.store.memory import MemoryStore
from contextwarden.loop import AgentTool, ToolOutput, run_agent_loop, window_hint
from contextwarden.providers import CallOptions, ModelReply
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


def call(name: str, n: int, **args: object) -> ModelReply:
    return make_response(
        tool_calls=[ToolCall(id=f"k{n}", name=name, arguments=dict(args))],  # type: ignore[arg-type]
        usage=UsageReport(input_tokens=500, output_tokens=20),
    )


def sized(text: str = "", calls: tuple[ToolCall, ...] = ()) -> object:
    def respond(request: ModelContext) -> ModelReply:
        return make_response(
            text, tool_calls=calls, usage=UsageReport(input_tokens=estimate_request_tokens(request), output_tokens=10)
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
    assert second.messages[-1].role == "tool" and second.messages[-1].text == "print('a')"
    assert [t.name for t in second.tools][:3] == ["read_file", "run", "explode"]
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
    assert estimate_request_tokens(small_server.requests[-1]) + (small_server.options[-1].max_tokens or 0) <= 3_000
    assert window_hint(PromptTooLongError("Requested tokens (2285) exceed context window of 2048")) == 2048
    assert window_hint(PromptTooLongError('{"n_ctx": 4096, "n_prompt_tokens": 5000}')) == 4096


def test_silent_overflow_is_recovered_without_recording_the_truncated_answer() -> None:
    store = MemoryStore()
    Agent(store).start().work(20)  # enough verbatim history for a compaction to keep 2,000 tokens and cut the rest
    window = profile(40_000)
    silent = make_response("garbage from a truncated prompt", usage=UsageReport(input_tokens=40_000, output_tokens=5))
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
    with pytest.raises(Cancelled):
        run_agent_loop(
            ScriptedProvider(["x"]), TOOLS, manager(store), "s", model=profile(), options=CallOptions(cancel=cancel)
        )


def test_the_provider_gets_the_built_context_and_the_reply_is_appended_as_it_came() -> None:
    store = MemoryStore()
    agent = Agent(store).start()
    agent.read("a.py")
    built = manager(store).build("s", model=profile(), tools=[t.definition for t in TOOLS])
    reply = make_response("done", usage=UsageReport(input_tokens=321, output_tokens=7, cache_read_tokens=300))
    provider = ScriptedProvider([reply])
    run_agent_loop(provider, TOOLS, manager(store), "s", model=profile(), request_model="served", max_tokens=99)
    [sent] = provider.requests
    assert sent.system == built.system and sent.messages == built.messages and sent.tools == built.tools
    assert sent.cache_breakpoints == built.cache_breakpoints  # nothing is lost on the way to the provider
    assert [m.role for m in sent.messages][-2:] == ["assistant", "tool"]
    assert COUNTER.count(sent.system) > 0
    assert provider.options[0] is not None
    assert (provider.options[0].model, provider.options[0].max_tokens) == ("served", 99)
    message, usage = store.read("s")[-2:]
    assert message is not None and message.id == reply.message.id and isinstance(message, AssistantMessage)
    assert isinstance(usage, UsageReport) and usage.response_event_id == message.id and usage.cache_read_tokens == 300
