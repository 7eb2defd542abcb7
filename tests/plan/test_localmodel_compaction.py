"""Compaction and the reference loop against a real model: llama-cpp-python's server with SmolLM2-135M.

Run ``bash scripts/llama_server.sh up`` and export the URL it prints; without it these tests skip.
SmolLM2-135M writes weak summaries: validation may accept or reject them (a rejected one falls
back to the structured summary), but every request here travels over real HTTP to a real model.
"""

from __future__ import annotations

import dataclasses
import warnings

import pytest

from _agentlog import COUNTER, Agent, profile
from _localmodel import LOCAL_N_CTX, local_model_name, local_provider
from contextwarden.assemble.manager import ContextManager
from contextwarden.context import ToolDefinition
from contextwarden.errors import SummaryFallbackWarning
from contextwarden.log.events import AssistantMessage, Compaction, UsageReport, UserMessage
from contextwarden.log.store.memory import MemoryStore
from contextwarden.log.store.sqlite import SQLiteStore
from contextwarden.loop import AgentTool, run_agent_loop
from contextwarden.models import ModelProfile
from contextwarden.plan.compaction import (
    CompactionSettings,
    InvalidSummary,
    LLMSummarizer,
    LLMSummarizerSettings,
    SummaryInput,
    SummaryOptions,
    WindowCompactor,
    compact,
    entries_from_events,
)
from contextwarden.window.policies.presets import CODING_TOOL_POLICIES
from contextwarden.window.state import derive_state

pytestmark = pytest.mark.localmodel


def local_profile(window: int = LOCAL_N_CTX) -> ModelProfile:
    """The local model as the budget sees it; its name is what the server calls it."""
    return dataclasses.replace(profile(window, max_output=256), name=local_model_name())


def summarizer(provider: object) -> LLMSummarizer:
    return LLMSummarizer(
        provider,
        model=local_profile(),
        counter=COUNTER,  # type: ignore[arg-type]
        settings=LLMSummarizerSettings(temperature=0.0, max_output_tokens=160),
    )


def test_a_real_summary_over_http_is_validated_or_rejected() -> None:
    store = MemoryStore()
    agent = Agent(store).start()
    agent.work(2)
    events = store.read("s")
    data = SummaryInput(
        entries=tuple(entries_from_events(events)),
        state=derive_state(events, policies=CODING_TOOL_POLICIES),
        replaced_tokens=5_000,
    )
    with local_provider(timeout=300) as provider:
        try:
            result = summarizer(provider).summarize(data, options=SummaryOptions())
        except InvalidSummary as rejected:
            # the path was real: the server read the request and wrote an answer we judged
            assert rejected.reason in (
                "missing_sections",
                "truncated",
                "empty",
                "copy",
                "format",
                "language",
                "tool_calls",
                "not_shorter",
            )
            assert rejected.input_tokens > 100 and rejected.output_tokens > 0
        else:
            assert result.text.strip() and result.calls >= 1
            assert result.input_tokens > 100 and result.output_tokens > 0


def test_a_real_compaction_is_recorded_with_the_servers_usage(tmp_path: object) -> None:
    store = MemoryStore()
    agent = Agent(store).start()
    agent.work(4)
    with local_provider(timeout=300) as provider:
        compactor = WindowCompactor(
            store, summarizer=summarizer(provider), counter=COUNTER, settings=CompactionSettings(keep_recent_tokens=600)
        )
        manager = ContextManager(store, counter=COUNTER, compactor=compactor)
        with warnings.catch_warnings(record=True) as warned:
            warnings.simplefilter("always", SummaryFallbackWarning)
            event = compact(manager, "s", model=local_profile(8_192))
    assert event is not None
    assert event.summarizer_input_tokens > 100, "the real model read the transcript"
    assert bool(warned) == bool(event.details["fallback"]), "a fallback is warned of, and only a fallback"
    if event.details["fallback"]:
        assert event.summarizer == "structured"
        assert "rejected" in str(event.details["fallback"]) or "Error" in str(event.details["fallback"])
    else:
        assert event.summarizer.startswith("llm:")
    assert event.verification["checked"]


def test_a_real_overflow_is_recovered_by_compaction_and_one_retry() -> None:
    store = MemoryStore()
    agent = Agent(store).start()
    # several thousand tokens of plain conversation: more than the server's window. (Tool-call turns
    # are avoided here: llama-cpp-python's server rejects the null content OpenAI sends beside tool_calls.)
    for i in range(12):
        agent.user(f"Question {i}: explain step {i} of the sum fix in detail.")
        agent.add(AssistantMessage(text=f"Step {i}: " + "we check each operand and its type before adding. " * 25))
    # the profile claims a larger window than the server really has, so the first request overflows
    claimed = local_profile(16_384)
    with local_provider(timeout=300) as provider:
        # the structured summary keeps this test fast; the summary path over HTTP is tested above
        manager = ContextManager(store, counter=COUNTER, compactor=WindowCompactor(store, counter=COUNTER))
        result = run_agent_loop(
            provider, [], manager, "s", model=claimed, max_turns=1, max_tokens=64, on_before_turn=lambda sid, turn: None
        )
    assert result.overflow_recoveries == 1
    (event,) = [e for e in store.read("s") if isinstance(e, Compaction)]
    assert event.details["trigger"] == "overflow"
    assert str(LOCAL_N_CTX) in str(event.details["reason"])
    usage = [e for e in store.read("s") if isinstance(e, UsageReport)]
    assert usage and usage[-1].input_tokens < LOCAL_N_CTX


def test_the_reference_loop_runs_several_real_turns(tmp_path: object) -> None:
    from pathlib import Path

    store = SQLiteStore(Path(str(tmp_path)) / "sessions.db")
    store.create_session("s")
    store.append("s", [UserMessage(text="Hello! In one sentence, what is a unit test?")], expected_last_seq=0)
    echo = AgentTool(
        definition=ToolDefinition(
            name="echo",
            description="Repeat the given text.",
            parameters={"type": "object", "properties": {"text": {"type": "string"}}},
        ),
        run=lambda args: str(args.get("text", "")),
    )
    questions = ["And in one sentence, what is an integration test?", "Name one Python test runner."]
    with local_provider(timeout=300) as provider:
        compactor = WindowCompactor(store, summarizer=summarizer(provider), counter=COUNTER)
        manager = ContextManager(store, counter=COUNTER, compactor=compactor)
        turns = 0
        for question in [None, *questions]:
            if question is not None:
                last = store.get_session("s").last_seq
                store.append("s", [UserMessage(text=question)], expected_last_seq=last)
            result = run_agent_loop(
                provider, [echo], manager, "s", model=local_profile(), max_turns=3, max_tokens=48, temperature=0.0
            )
            turns += result.turns
    answers = [e for e in store.read("s") if isinstance(e, AssistantMessage)]
    reports = [e for e in store.read("s") if isinstance(e, UsageReport)]
    assert turns >= 3 and len(answers) == turns and len(reports) == turns
    assert all(r.input_tokens > 0 and r.response_event_id for r in reports)
    assert reports[-1].input_tokens > reports[0].input_tokens, "each turn sees the conversation so far"
    assert any(a.text.strip() or a.tool_calls for a in answers)
    store.close()


def test_constrained_json_decoding_gives_the_small_model_the_summary_shape() -> None:
    """Under the server's JSON-schema decoding, SmolLM2-135M's answer always renders into every heading,
    and the facts (changed files, the failing test) are derived from the events, not left to the model."""
    store = MemoryStore()
    agent = Agent(store).start()
    agent.work(2)
    agent.test(failing="tests/test_calc.py::test_sum")
    events = store.read("s")
    data = SummaryInput(
        entries=tuple(entries_from_events(events)),
        state=derive_state(events, policies=CODING_TOOL_POLICIES),
        replaced_tokens=5_000,
        anchors_pinned=True,
    )
    settings = LLMSummarizerSettings(temperature=0.0, max_output_tokens=256, structured_output=True)
    with local_provider(timeout=900) as provider:
        small = LLMSummarizer(provider, model=local_profile(), counter=COUNTER, settings=settings)
        try:
            result = small.summarize(data, options=SummaryOptions())
        except InvalidSummary as rejected:
            # the shape cannot be what fails: the grammar fixes it, the schema fits the budget, code renders
            assert rejected.reason not in ("format", "missing_sections", "truncated"), rejected
            return
    assert result.calls == 1 and result.output_tokens > 0
    for heading in ("## Goal", "## Constraints", "## Progress", "### In Progress", "## Next Steps", "## Test Status"):
        assert heading in result.text
    test_status = result.text.split("## Test Status", 1)[1].split("\n## ", 1)[0]
    assert "tests/test_calc.py::test_sum" in test_status, "the failing test comes from the events"
    assert all(f in result.text for f in derive_state(events, policies=CODING_TOOL_POLICIES).files_modified)
