"""The Google ADK callbacks, with a scripted ``BaseLlm`` and ADK's real in-memory runner."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("google.adk", reason="needs google-adk: pip install 'contextwarden[google-adk]'")

from google.adk.agents import LlmAgent
from google.adk.models import BaseLlm, LlmRequest, LlmResponse
from google.adk.runners import InMemoryRunner
from google.genai import types
from pydantic import Field

from _integration_script import (
    GOAL,
    TURNS,
    assert_inspect_shows,
    assert_pairing_valid,
    assert_projection,
    final_answer,
    mirrored_counts,
    tool_arguments,
    tool_name,
    tool_output,
)
from contextwarden.integrations.google_adk import ContextWardenCallbacks
from contextwarden.log.events import ToolResult
from contextwarden.log.store import SQLiteStore
from contextwarden.models import get_profile
from contextwarden.wire import get_codec


class ScriptedLlm(BaseLlm):
    """A fake ADK model: one function call per turn in [first, last), then text; records each request."""

    first: int = 0
    last: int = TURNS
    final: str = Field(default_factory=final_answer)
    received: list[list[dict[str, Any]]] = Field(default_factory=list)
    calls: int = 0

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse]:
        self.received.append(
            [c.model_dump(mode="json", exclude_none=True, by_alias=True) for c in llm_request.contents]
        )
        turn = self.first + self.calls
        self.calls += 1
        if turn < self.last:
            part = types.Part(function_call=types.FunctionCall(name=tool_name(turn), args=tool_arguments(turn)))
        else:
            part = types.Part(text=self.final)
        usage = types.GenerateContentResponseUsageMetadata(prompt_token_count=100 + turn, candidates_token_count=5)
        yield LlmResponse(content=types.Content(role="model", parts=[part]), usage_metadata=usage)


def read_log(path: str) -> str:
    """Read a build log."""
    return tool_output(int(path.split("-")[1].split(".")[0]))


def run_tests(target: str) -> str:
    """Run one test file."""
    return tool_output(int(target.split("step")[1].split(".")[0]))


def agent_for(llm: ScriptedLlm, warden: ContextWardenCallbacks | None) -> LlmAgent:
    callbacks: dict[str, Any] = {}
    tools: list[Any] = [read_log, run_tests]
    if warden is not None:
        callbacks = {"before_model_callback": warden.before_model, "after_model_callback": warden.after_model}
        tools += warden.tools
    return LlmAgent(name="builder", model=llm, instruction="You are a build engineer.", tools=tools, **callbacks)


def run(runner: InMemoryRunner, session_id: str, text: str) -> list[Any]:
    async def go() -> list[Any]:
        if (
            await runner.session_service.get_session(app_name=runner.app_name, user_id="u", session_id=session_id)
            is None
        ):
            await runner.session_service.create_session(app_name=runner.app_name, user_id="u", session_id=session_id)
        message = types.Content(role="user", parts=[types.Part(text=text)])
        return [e async for e in runner.run_async(user_id="u", session_id=session_id, new_message=message)]

    return asyncio.run(go())


def gemini_events(contents: list[dict[str, Any]]) -> list[Any]:
    return list(get_codec("gemini").parse_request({"contents": contents}).events)


def test_a_forty_turn_run_sees_the_projection_and_adk_keeps_its_events(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    warden = ContextWardenCallbacks(store, model=get_profile("gpt-4o"))
    llm = ScriptedLlm(model="scripted")
    runner = InMemoryRunner(agent=agent_for(llm, warden), app_name="builds")
    events = run(runner, "adk-1", GOAL)
    assert events[-1].content.parts[0].text == final_answer()
    assert len(llm.received) == TURNS + 1
    for turn, contents in enumerate(llm.received):
        sent = gemini_events(contents)
        assert_pairing_valid(sent)
        assert_projection(sent, turn=turn)
    session = asyncio.run(runner.session_service.get_session(app_name="builds", user_id="u", session_id="adk-1"))
    assert session is not None and len(session.events) == 1 + 2 * TURNS + 1  # ADK's own history is whole
    assert len(str(llm.received[-1])) < len(str(session.events)) / 3
    counts = mirrored_counts(store, "adk-1")  # the session id is ADK's own
    assert counts == {"instruction": 1, "user": 1, "assistant": TURNS + 1, "tool_result": TURNS}
    assert_inspect_shows(store, "adk-1", "gemini", {"contents": llm.received[-1]}, tools=["read_log", "run_tests"])


def test_a_text_tool_output_is_stored_and_sent_as_its_lines(tmp_path: Path) -> None:
    # ADK hands the model {"result": text}; stored as that JSON it would be one unmaskable line
    store = SQLiteStore(tmp_path / "s.db")
    llm = ScriptedLlm(model="scripted", first=0, last=1)
    run(InMemoryRunner(agent=agent_for(llm, ContextWardenCallbacks(store)), app_name="b"), "adk-4", GOAL)
    outputs = [e.output for e in store.read("adk-4") if isinstance(e, ToolResult)]
    assert outputs == [tool_output(0)] and "\n" in outputs[0]
    sent = llm.received[-1][-1]["parts"][0]["functionResponse"]["response"]
    assert sent == {"output": tool_output(0)}


def test_removing_the_callbacks_mid_run_and_resuming_elsewhere(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    first = ScriptedLlm(model="scripted", first=0, last=20, final="pausing")
    runner = InMemoryRunner(
        agent=agent_for(first, ContextWardenCallbacks(store, model=get_profile("gpt-4o"))), app_name="b"
    )
    run(runner, "adk-2", GOAL)
    plain = ScriptedLlm(model="scripted", first=20, last=22)
    runner.agent = agent_for(plain, None)
    run(runner, "adk-2", "continue")
    assert len(plain.received[0]) == 1 + 2 * 20 + 1 + 1  # ADK sends its whole history without us
    resumed = ScriptedLlm(model="scripted", first=22, last=24)
    other = ContextWardenCallbacks(SQLiteStore(tmp_path / "s.db"), model=get_profile("gpt-4o"))  # a new process
    runner.agent = agent_for(resumed, other)
    run(runner, "adk-2", "go on")
    assert len(str(resumed.received[0])) < len(str(plain.received[-1])) / 3
    counts = mirrored_counts(store, "adk-2")
    assert counts["user"] == 3 and counts["tool_result"] == 24


def test_a_failure_inside_contextwarden_sends_the_original_request(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    warden = ContextWardenCallbacks(SQLiteStore(tmp_path / "s.db"))
    warden.warden.manager.build = _explode  # type: ignore[method-assign]
    llm = ScriptedLlm(model="scripted", first=0, last=1)
    with caplog.at_level(logging.WARNING, logger="contextwarden.integrations"):
        run(InMemoryRunner(agent=agent_for(llm, warden), app_name="b"), "adk-3", GOAL)
    assert "request sent unchanged" in caplog.text and "boom" in caplog.text
    assert len(llm.received[1]) == 3


def _explode(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("boom")
