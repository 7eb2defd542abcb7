"""The summary request's output budget is the summarizing model's, and a fallback is said, not silent."""

from __future__ import annotations

import pytest

from _agentlog import COUNTER, Agent, answer, manager, profile, sectioned
from contextwarden.errors import ServerError, SummaryFallbackWarning
from contextwarden.log.events import SettingChange
from contextwarden.log.store.memory import MemoryStore
from contextwarden.plan.compaction import LLMSummarizer, LLMSummarizerSettings, compact
from contextwarden.testing import ScriptedProvider

AGENT = profile(40_000, max_output=4_000)


def test_the_agent_models_max_output_does_not_bound_the_summary() -> None:
    store = MemoryStore()
    Agent(store).start().work(8)
    provider = ScriptedProvider([answer(sectioned())])
    summarizer = LLMSummarizer(
        provider, model=profile(100_000, name="big-summarizer", max_output=32_000), counter=COUNTER
    )
    assert compact(manager(store, summarizer=summarizer), "s", model=AGENT) is not None
    sent = provider.options[0].max_tokens
    # floor(0.8 · 32,768) = 26,214: the summarizer's own cap; the agent's 4,000 no longer applies
    assert sent == 26_214, sent


def test_the_summarizers_own_max_output_still_caps_it() -> None:
    store = MemoryStore()
    Agent(store).start().work(8)
    provider = ScriptedProvider([answer(sectioned())])
    summarizer = LLMSummarizer(provider, model=profile(100_000, name="small-out", max_output=2_000), counter=COUNTER)
    assert compact(manager(store, summarizer=summarizer), "s", model=AGENT) is not None
    assert provider.options[0].max_tokens == 2_000


def test_a_fallback_is_a_decision_of_the_build_and_a_warning() -> None:
    store = MemoryStore()
    agent = Agent(store).start()
    summarizer = LLMSummarizer(
        ScriptedProvider([ServerError("down", status=500)] * 50), model=profile(100_000, name="s"), counter=COUNTER
    )
    mgr = manager(store, summarizer=summarizer)
    reasons: list[str] = []
    with pytest.warns(SummaryFallbackWarning, match="ServerError"):
        for r in range(40):
            agent.work(1, prefix=f"src/r{r}_")
            # the whole 32,768 reserve below the window (a model with that max output): the builds compact
            reasons += [d.reason for d in mgr.build("s", model=profile(40_000)).decisions if d.action == "compact"]
    assert reasons and all("the fallback wrote the summary" in r and "ServerError" in r for r in reasons)


def _thinking_session(store: MemoryStore) -> Agent:
    agent = Agent(store).start()
    agent.add(SettingChange(settings={"thinking": "high"}))
    agent.work(8)
    return agent


def test_the_first_summary_attempt_uses_the_sessions_thinking_level() -> None:
    store = MemoryStore()
    agent = _thinking_session(store)
    provider = ScriptedProvider([answer(sectioned())] * 3)
    summarizer = LLMSummarizer(provider, model=profile(100_000, name="thinker"), counter=COUNTER)
    mgr = manager(store, summarizer=summarizer)
    event = compact(mgr, "s", model=AGENT)
    assert event is not None and event.details["thinking"] == "high"
    assert provider.options[0].thinking == "high"
    agent.work(8, prefix="src/later")  # the next window holds no SettingChange: the level carries over
    assert compact(mgr, "s", model=AGENT) is not None
    assert provider.options[-1].thinking == "high"
    named = LLMSummarizer(
        provider, model=profile(100_000, name="fixed"), counter=COUNTER, settings=LLMSummarizerSettings(thinking="low")
    )
    store2 = MemoryStore()
    _thinking_session(store2)
    assert compact(manager(store2, summarizer=named), "s", model=AGENT) is not None
    assert provider.options[-1].thinking == "low"  # a summarizer's own setting wins
