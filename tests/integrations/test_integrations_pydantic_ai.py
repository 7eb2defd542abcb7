"""The pydantic-ai capability, with pydantic-ai's own FunctionModel and a real Agent run."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pydantic_ai", reason="needs pydantic-ai 2.x: pip install 'contextwarden[pydantic-ai]'")

from pydantic_ai import Agent
from pydantic_ai import messages as pm
from pydantic_ai.models.function import AgentInfo, FunctionModel

from _integration_script import (
    GOAL,
    TURNS,
    assert_inspect_shows,
    assert_pairing_valid,
    assert_projection,
    call_id,
    chat_events,
    final_answer,
    mirrored_counts,
    tool_arguments,
    tool_name,
    tool_output,
)
from contextwarden.integrations.pydantic_ai import ContextWarden, to_chat
from contextwarden.log.store import SQLiteStore
from contextwarden.models import get_profile


class Script:
    """A FunctionModel body: one tool call per turn in [first, last), then a text answer."""

    def __init__(self, first: int, last: int, *, final: str | None = None) -> None:
        self.turn, self.last = first, last
        self.final = final or final_answer()
        self.received: list[list[pm.ModelMessage]] = []
        self.tools: list[list[str]] = []

    def __call__(self, messages: list[pm.ModelMessage], info: AgentInfo) -> pm.ModelResponse:
        self.received.append(list(messages))
        self.tools.append([t.name for t in info.function_tools])
        usage = pm.RequestUsage(input_tokens=100 + 10 * len(messages), output_tokens=5)
        if self.turn < self.last:
            n, self.turn = self.turn, self.turn + 1
            part: Any = pm.ToolCallPart(tool_name=tool_name(n), args=tool_arguments(n), tool_call_id=call_id(n))
        else:
            part = pm.TextPart(content=self.final)
        return pm.ModelResponse(parts=[part], usage=usage, model_name="function")


def agent_for(script: Script, capabilities: list[Any]) -> Agent[None, str]:
    agent: Agent[None, str] = Agent(
        FunctionModel(script), system_prompt="You are a build engineer.", capabilities=capabilities
    )

    @agent.tool_plain
    def read_log(path: str) -> str:
        """Read a build log."""
        return tool_output(int(path.split("-")[1].split(".")[0]))

    @agent.tool_plain
    def run_tests(target: str) -> str:
        """Run one test file."""
        return tool_output(int(target.split("step")[1].split(".")[0]))

    return agent


def run(agent: Agent[None, str], prompt: str, history: list[pm.ModelMessage] | None = None) -> Any:
    """One run on a fresh event loop that is closed afterwards (``run_sync`` leaves its loop open)."""
    return asyncio.run(agent.run(prompt, message_history=history))


def warden(store: SQLiteStore, **options: Any) -> ContextWarden:
    return ContextWarden(store=store, session_id="pa", model=get_profile("gpt-4o"), **options)


def test_a_forty_turn_run_sees_the_projection_and_all_messages_keeps_everything(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    script = Script(0, TURNS)
    result = run(agent_for(script, [warden(store)]), GOAL)
    assert result.output == final_answer()
    history = result.all_messages()
    assert len(history) == 1 + 2 * TURNS + 1 - 0  # request, then (response, request) per turn, final response
    assert len(script.received) == TURNS + 1
    for turn, sent in enumerate(script.received):
        events = chat_events(to_chat(sent))
        assert_pairing_valid(events)
        assert_projection(events, turn=turn)
    assert len(str(to_chat(script.received[-1]))) < len(str(to_chat(history))) / 3
    assert "read_range" in script.tools[0] and "recall" in script.tools[0]
    assert mirrored_counts(store, "pa") == {"instruction": 1, "user": 1, "assistant": TURNS + 1, "tool_result": TURNS}
    body = {"model": "m", "messages": to_chat(script.received[-1])}
    assert_inspect_shows(store, "pa", "openai_chat", body, tools=["read_log", "run_tests"])
    usage = [e for e in store.read("pa") if e.kind == "usage"]
    assert len(usage) == TURNS + 1 and usage[-1].input_tokens > usage[0].input_tokens


def test_removing_the_capability_and_resuming_in_a_new_process(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    first = Script(0, 20, final="pausing")
    history = run(agent_for(first, [warden(store)]), GOAL).all_messages()
    plain = Script(20, 22)
    continued = run(agent_for(plain, []), "continue", history).all_messages()
    assert len(plain.received[0]) == len(history) + 1  # everything, unchanged
    assert continued[: len(history)] == history
    # a fresh store object (another process) picks the session up again from the log
    resumed = Script(22, 24)
    run(agent_for(resumed, [warden(SQLiteStore(tmp_path / "s.db"))]), "go on", continued)
    assert len(str(to_chat(resumed.received[0]))) < len(str(to_chat(continued))) / 3
    counts = mirrored_counts(store, "pa")
    assert counts["user"] == 3 and counts["tool_result"] == 24 and counts["assistant"] == 24 + 3


def test_a_failure_inside_contextwarden_sends_the_original_messages(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    capability = warden(SQLiteStore(tmp_path / "s.db"))
    capability.warden.manager.build = _explode  # type: ignore[method-assign]
    script = Script(0, 1)
    with caplog.at_level(logging.WARNING, logger="contextwarden.integrations"):
        run(agent_for(script, [capability]), GOAL)
    assert "request sent unchanged" in caplog.text and "boom" in caplog.text
    assert len(script.received[1]) == 3


def test_without_retrieval_no_tool_and_no_text_names_it(tmp_path: Path) -> None:
    script = Script(0, TURNS)
    run(agent_for(script, [warden(SQLiteStore(tmp_path / "s.db"), retrieval=False)]), GOAL)
    assert all("read_range" not in names for names in script.tools)
    last = str(to_chat(script.received[-1]))
    assert "read_range(" not in last and "not retrievable in this session" in last


def _explode(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("boom")
