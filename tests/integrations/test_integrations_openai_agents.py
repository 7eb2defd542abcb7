"""The Agents SDK input filter and store-backed Session, with a scripted fake ``Model`` and the real Runner."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents", reason="needs the OpenAI Agents SDK: pip install 'contextwarden[openai-agents]'")

from agents import Agent, Model, ModelResponse, RunConfig, Runner, function_tool
from agents.usage import Usage
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
    ResponseReasoningItem,
)

from _integration_script import (
    GOAL,
    TURNS,
    assert_inspect_shows,
    assert_pairing_valid,
    assert_projection,
    call_id,
    final_answer,
    mirrored_counts,
    tool_arguments,
    tool_name,
    tool_output,
)
from contextwarden.integrations.openai_agents import ContextWardenFilter, ContextWardenSession
from contextwarden.log.store import SQLiteStore
from contextwarden.models import get_profile
from contextwarden.wire import get_codec


class ScriptedModel(Model):
    """A fake ``Model``: one tool call per turn in [first, last), then a text answer; records its inputs."""

    def __init__(self, first: int, last: int, *, final: str | None = None) -> None:
        self.turn = first
        self.last = last
        self.final = final or final_answer()
        self.received: list[list[Any]] = []
        self.instructions: list[str | None] = []

    async def get_response(
        self, system_instructions: str | None, input: Any, *args: Any, **kwargs: Any
    ) -> ModelResponse:
        self.received.append(list(input) if isinstance(input, list) else [{"role": "user", "content": input}])
        self.instructions.append(system_instructions)
        if self.turn < self.last:
            n, self.turn = self.turn, self.turn + 1
            item: Any = ResponseFunctionToolCall(
                type="function_call", call_id=call_id(n), name=tool_name(n), arguments=_json(tool_arguments(n))
            )
        else:
            item = ResponseOutputMessage(
                id="msg_final",
                type="message",
                role="assistant",
                status="completed",
                content=[ResponseOutputText(type="output_text", text=self.final, annotations=[])],
            )
        return ModelResponse(
            output=[item], usage=Usage(requests=1, input_tokens=100, output_tokens=5), response_id=None
        )

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("the scripted model does not stream")


def _json(value: Any) -> str:
    import json

    return json.dumps(value)


@function_tool
def read_log(path: str) -> str:
    """Read a build log."""
    return tool_output(int(path.split("-")[1].split(".")[0]))


@function_tool
def run_tests(target: str) -> str:
    """Run one test file."""
    return tool_output(int(target.split("step")[1].split(".")[0]))


def agent_with(model: ScriptedModel, extra_tools: list[Any]) -> Agent[Any]:
    return Agent(
        name="builder", instructions="You are a build engineer.", model=model, tools=[read_log, run_tests, *extra_tools]
    )


def responses_events(items: list[Any], instructions: str | None) -> list[Any]:
    body: dict[str, Any] = {"model": "m", "input": items}
    if instructions:
        body["instructions"] = instructions
    parsed = get_codec("openai_responses").parse_request(body)
    return [*parsed.instructions, *parsed.events]


def test_a_forty_turn_run_through_the_filter_and_the_session(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    session = ContextWardenSession("oa", store, model=get_profile("gpt-4o"))
    model = ScriptedModel(0, TURNS)
    agent = agent_with(model, session.tools)
    result = asyncio.run(Runner.run(agent, GOAL, session=session, run_config=session.run_config(), max_turns=100))
    assert result.final_output == final_answer()
    assert len(model.received) == TURNS + 1
    for turn, (items, instructions) in enumerate(zip(model.received, model.instructions, strict=True)):
        events = responses_events(items, instructions)
        assert_pairing_valid(events)
        assert_projection(events, turn=turn)
    full = asyncio.run(session.get_items())
    assert len(full) == 1 + 2 * TURNS + 1  # the SDK's history, from the store: goal, calls, outputs, answer
    assert len(str(model.received[-1])) < len(str(full)) / 3
    assert mirrored_counts(store, "oa") == {"instruction": 1, "user": 1, "assistant": TURNS + 1, "tool_result": TURNS}
    body = {"model": "m", "input": model.received[-1]}
    assert_inspect_shows(store, "oa", "openai_responses", body, tools=["read_log", "run_tests"])

    # a second process (a fresh store object) resumes: the SDK's history comes back from the log
    again = ContextWardenSession("oa", SQLiteStore(tmp_path / "s.db"), model=get_profile("gpt-4o"))
    assert len(asyncio.run(again.get_items())) == len(full)
    more = ScriptedModel(TURNS, TURNS + 2)
    asyncio.run(Runner.run(agent_with(more, again.tools), "continue", session=again, run_config=again.run_config()))
    assert len(str(more.received[0])) < len(str(full)) / 3  # the projection, not the whole history
    counts = mirrored_counts(store, "oa")
    assert counts["user"] == 2 and counts["tool_result"] == TURNS + 2


def test_an_agent_without_the_retrieval_tools_reads_no_placeholder_naming_them(tmp_path: Path) -> None:
    # the retrieval tools go on the agent by hand; an agent built without them must not be told to call them
    session = ContextWardenSession("oa", SQLiteStore(tmp_path / "s.db"), model=get_profile("gpt-4o"))
    model = ScriptedModel(0, TURNS)
    asyncio.run(
        Runner.run(agent_with(model, []), GOAL, session=session, run_config=session.run_config(), max_turns=100)
    )
    last = str(model.received[-1])
    assert "read_range(" not in last and "recall(" not in last
    assert "not retrievable in this session" in last  # masking still happened, naming the output instead


class ReasoningModel(ScriptedModel):
    """Answers its first call with an encrypted reasoning item before the tool call, as o-series models do."""

    async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
        response = await super().get_response(*args, **kwargs)
        if len(self.received) == 1:
            reasoning = ResponseReasoningItem(
                id="rs_1", type="reasoning", summary=[], encrypted_content="gAAAAB-opaque-\u00e9-1"
            )
            response.output.insert(0, reasoning)
        return response


def test_an_encrypted_reasoning_item_reaches_the_next_call_byte_for_byte(tmp_path: Path) -> None:
    session = ContextWardenSession("oa", SQLiteStore(tmp_path / "s.db"), model=get_profile("gpt-4o"))
    model = ReasoningModel(0, 2)
    asyncio.run(Runner.run(agent_with(model, session.tools), GOAL, session=session, run_config=session.run_config()))
    sent = [_plain(item) for item in model.received[1]]
    reasoning = [item for item in sent if item.get("type") == "reasoning"]
    assert [r["encrypted_content"] for r in reasoning] == ["gAAAAB-opaque-\u00e9-1"]
    assert sent.index(reasoning[0]) < next(n for n, item in enumerate(sent) if item.get("type") == "function_call")


def _plain(item: Any) -> dict[str, Any]:
    return item if isinstance(item, dict) else item.model_dump(exclude_none=True)


def test_pop_item_is_a_window_event_and_the_log_keeps_the_item(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    session = ContextWardenSession("oa", store)
    asyncio.run(session.add_items([{"role": "user", "content": "first"}]))  # a run's input waits for the model call
    asyncio.run(session.add_items([{"role": "user", "content": "oops"}]))  # (here there is none) and goes now
    popped = asyncio.run(session.pop_item())
    assert popped == {"role": "user", "content": "oops"}
    reopened = ContextWardenSession("oa", SQLiteStore(tmp_path / "s.db"))
    assert [i["content"] for i in asyncio.run(reopened.get_items())] == ["first"]
    assert any(e.kind == "compaction" for e in store.read("oa"))
    assert "oops" in [getattr(e, "text", "") for e in store.read("oa")]  # never deleted
    asyncio.run(reopened.clear_session())
    assert asyncio.run(ContextWardenSession("oa", store).get_items()) == []


def test_removing_the_filter_leaves_the_sdk_history_intact(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    session = ContextWardenSession("oa", store, model=get_profile("gpt-4o"))
    first = ScriptedModel(0, 20, final="pausing")
    asyncio.run(
        Runner.run(
            agent_with(first, session.tools), GOAL, session=session, run_config=session.run_config(), max_turns=50
        )
    )
    plain = ScriptedModel(20, 22)
    asyncio.run(Runner.run(agent_with(plain, []), "continue", session=session, max_turns=50))  # no filter
    assert len(plain.received[0]) == 1 + 2 * 20 + 1 + 1  # every item of the session, unchanged
    assert len(asyncio.run(session.get_items())) == 1 + 2 * 20 + 1 + 1 + 2 * 2 + 1


def test_a_failure_inside_contextwarden_sends_the_original_input(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    broken = ContextWardenFilter(store, session_id="oa")
    broken.warden.manager.build = _explode  # type: ignore[method-assign]
    model = ScriptedModel(0, 1)
    with caplog.at_level(logging.WARNING, logger="contextwarden.integrations"):
        asyncio.run(
            Runner.run(agent_with(model, broken.tools), GOAL, run_config=RunConfig(call_model_input_filter=broken))
        )
    assert "request sent unchanged" in caplog.text and "boom" in caplog.text
    assert model.received[0][0]["content"] == GOAL


def _explode(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("boom")


def test_inspect_shows_what_was_sent_after_the_sdk_popped_items(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    session = ContextWardenSession("oa", store, model=get_profile("gpt-4o"))
    config = session.run_config()
    first = ScriptedModel(0, 16, final="pausing")
    asyncio.run(Runner.run(agent_with(first, session.tools), GOAL, session=session, run_config=config, max_turns=50))
    asyncio.run(session.pop_item())  # the SDK rewinds: the answer goes, a window event says so
    later = ScriptedModel(16, 20)
    asyncio.run(Runner.run(agent_with(later, session.tools), "continue", session=session, run_config=config))
    assert any(getattr(e, "details", {}).get("mirror") == "reset" for e in store.read("oa"))
    body = {"model": "m", "input": later.received[-1], "instructions": later.instructions[-1]}
    assert_inspect_shows(store, "oa", "openai_responses", body, tools=["read_log", "run_tests"])


def test_inspect_shows_what_was_sent_after_a_filter_trimmed_the_oldest_items(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    warden = ContextWardenFilter(store, session_id="oa", model=get_profile("gpt-4o"))

    def trim_then_project(data: Any) -> Any:
        items = list(data.model_data.input)
        if len(items) > 21:  # keep the last 20 items (whole call/output pairs): the oldest go
            items = items[-20:]
        data.model_data.input = items
        return warden(data)

    model = ScriptedModel(0, 24)
    config = RunConfig(call_model_input_filter=trim_then_project)
    asyncio.run(Runner.run(agent_with(model, warden.tools), GOAL, run_config=config, max_turns=50))
    assert any(getattr(e, "details", {}).get("mirror") == "trim" for e in store.read("oa"))
    body = {"model": "m", "input": model.received[-1], "instructions": model.instructions[-1]}
    assert_inspect_shows(store, "oa", "openai_responses", body, tools=["read_log", "run_tests"], answer_stored=False)
