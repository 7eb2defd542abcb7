"""Summarizers: the structured one (no model) and the LLM one (budgeted request, retries, validation)."""

from __future__ import annotations

import threading

import pytest

from _agentlog import COUNTER, Agent, answer, previous_of, profile, sectioned, transcript_of
from contextwarden.budget import summary_max_tokens
from contextwarden.errors import Cancelled, CompactionError
from contextwarden.log.events import ToolCall
from contextwarden.plan.compaction import (
    InvalidSummary,
    LLMSummarizer,
    LLMSummarizerSettings,
    StructuredSummarizer,
    SummaryInput,
    SummaryOptions,
)
from contextwarden.plan.compaction.sections import REQUIRED_SECTIONS, SECTIONS
from contextwarden.plan.compaction.serialize import Entry, cap_text, chunk_entries, fit_transcript
from contextwarden.plan.compaction.validate import SummaryCheck, validate_summary
from contextwarden.testing import ScriptedProvider, estimate_request_tokens
from contextwarden.window import state as cwstate
from contextwarden.window.policies.presets import CODING_TOOL_POLICIES
from contextwarden.window.state import TaskState

STATE = TaskState(
    goal="Fix sum in src/calc.py so that sum(2, 3) == 5.",
    constraints=("Do not change the public interface of sum.", "Never touch setup.cfg."),
    latest_user_intent="also handle negative numbers",
    files_read=("src/calc.py", "tests/test_calc.py"),
    files_modified=("src/calc.py",),
    tests=(
        cwstate.TestStatus(target="pytest -q", passed=False, failing=("tests/test_calc.py::test_negative",), seq=9),
    ),
    unresolved_errors=("bash: AssertionError: assert -1 == 1",),
    working_set=("src/calc.py",),
    last_assistant_text="The negative case still fails; next I will look at the sign handling.",
)


def entries(n: int = 6, size: int = 50) -> tuple[Entry, ...]:
    out = [Entry(seq=1, label="user", text="Fix sum in src/calc.py so that sum(2, 3) == 5.")]
    for i in range(n):
        out.append(Entry(seq=2 + 2 * i, label="tool call", name="read_file", text=f'{{"path": "src/f{i}.py"}}'))
        out.append(Entry(seq=3 + 2 * i, label="tool result", name="read_file", text=f"content {i} " * size))
    return tuple(out)


def data(**kw: object) -> SummaryInput:
    base: dict[str, object] = {"entries": entries(), "state": STATE, "replaced_tokens": 50_000}
    base.update(kw)
    return SummaryInput(**base)  # type: ignore[arg-type]


OPTS = SummaryOptions()


# ----------------------------------------------------------------------------- structured


def test_structured_summary_is_deterministic_and_has_every_section() -> None:
    s = StructuredSummarizer()
    first = s.summarize(data(), options=OPTS)
    second = s.summarize(data(), options=OPTS)
    assert first.text == second.text
    for heading in SECTIONS:
        assert heading in first.text.splitlines(), heading
    text = first.text
    assert STATE.goal in text
    assert all(c in text for c in STATE.constraints)
    assert "`src/calc.py`" in text and "tests/test_calc.py::test_negative" in text
    assert "AssertionError: assert -1 == 1" in text
    assert first.summarizer == "structured" and first.input_tokens == 0
    validate_summary(text, SummaryCheck(required_sections=REQUIRED_SECTIONS), counter=COUNTER)


def test_structured_summary_is_bounded() -> None:
    huge = TaskState(
        goal="g" * 50_000,
        constraints=tuple(f"never do thing {i}" for i in range(40)),
        last_assistant_text="x" * 20_000,
        latest_user_intent="y" * 20_000,
    )
    many = tuple(Entry(seq=i, label="assistant", text="We decided this because " + "z" * 5_000) for i in range(200))
    text = StructuredSummarizer().summarize(data(state=huge, entries=many), options=OPTS).text
    assert COUNTER.count(text) < 8_000


def test_structured_turn_prefix_and_focus() -> None:
    s = StructuredSummarizer()
    prefix = s.summarize(data(purpose="turn_prefix"), options=OPTS).text
    assert prefix.startswith("## Turn Request\nFix sum in src/calc.py")
    assert "read_file src/f0.py" in prefix
    focused = s.summarize(data(focus="the sign handling"), options=OPTS).text
    assert "the sign handling" in focused


def test_every_writer_and_the_prompt_follow_the_one_section_layout() -> None:

    from contextwarden.plan.compaction.prompts import build_prompt
    from contextwarden.plan.compaction.schema import render_answer
    from contextwarden.plan.compaction.sections import TURN_SECTIONS
    from contextwarden.plan.compaction.validate import headings

    def lines_of(text: str, layout: tuple[str, ...]) -> list[str]:
        return [ln for ln in text.splitlines() if ln in layout]

    s = StructuredSummarizer()
    assert lines_of(s.summarize(data(), options=OPTS).text, SECTIONS) == list(SECTIONS), "every heading, in order"
    prefix = s.summarize(data(purpose="turn_prefix"), options=OPTS).text
    assert lines_of(prefix, TURN_SECTIONS) == list(TURN_SECTIONS)
    prompt = build_prompt(transcript="x", purpose="history").user
    assert lines_of(prompt, SECTIONS) == list(SECTIONS), "the model is asked for the same headings"
    assert lines_of(build_prompt(transcript="x", purpose="turn_prefix").user, TURN_SECTIONS) == list(TURN_SECTIONS)
    titles = headings(render_answer({"next_steps": ["go on"]}))
    assert titles == [h.lstrip("#").strip() for h in SECTIONS if h.lstrip("#").strip() in titles], "a subsequence"


def test_structured_carries_done_items_of_the_previous_summary() -> None:
    previous = sectioned(done="Renamed helper `add2` to `add_two`")
    text = StructuredSummarizer().summarize(data(previous_summary=previous), options=OPTS).text
    assert "Renamed helper `add2` to `add_two`" in text


# ----------------------------------------------------------------------------- LLM: request shape and budget


def test_llm_request_has_no_tools_a_system_prompt_and_the_output_budget() -> None:
    provider = ScriptedProvider([answer(sectioned())])
    summarizer = LLMSummarizer(provider, model=profile(200_000, max_output=8_000), counter=COUNTER)
    result = summarizer.summarize(data(), options=OPTS)
    request = provider.requests[0]
    assert request.tools == ()
    assert "Reply with the notes and nothing" in request.system and [m.role for m in request.messages] == ["user"]
    assert (
        provider.options[0].max_tokens == min(int(0.8 * 32_768), 8_000) == summary_max_tokens(profile(max_output=8_000))
    )
    assert "[tool result #3 read_file]" in transcript_of(request)
    assert result.summarizer == "llm:test-model" and result.calls == 1 and result.input_tokens > 0


def test_summary_output_budget_formula() -> None:
    assert summary_max_tokens(profile(max_output=100_000)) == 26_214
    assert summary_max_tokens(profile(max_output=4_096)) == 4_096
    assert summary_max_tokens(profile(max_output=100_000), 10_000) == 8_000
    summarizer = LLMSummarizer(ScriptedProvider([]), model=profile(200_000, max_output=100_000), counter=COUNTER)
    assert summarizer.output_budget() == 26_214


def test_summary_request_is_trimmed_to_fit_the_summarizer_window() -> None:
    provider = ScriptedProvider([answer(sectioned())], context_window=6_000)
    small = profile(6_000, max_output=1_000)
    summarizer = LLMSummarizer(
        provider, model=small, counter=COUNTER, settings=LLMSummarizerSettings(reserve_tokens=1_200)
    )
    big = entries(n=200, size=400)  # far more than the window
    summarizer.summarize(data(entries=big), options=OPTS)
    request = provider.requests[0]
    sent = COUNTER.count(request.system) + sum(COUNTER.count(m.text) for m in request.messages)
    limit = provider.options[0].max_tokens or 0
    assert limit > 0 and sent + limit <= small.context_window
    assert estimate_request_tokens(request) + limit <= 6_000
    assert "older entries left out" in transcript_of(request)


def test_per_item_caps_cut_in_the_middle() -> None:
    text = "HEAD " + "middle " * 5_000 + " TAIL"
    cut = cap_text(text, 200, COUNTER)
    assert cut.startswith("HEAD") and cut.endswith("TAIL") and "tokens omitted" in cut
    assert COUNTER.count(cut) < 400
    fitted = fit_transcript(entries(n=50, size=400), budget=3_000, counter=COUNTER)
    assert fitted.tokens <= 3_000 and fitted.item_cap < 2_000


def test_chunks_fit_their_budget() -> None:
    chunks = chunk_entries(entries(n=60, size=200), budget=1_500, counter=COUNTER)
    assert len(chunks) > 1
    assert sum(len(c) for c in chunks) == len(entries(n=60, size=200))


def test_too_small_a_summarizer_window_is_a_clear_error() -> None:
    summarizer = LLMSummarizer(ScriptedProvider([]), model=profile(300, max_output=100), counter=COUNTER)
    with pytest.raises(CompactionError, match="larger window"):
        summarizer.summarize(data(), options=OPTS)


def test_update_prompt_gets_the_previous_summary_apart_from_the_transcript() -> None:
    provider = ScriptedProvider([answer(sectioned(done="updated"))])
    previous = sectioned(goal="PREVIOUS-GOAL-MARKER")
    LLMSummarizer(provider, model=profile(), counter=COUNTER).summarize(data(previous_summary=previous), options=OPTS)
    request = provider.requests[0]
    assert "PREVIOUS-GOAL-MARKER" in previous_of(request)
    assert "PREVIOUS-GOAL-MARKER" not in transcript_of(request)
    assert "replaces the previous ones" in request.messages[-1].text


def test_focus_reaches_the_prompt() -> None:
    provider = ScriptedProvider([answer(sectioned())])
    LLMSummarizer(provider, model=profile(), counter=COUNTER).summarize(data(focus="the parser bug"), options=OPTS)
    assert "particular attention to: the parser bug" in provider.requests[0].messages[-1].text


# ----------------------------------------------------------------------------- LLM: retries and cancellation


def test_max_tokens_stop_retries_once_at_the_lowest_thinking_level() -> None:
    provider = ScriptedProvider([answer("## Goal\nhalf", stop="max_tokens"), answer(sectioned())])
    settings = LLMSummarizerSettings(thinking="high", thinking_levels=("minimal", "low", "high"))
    summarizer = LLMSummarizer(provider, model=profile(), counter=COUNTER, settings=settings)
    result = summarizer.summarize(data(), options=OPTS)
    assert [o.thinking for o in provider.options] == ["high", "minimal"]
    assert provider.requests[0].messages == provider.requests[1].messages
    assert provider.options[0].max_tokens == provider.options[1].max_tokens
    assert result.calls == 2 and "retried once at thinking=minimal" in result.notes[0]


def test_max_tokens_twice_or_without_a_lower_level_is_rejected_as_truncated() -> None:
    twice = ScriptedProvider([answer("## Goal", stop="max_tokens"), answer("## Goal", stop="max_tokens")])
    settings = LLMSummarizerSettings(thinking="high", thinking_levels=("low", "high"))
    with pytest.raises(InvalidSummary) as info:
        LLMSummarizer(twice, model=profile(), counter=COUNTER, settings=settings).summarize(data(), options=OPTS)
    assert info.value.reason == "truncated" and len(twice.requests) == 2
    no_lower = ScriptedProvider([answer("## Goal", stop="max_tokens")])
    settings = LLMSummarizerSettings(thinking="low", thinking_levels=("low", "high"))
    with pytest.raises(InvalidSummary, match="truncated"):
        LLMSummarizer(no_lower, model=profile(), counter=COUNTER, settings=settings).summarize(data(), options=OPTS)
    assert len(no_lower.requests) == 1


def test_cancellation_wins_even_over_a_completed_answer() -> None:
    cancel = threading.Event()

    def cancel_then_answer(request: object) -> object:
        cancel.set()  # the user cancels while the summary is being written
        return answer(sectioned())(request)  # type: ignore[operator]

    provider = ScriptedProvider([cancel_then_answer])
    with pytest.raises(Cancelled):
        LLMSummarizer(provider, model=profile(), counter=COUNTER).summarize(
            data(), options=SummaryOptions(cancel=cancel)
        )
    before = ScriptedProvider([])
    with pytest.raises(Cancelled):
        LLMSummarizer(before, model=profile(), counter=COUNTER).summarize(data(), options=SummaryOptions(cancel=cancel))
    assert before.requests == []


def test_cancellation_during_a_max_tokens_retry_is_not_retried() -> None:
    cancel = threading.Event()

    def truncated_and_cancelled(request: object) -> object:
        cancel.set()
        return answer("## Goal", stop="max_tokens")(request)  # type: ignore[operator]

    provider = ScriptedProvider([truncated_and_cancelled, answer(sectioned())])
    settings = LLMSummarizerSettings(thinking="high", thinking_levels=("low", "high"))
    with pytest.raises(Cancelled):
        LLMSummarizer(provider, model=profile(), counter=COUNTER, settings=settings).summarize(
            data(), options=SummaryOptions(cancel=cancel)
        )
    assert len(provider.requests) == 1


# ----------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("text", "reason", "kw"),
    [
        ("   \n", "empty", {}),
        ("## Goal\nfix\n## Progress\n- x\n## Next Steps\n1. y", "missing_sections", {}),
        ('{"goal": "fix", "constraints": []}', "format", {}),
        (sectioned(), "not_shorter", {"source_tokens": 20}),
        (
            sectioned(
                goal="修复求和函数，保持公共接口不变，然后运行测试验证结果是否正确。" * 3,
                constraint="不要修改公共接口",
                done="读取了文件",
                next_step="运行测试",
            ),
            "language",
            {"language_sample": "Fix the sum function and keep the public interface unchanged please."},
        ),
        (
            sectioned(),
            "language",
            {"language_sample": "修复求和函数：sum(2, 3) 返回了 23，预期结果是 5。保持公共接口不变，并运行测试验证。"},
        ),
        (sectioned() + '\n<tool_call>{"name": "bash", "arguments": {"command": "ls"}}</tool_call>', "tool_calls", {}),
    ],
)
def test_bad_summaries_are_rejected(text: str, reason: str, kw: dict[str, object]) -> None:
    check = SummaryCheck(required_sections=REQUIRED_SECTIONS, **kw)  # type: ignore[arg-type]
    with pytest.raises(InvalidSummary) as info:
        validate_summary(text, check, counter=COUNTER)
    assert info.value.reason == reason


def test_copy_of_the_input_is_rejected_and_a_real_summary_passes() -> None:
    source = "\n".join(
        f"[tool result #{i} bash]\nline {i}: the quick brown fox jumps over lazy dog {i}" for i in range(60)
    )
    copied = sectioned(done=source)
    check = SummaryCheck(required_sections=REQUIRED_SECTIONS, source_text=source)
    with pytest.raises(InvalidSummary, match="copy"):
        validate_summary(copied, check, counter=COUNTER)
    validate_summary(sectioned(), check, counter=COUNTER)
    unchanged = SummaryCheck(required_sections=REQUIRED_SECTIONS, source_text=source, previous_summary=sectioned())
    with pytest.raises(InvalidSummary, match="unchanged"):
        validate_summary(sectioned(), unchanged, counter=COUNTER)


def test_tool_calls_in_the_answer_and_truncation_are_rejected() -> None:
    check = SummaryCheck(required_sections=REQUIRED_SECTIONS)
    with pytest.raises(InvalidSummary, match="tool"):
        validate_summary(sectioned(), check, counter=COUNTER, tool_calls=1)
    with pytest.raises(InvalidSummary, match="truncated"):
        validate_summary(sectioned(), check, counter=COUNTER, stop_reason="max_tokens")


def test_llm_summarizer_rejects_tool_calls_and_records_the_spent_tokens() -> None:
    call = ToolCall(id="x", name="bash", arguments={"command": "ls"})
    provider = ScriptedProvider([answer(sectioned(), stop="tool_use", calls=(call,))])
    with pytest.raises(InvalidSummary) as info:
        LLMSummarizer(provider, model=profile(), counter=COUNTER).summarize(data(), options=OPTS)
    assert info.value.reason == "tool_calls" and info.value.input_tokens > 0


def test_reasoning_tags_and_an_outer_fence_are_removed() -> None:
    wrapped = "<think>let me think</think>\n```markdown\n" + sectioned() + "\n```"
    provider = ScriptedProvider([answer(wrapped)])
    result = LLMSummarizer(provider, model=profile(), counter=COUNTER).summarize(data(), options=OPTS)
    assert result.text == sectioned()


def test_reground_that_does_not_fit_goes_chunk_by_chunk() -> None:
    provider = ScriptedProvider([answer(sectioned(done=f"chunk {i}")) for i in range(20)])
    summarizer = LLMSummarizer(
        provider,
        model=profile(8_000, max_output=1_000),
        counter=COUNTER,
        settings=LLMSummarizerSettings(reserve_tokens=1_000, reground_max_calls=0),
    )
    result = summarizer.summarize(data(entries=entries(n=120, size=100), reground=True), options=OPTS)
    assert len(provider.requests) > 1
    assert previous_of(provider.requests[0]) == ""
    assert "chunk 0" in previous_of(provider.requests[1])
    assert all("raw session log" in r.messages[-1].text for r in provider.requests)
    assert result.calls == len(provider.requests)


# ----------------------------------------------------------------------------- constrained decoding


def _json_summarizer(provider: ScriptedProvider) -> LLMSummarizer:
    from contextwarden.plan.compaction import LLMSummarizerSettings

    return LLMSummarizer(
        provider,
        model=profile(100_000, name="small"),
        counter=COUNTER,
        settings=LLMSummarizerSettings(structured_output=True),
    )


def test_structured_output_asks_the_model_for_judgment_only_and_derives_the_facts() -> None:
    import json

    from contextwarden.log.store.memory import MemoryStore
    from contextwarden.plan.compaction import SummaryInput, SummaryOptions
    from contextwarden.plan.compaction.serialize import entries_from_events
    from contextwarden.plan.compaction.validate import missing_sections
    from contextwarden.window.state import derive_state

    store = MemoryStore()
    Agent(store).start().work(3)
    events = store.read("s")
    # what SmolLM2-135M wrote under a schema that asked it for facts too: wrong ones
    body = {
        "done": [],
        "in_progress": ["finished", "blocked"],
        "test_status": ["failed"],
        "decisions": ["\x1b[1mkeep the signature\x1b[0m", ""],
        "next_steps": ["port src/mod1.py", "-"],
        "critical_context": [],
        "open_questions": [],
    }
    provider = ScriptedProvider([answer(json.dumps(body))])
    data = SummaryInput(
        entries=tuple(entries_from_events(events)),
        state=derive_state(events, policies=CODING_TOOL_POLICIES),
        anchors_pinned=True,
        replaced_tokens=5_000,
    )
    result = _json_summarizer(provider).summarize(data, options=SummaryOptions())
    request = provider.requests[0]
    asked = provider.options[0].response_format
    assert asked is not None and asked["type"] == "json_object"
    schema = asked["schema"]
    assert isinstance(schema, dict)
    assert set(schema["properties"]) == {"decisions", "next_steps", "critical_context", "open_questions"}  # type: ignore[arg-type]
    assert "JSON object" in request.messages[0].text
    text = result.text
    assert missing_sections(text, REQUIRED_SECTIONS) == []
    assert "1. port src/mod1.py" in text and "2. -" not in text, "the model's next steps, empty items dropped"
    assert "- keep the signature" in text and "\x1b" not in text
    assert "finished\n- blocked" not in text and "- failed" not in text, "facts are not the model's to write"
    assert "src/mod0.py" in text, "the changed files come from the events"
    assert "pinned verbatim above" in text and result.summarizer.startswith("llm:")


def test_the_schema_never_allows_a_longer_answer_than_the_output_budget() -> None:
    from contextwarden.plan.compaction.schema import LIST_SHAPES, list_shape, longest_answer_tokens, summary_schema

    assert list_shape(None) == LIST_SHAPES[0] and list_shape(100_000) == LIST_SHAPES[0]
    shapes = [list_shape(budget) for budget in (1_000, 600, 400, 256, 160)]
    assert shapes == sorted(shapes, reverse=True) and len(set(shapes)) > 2, "smaller budgets, smaller lists"
    for budget in (600, 400, 256, 160):
        assert longest_answer_tokens(*list_shape(budget)) <= budget
    items = summary_schema(256)["properties"]["next_steps"]  # type: ignore[index, call-overload]
    assert (items["maxItems"], items["items"]["maxLength"]) == list_shape(256)  # type: ignore[index]


def test_structured_output_off_sends_no_schema_and_a_non_json_answer_is_rejected() -> None:
    from contextwarden.log.store.memory import MemoryStore
    from contextwarden.plan.compaction import InvalidSummary, SummaryInput, SummaryOptions
    from contextwarden.plan.compaction.serialize import entries_from_events
    from contextwarden.window.state import derive_state

    store = MemoryStore()
    Agent(store).start().work(3)
    events = store.read("s")
    data = SummaryInput(
        entries=tuple(entries_from_events(events)),
        state=derive_state(events, policies=CODING_TOOL_POLICIES),
        replaced_tokens=5_000,
    )
    plain = ScriptedProvider([answer(sectioned())])
    plain_summarizer = LLMSummarizer(plain, model=profile(100_000, name="small"), counter=COUNTER)
    plain_summarizer.summarize(data, options=SummaryOptions())
    assert plain.options[0].response_format is None
    with pytest.raises(InvalidSummary) as rejected:
        _json_summarizer(ScriptedProvider([answer("## Goal\nnot json")])).summarize(data, options=SummaryOptions())
    assert rejected.value.reason == "format"
