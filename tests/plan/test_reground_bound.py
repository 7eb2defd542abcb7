"""Re-grounding with a model is bounded in calls and in time, whatever the model."""

from __future__ import annotations

import pytest

from _agentlog import COUNTER, answer, previous_of, profile, sectioned
from contextwarden.errors import CompactionError
from contextwarden.plan.compaction import LLMSummarizer, LLMSummarizerSettings, SummaryInput, SummaryOptions
from contextwarden.plan.compaction.serialize import Entry
from contextwarden.testing import ScriptedProvider
from contextwarden.window.state import TaskState


def _reground_data() -> SummaryInput:
    body = " ".join(f"word{i}" for i in range(100))
    entries = tuple(Entry(seq=i + 1, label="assistant", text=f"step {i}: {body}") for i in range(120))
    return SummaryInput(entries=entries, state=TaskState(goal="fix it"), reground=True, replaced_tokens=100_000)


def _summarizer(provider: ScriptedProvider, **settings: object) -> LLMSummarizer:
    return LLMSummarizer(
        provider,
        model=profile(8_000, max_output=1_000),
        counter=COUNTER,
        settings=LLMSummarizerSettings(reserve_tokens=1_000, **settings),  # type: ignore[arg-type]
    )


def test_reground_makes_at_most_the_set_number_of_calls_and_seeds_them_from_the_events() -> None:
    provider = ScriptedProvider([answer(sectioned(done=f"chunk {i}")) for i in range(20)])
    result = _summarizer(provider, reground_max_calls=2).summarize(_reground_data(), options=SummaryOptions())
    assert len(provider.requests) == 2 and result.calls == 2
    seed = previous_of(provider.requests[0])
    assert "## Goal" in seed and "fix it" in seed, "the older chunks arrive as a summary derived from the events"
    assert any("oldest chunks summarized from the events without the model" in n for n in result.notes)
    unbounded = ScriptedProvider([answer(sectioned(done=f"chunk {i}")) for i in range(20)])
    _summarizer(unbounded, reground_max_calls=0).summarize(_reground_data(), options=SummaryOptions())
    assert len(unbounded.requests) > 2


def test_reground_out_of_time_fails_instead_of_running_on() -> None:
    provider = ScriptedProvider([answer(sectioned()) for _ in range(20)])
    with pytest.raises(CompactionError, match="ran out of time"):
        _summarizer(provider, reground_seconds=0.0).summarize(_reground_data(), options=SummaryOptions())
    assert provider.requests == []


def test_each_reground_call_gets_only_the_time_left() -> None:
    provider = ScriptedProvider([answer(sectioned(done=f"chunk {i}")) for i in range(20)])
    _summarizer(provider, reground_seconds=30.0).summarize(_reground_data(), options=SummaryOptions(timeout=600))
    timeouts = [o.timeout for o in provider.options if o is not None]
    assert timeouts and all(t is not None and t <= 30.0 for t in timeouts)
