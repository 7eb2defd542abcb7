"""The LangChain v1 middleware, with LangChain's own fake chat model and a real create_agent loop."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from _paths import TESTS

pytest.importorskip("langchain.agents", reason="needs LangChain 1.x: pip install 'contextwarden[langchain]'")

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, convert_to_openai_messages
from langchain_core.tools import tool
from pydantic import Field

from _integration_script import (
    GOAL,
    PLANTED,
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
from contextwarden import ModelProfile
from contextwarden.integrations.langchain import ContextWardenMiddleware
from contextwarden.log.store import SQLiteStore
from contextwarden.models import get_profile

SYSTEM = "You are a build engineer. Use the tools."


class RecordingModel(GenericFakeChatModel):
    """LangChain's fake chat model, bound to tools, remembering every message list it was sent."""

    received: list[list[BaseMessage]] = Field(default_factory=list)
    offered: list[list[str]] = Field(default_factory=list)

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        self.offered.append([getattr(t, "name", "") for t in tools])
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        self.received.append(list(messages))
        return super()._generate(messages, *args, **kwargs)


def script(first: int, last: int, *, final: str | None = None) -> list[AIMessage]:
    """The model's answers: one tool call per turn in [first, last), then a text answer."""
    out = [
        AIMessage(content="", tool_calls=[{"id": call_id(n), "name": tool_name(n), "args": tool_arguments(n)}])
        for n in range(first, last)
    ]
    out.append(AIMessage(content=final or final_answer()))
    return out


@tool
def read_log(path: str) -> str:
    """Read a build log."""
    return tool_output(int(path.split("-")[1].split(".")[0]))


@tool
def run_tests(target: str) -> str:
    """Run one test file."""
    return tool_output(int(target.split("step")[1].split(".")[0]))


def agent_for(model: RecordingModel, middleware: list[Any]) -> Any:
    return create_agent(model, tools=[read_log, run_tests], system_prompt=SYSTEM, middleware=middleware)


def events_of(messages: list[BaseMessage]) -> list[Any]:
    return chat_events(convert_to_openai_messages(messages))


def test_a_forty_turn_run_sees_the_projection_and_keeps_its_own_history(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    warden = ContextWardenMiddleware(store, session_id="lc", model=get_profile("gpt-4o"))
    model = RecordingModel(messages=iter(script(0, TURNS)))
    result = agent_for(model, [warden]).invoke(
        {"messages": [{"role": "user", "content": GOAL}]}, {"recursion_limit": 200}
    )

    history: list[BaseMessage] = result["messages"]
    assert len(history) == 1 + 2 * TURNS + 1  # the framework's own history holds every message
    assert PLANTED in str(history[2 * 2 + 2].content)
    assert len(model.received) == TURNS + 1
    for turn, sent in enumerate(model.received):
        events = events_of(sent)
        assert_pairing_valid(events)
        assert_projection(events, turn=turn)
    last = model.received[-1]
    sent_chars = sum(len(str(m.content)) for m in last)
    full_chars = sum(len(str(m.content)) for m in history[:-1])
    assert sent_chars < full_chars / 3, "the last request is not much smaller than the full history"
    # the retrieval tools are offered from the first eviction on, never before (short sessions don't pay)
    assert "read_range" not in model.offered[0] and "recall" not in model.offered[0]
    assert "read_range" in model.offered[-1] and "recall" in model.offered[-1]
    # the mirror stored each message once: system, goal, 40 calls, 40 results, the answer
    assert mirrored_counts(store, "lc") == {"instruction": 1, "user": 1, "assistant": TURNS + 1, "tool_result": TURNS}
    body = {"model": "m", "messages": convert_to_openai_messages(last)}
    assert_inspect_shows(store, "lc", "openai_chat", body, tools=["read_log", "run_tests"])


def test_removing_the_middleware_mid_run_leaves_the_history_intact(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    warden = ContextWardenMiddleware(store, session_id="lc", model=get_profile("gpt-4o"))
    first = RecordingModel(messages=iter(script(0, 20, final="pausing")))
    state = agent_for(first, [warden]).invoke(
        {"messages": [{"role": "user", "content": GOAL}]}, {"recursion_limit": 100}
    )
    plain = RecordingModel(messages=iter(script(20, 24)))
    messages = [*state["messages"], {"role": "user", "content": "continue"}]
    result = agent_for(plain, []).invoke({"messages": messages}, {"recursion_limit": 100})
    history = result["messages"]
    assert len(history) == len(state["messages"]) + 1 + 2 * 4 + 1
    # without the middleware the model gets the framework's whole history, unchanged
    assert len(plain.received[0]) == 1 + len(state["messages"]) + 1
    assert str(plain.received[0][-2].content) == "pausing"


def test_a_second_process_resumes_the_session_from_the_store(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    warden = ContextWardenMiddleware(SQLiteStore(db), session_id="lc", model=get_profile("gpt-4o"))
    first = RecordingModel(messages=iter(script(0, 30, final="pausing")))
    state = agent_for(first, [warden]).invoke(
        {"messages": [{"role": "user", "content": GOAL}]}, {"recursion_limit": 200}
    )
    (tmp_path / "history.json").write_text(json.dumps(convert_to_openai_messages(state["messages"])))
    child = subprocess.run(
        [sys.executable, str(TESTS / "_resume_langchain.py"), str(db), str(tmp_path / "history.json")],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert child.returncode == 0, child.stderr[-2000:]
    report = json.loads(child.stdout.strip().splitlines()[-1])
    # the second process's first request was the store's projection: old outputs were masked
    assert report["first_request_chars"] < report["history_chars"] / 3
    store = SQLiteStore(db)
    counts = mirrored_counts(store, "lc")
    assert counts["assistant"] == 31 + 2 + 1 and counts["tool_result"] == 32 and counts["user"] == 2


def test_a_session_id_comes_from_the_thread_id(tmp_path: Path) -> None:
    from langgraph.checkpoint.memory import InMemorySaver

    store = SQLiteStore(tmp_path / "s.db")
    model = RecordingModel(messages=iter(script(0, 2)))
    agent = create_agent(
        model, tools=[read_log, run_tests], middleware=[ContextWardenMiddleware(store)], checkpointer=InMemorySaver()
    )
    agent.invoke({"messages": [{"role": "user", "content": GOAL}]}, {"configurable": {"thread_id": "thread-7"}})
    assert [s.id for s in store.list_sessions()] == ["thread-7"]
    assert mirrored_counts(store, "thread-7")["tool_result"] == 2


def test_a_failure_inside_contextwarden_sends_the_original_request(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    model = RecordingModel(messages=iter(script(0, 1)))
    agent = agent_for(model, [ContextWardenMiddleware(store)])  # no session id, no thread id
    with caplog.at_level(logging.WARNING, logger="contextwarden.integrations"):
        result = agent.invoke({"messages": [{"role": "user", "content": GOAL}]})
    assert "request sent unchanged" in caplog.text and "no session id" in caplog.text
    assert len(result["messages"]) == 4
    assert [m.content for m in model.received[0]][-1] == GOAL


def test_without_retrieval_no_text_names_a_missing_tool(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    warden = ContextWardenMiddleware(store, session_id="lc", model=get_profile("gpt-4o"), retrieval=False)
    model = RecordingModel(messages=iter(script(0, TURNS)))
    agent_for(model, [warden]).invoke({"messages": [{"role": "user", "content": GOAL}]}, {"recursion_limit": 200})
    assert all("read_range" not in names and "recall" not in names for names in model.offered)
    last = " ".join(str(m.content) for m in model.received[-1])
    assert "read_range(" not in last and "recall(" not in last
    assert "not retrievable in this session" in last  # the placeholders still name the output they replace


def test_a_guessed_model_profile_is_said_once(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    with caplog.at_level(logging.WARNING, logger="contextwarden.integrations"):
        model = RecordingModel(messages=iter(script(0, 3)))  # a fake model: no name contextwarden knows
        agent_for(model, [ContextWardenMiddleware(store, session_id="guess")]).invoke(
            {"messages": [{"role": "user", "content": GOAL}]}
        )
    guessed = [r.getMessage() for r in caplog.records if "no profile for model" in r.getMessage()]
    assert len(model.received) == 4 and len(guessed) == 1  # four calls, one line
    assert "128,000-token window" in guessed[0] and "model=ModelProfile(" in guessed[0]
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="contextwarden.integrations"):
        model = RecordingModel(messages=iter(script(0, 1)))
        named = ContextWardenMiddleware(
            store, session_id="named", model=ModelProfile(name="local", context_window=8192)
        )
        agent_for(model, [named]).invoke({"messages": [{"role": "user", "content": GOAL}]})
    assert "no profile for model" not in caplog.text
