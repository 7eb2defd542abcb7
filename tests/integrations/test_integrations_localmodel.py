"""One real run per framework against the local llama.cpp server, through its OpenAI-compatible model class.

ADK's is ``LiteLlm``. Each run is two user turns with the adapter on: the model's real answers are mirrored, the second
request is the projection of the log, and ``inspect`` rebuilds it. The server has a 2,048-token
window, so the profile says so. Skipped, saying why, when the server is not running.
"""

from __future__ import annotations

import asyncio
import dataclasses
import warnings
from pathlib import Path
from typing import Any

import pytest

from _agentlog import profile
from _integration_script import mirrored_counts
from _localmodel import LOCAL_N_CTX, local_llm_url_or_skip, local_model_name
from contextwarden.governance.inspection import inspect_session
from contextwarden.log.store import SQLiteStore
from contextwarden.models import ModelProfile

pytestmark = pytest.mark.localmodel

QUESTIONS = ("Name one primary colour.", "Name another one.")


def local_profile() -> ModelProfile:
    return dataclasses.replace(profile(LOCAL_N_CTX, max_output=64), name=local_model_name())


def assert_two_real_turns(store: SQLiteStore, session_id: str) -> None:
    counts = mirrored_counts(store, session_id)
    assert counts["user"] == 2 and counts["assistant"] == 2  # both real answers stored, once each
    view = inspect_session(store, session_id)
    texts = [m.text for m in view.context.messages]
    assert QUESTIONS[0] in texts and QUESTIONS[1] in texts


def test_langchain_with_chat_openai(tmp_path: Path) -> None:
    pytest.importorskip("langchain_openai", reason="needs langchain-openai (the dev extra installs it)")
    from langchain.agents import create_agent
    from langchain_openai import ChatOpenAI

    from contextwarden.integrations.langchain import ContextWardenMiddleware

    url = local_llm_url_or_skip()
    model = ChatOpenAI(base_url=url, api_key="local", model=local_model_name(), max_tokens=24, temperature=0)
    store = SQLiteStore(tmp_path / "s.db")
    warden = ContextWardenMiddleware(store, session_id="lc", model=local_profile(), retrieval=False)
    agent = create_agent(model, tools=[], system_prompt="Answer in one word.", middleware=[warden])
    messages: list[Any] = []
    for question in QUESTIONS:
        messages = agent.invoke({"messages": [*messages, {"role": "user", "content": question}]})["messages"]
    assert len(messages) == 4
    assert_two_real_turns(store, "lc")


def test_openai_agents_with_chat_completions_model(tmp_path: Path) -> None:
    from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
    from openai import AsyncOpenAI

    from contextwarden.integrations.openai_agents import ContextWardenSession

    url = local_llm_url_or_skip()
    set_tracing_disabled(True)
    store = SQLiteStore(tmp_path / "s.db")
    session = ContextWardenSession("oa", store, model=local_profile(), retrieval=False)

    async def go() -> None:
        client = AsyncOpenAI(base_url=url, api_key="local")
        model = OpenAIChatCompletionsModel(model=local_model_name(), openai_client=client)
        agent = Agent(name="a", instructions="Answer in one word.", model=model)
        for question in QUESTIONS:
            await Runner.run(agent, question, session=session, run_config=session.run_config())
        await client.close()

    asyncio.run(go())
    assert len(asyncio.run(session.get_items())) == 4
    assert_two_real_turns(store, "oa")


def test_pydantic_ai_with_openai_chat_model(tmp_path: Path) -> None:
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    from contextwarden.integrations.pydantic_ai import ContextWarden

    url = local_llm_url_or_skip()
    store = SQLiteStore(tmp_path / "s.db")
    capability = ContextWarden(store=store, session_id="pa", model=local_profile(), retrieval=False)

    async def go() -> None:
        model = OpenAIChatModel(local_model_name(), provider=OpenAIProvider(base_url=url, api_key="local"))
        agent: Agent[None, str] = Agent(model, system_prompt="Answer in one word.", capabilities=[capability])
        history = None
        for question in QUESTIONS:
            history = (await agent.run(question, message_history=history)).all_messages()

    asyncio.run(go())
    assert_two_real_turns(store, "pa")


def test_google_adk_with_lite_llm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("litellm", reason="ADK reaches OpenAI-compatible servers through LiteLlm: pip install litellm")
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # litellm fetches prices online otherwise
    from google.adk.agents import LlmAgent
    from google.adk.models.lite_llm import LiteLlm
    from google.adk.runners import InMemoryRunner
    from google.genai import types

    from contextwarden.integrations.google_adk import ContextWardenCallbacks

    url = local_llm_url_or_skip()
    store = SQLiteStore(tmp_path / "s.db")
    warden = ContextWardenCallbacks(store, model=local_profile(), retrieval=False)
    model = LiteLlm(model=f"openai/{local_model_name()}", api_base=url, api_key="local", max_tokens=24)
    agent = LlmAgent(
        name="a",
        model=model,
        instruction="Answer in one word.",
        before_model_callback=warden.before_model,
        after_model_callback=warden.after_model,
    )
    runner = InMemoryRunner(agent=agent, app_name="local")

    async def go() -> None:
        await runner.session_service.create_session(app_name="local", user_id="u", session_id="adk")
        for question in QUESTIONS:
            message = types.Content(role="user", parts=[types.Part(text=question)])
            async for _ in runner.run_async(user_id="u", session_id="adk", new_message=message):
                pass

    with warnings.catch_warnings():  # litellm warns about its own TypedDicts as it loads them lazily
        warnings.simplefilter("ignore", UserWarning)
        asyncio.run(go())
    assert_two_real_turns(store, "adk")
