"""Verification checks what a summary says against the log, not only its shape."""

from __future__ import annotations

import json

import pytest

from _agentlog import COUNTER, Agent, answer, manager, profile
from contextwarden.errors import SummaryFallbackWarning
from contextwarden.log.events import Compaction
from contextwarden.log.store.memory import MemoryStore
from contextwarden.plan.compaction import (
    LLMSummarizer,
    LLMSummarizerSettings,
    SummaryInput,
    SummaryOptions,
    verify_summary,
)
from contextwarden.plan.compaction.serialize import entries_from_events
from contextwarden.plan.compaction.statements import check_written, session_text
from contextwarden.testing import ScriptedProvider
from contextwarden.window.policies.presets import CODING_TOOL_POLICIES
from contextwarden.window.state import derive_state

# What SmolLM2-135M wrote under the JSON schema on real sessions (issue report and bundled runs).
JUNK = {
    "decisions": ["1.2", "1234567890", "decisions"],
    "next_steps": ["critical_context", "open_questions", "./random.py"],
    "critical_context": ["./CGI-BEGINED.php#1053426789:100:0", "./data/features-list.json"],
    "open_questions": ["open_questions"],
}


def _session() -> tuple[MemoryStore, SummaryInput]:
    store = MemoryStore()
    Agent(store).start().work(3)
    events = store.read("s")
    data = SummaryInput(
        entries=tuple(entries_from_events(events)),
        state=derive_state(events, policies=CODING_TOOL_POLICIES),
        anchors_pinned=True,
        replaced_tokens=5_000,
    )
    return store, data


def test_schema_keys_numbers_and_invented_paths_are_dropped_sentences_about_the_task_kept() -> None:
    _, data = _session()
    good = {
        "decisions": ["Keep the signature of sum because callers rely on it"],
        "next_steps": ["Run pytest again after editing src/mod1.py"],
    }
    kept, dropped, checked = check_written(
        {**JUNK, **{k: JUNK[k] + v for k, v in good.items()}}, session_text(data.entries, data.state)
    )
    assert kept == good
    assert checked == 11 and len(dropped) == 9
    assert any("random.py" in d and "never mentions" in d for d in dropped)


def _llm(provider: ScriptedProvider) -> LLMSummarizer:
    return LLMSummarizer(
        provider,
        model=profile(100_000, name="small"),
        counter=COUNTER,
        settings=LLMSummarizerSettings(structured_output=True),
    )


def test_a_model_answer_that_is_mostly_junk_is_rejected() -> None:
    _, data = _session()
    provider = ScriptedProvider([answer(json.dumps(JUNK))])
    try:
        _llm(provider).summarize(data, options=SummaryOptions())
    except Exception as exc:
        assert type(exc).__name__ == "InvalidSummary" and "untrue" in str(exc), exc
    else:
        raise AssertionError("a junk answer was accepted")


def test_a_few_junk_items_are_dropped_and_counted() -> None:
    _, data = _session()
    body = {
        "decisions": ["Keep the signature of sum because callers rely on it"],
        "next_steps": ["Run pytest again after editing src/mod1.py", "critical_context"],
        "critical_context": ["src/mod2.py holds the sum function"],
    }
    result = _llm(ScriptedProvider([answer(json.dumps(body))])).summarize(data, options=SummaryOptions())
    assert "critical_context" not in result.text.split("## Next Steps")[1].split("##")[0]
    assert "model statements: 4 checked, 1 dropped" in result.notes


def test_the_fallback_is_a_recorded_decision_of_the_build() -> None:
    store = MemoryStore()
    provider = ScriptedProvider([answer(json.dumps(JUNK))] * 4)
    built = manager(store, summarizer=_llm(provider))
    Agent(store).start().work(12)
    with pytest.warns(SummaryFallbackWarning, match="untrue"):  # a fallback is said, never silent
        ctx = built.build("s", model=profile(3_000, max_output=500))
    (event,) = [e for e in store.read("s") if isinstance(e, Compaction)]
    assert event.summarizer.startswith("structured") and "untrue" in str(event.details["fallback"])
    (decision,) = [d for d in ctx.decisions if d.action == "compact"]
    assert "the fallback wrote the summary (history: llm:small failed (InvalidSummary: summary rejected (untrue)" in (
        decision.reason
    )


def test_a_summary_naming_the_wrong_command_or_outcome_is_corrected_from_the_log() -> None:
    store, data = _session()
    events = store.read("s")
    results = [e for e in events if e.kind == "tool_result"]
    read, wrote = results[0].seq, results[1].seq
    summary = "\n".join(
        [
            "## Progress",
            "### Done",
            f"- [x] `bash rm reproduce.py` ({read})".replace(f"({read})", f"(#{read})"),
            f"- [x] `write_file src/mod0.py` (#{wrote})",
            "## Failed Attempts",
            f"- `write_file src/mod0.py` failed at #{wrote}: boom",
            "## Test Status",
            f"- `pytest:all` passed at #{read}",
            "## Next Steps",
            "1. decisions",
            "2. Open ./random.py",
            "3. Run the tests in src/mod1.py again",
        ]
    )
    text, check = verify_summary(summary, state=data.state, anchors=data.state, kept_text="", entries=data.entries)
    assert f"- [x] `read_file src/mod0.py` (#{read})" in text, "relabelled from the call the result answers"
    assert f"- [x] `write_file src/mod0.py` (#{wrote})" in text
    assert "failed at" not in text and "pytest:all" not in text
    assert "decisions" not in text.split("## Next Steps")[1] and "random.py" not in text
    assert "3. Run the tests in src/mod1.py again" in text
    record = check.to_dict()
    assert record["statements_checked"] == 7
    missing = record["missing"]
    assert isinstance(missing, dict)
    assert {k: len(v) for k, v in missing.items() if k not in ("next_step", "files_modified")} == {  # type: ignore[arg-type]
        "wrong_labels": 1,
        "wrong_outcomes": 1,
        "wrong_test_status": 1,
        "untrue_statements": 2,
    }


def test_the_schema_goes_in_the_form_the_users_server_takes() -> None:
    _, data = _session()
    body = {"decisions": ["Keep the signature of sum because callers rely on it"], "next_steps": ["Run pytest again"]}
    provider = ScriptedProvider([answer(json.dumps(body))])
    settings = LLMSummarizerSettings(structured_output=True, schema_style="json_schema")
    LLMSummarizer(provider, model=profile(100_000, name="big"), counter=COUNTER, settings=settings).summarize(
        data, options=SummaryOptions()
    )
    sent = provider.options[0].response_format
    assert sent is not None and sent["type"] == "json_schema"
    spec = sent["json_schema"]
    assert isinstance(spec, dict) and spec["name"] == "summary" and "next_steps" in spec["schema"]["properties"]  # type: ignore[index, operator]


def test_inspect_lists_the_recorded_fallback(tmp_path: object) -> None:
    from contextwarden.governance.inspection import inspect_session

    store = MemoryStore()
    provider = ScriptedProvider([answer(json.dumps(JUNK))] * 4)
    built = manager(store, summarizer=_llm(provider))
    agent = Agent(store).start()
    agent.work(12)
    with pytest.warns(SummaryFallbackWarning):
        built.build("s", model=profile(3_000, max_output=500))
    agent.work(1)
    view = inspect_session(store, "s", counter=COUNTER)
    reasons = [d.reason for d in view.standing if d.action == "compact"]
    recorded = "as recorded: the summarizer failed, so the fallback wrote the summary (history: llm:small failed"
    assert any(r.startswith(recorded) for r in reasons), reasons
