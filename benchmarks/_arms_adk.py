"""Google ADK under each arm of ``bench_integrations.py``: none, events compaction, contextwarden."""

from __future__ import annotations

import asyncio
import json
import warnings
from pathlib import Path
from typing import Any

from _long_run import (
    CALLS_PER_TURN,
    SYSTEM,
    USER_TURNS,
    Arm,
    chat_of,
    oracle_summary,
    read_log,
    recall_server,
    user_text,
)

from contextwarden.log.store import SQLiteStore

ARMS = ("none", "EventsCompactionConfig", "contextwarden")
TOOLS_CHAT = [
    {
        "type": "function",
        "function": {
            "name": "read_log",
            "description": "Read a build log.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
]


def run(arm: str, plan_for: str, db: Path) -> Arm:
    """An ADK ``LlmAgent`` on a ``BaseLlm`` that records what it is sent; compaction summarizes with the oracle."""
    from google.adk.agents import LlmAgent
    from google.adk.apps.app import App, EventsCompactionConfig
    from google.adk.apps.llm_event_summarizer import LlmEventSummarizer
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.llm_response import LlmResponse
    from google.adk.runners import InMemoryRunner
    from google.genai import types

    from contextwarden.integrations.google_adk import ContextWardenCallbacks

    seen: list[dict[str, Any]] = []
    side: list[dict[str, Any]] = []
    state = {"left": 0, "n": 0}

    def body_of(llm_request: Any) -> dict[str, Any]:
        return {"contents": [c.model_dump(mode="json", exclude_none=True, by_alias=True) for c in llm_request.contents]}

    class Recording(BaseLlm):
        async def generate_content_async(self, llm_request: Any, stream: bool = False) -> Any:
            chat = chat_of("gemini", body_of(llm_request))
            chat["messages"].insert(0, {"role": "system", "content": SYSTEM})
            seen.append({**chat, "tools": TOOLS_CHAT})
            if state["left"]:
                state["left"] -= 1
                state["n"] += 1
                part = types.Part(
                    function_call=types.FunctionCall(name="read_log", args={"path": f"b-{state['n'] - 1}.log"})
                )
            else:
                part = types.Part(text="turn done")
            yield LlmResponse(content=types.Content(role="model", parts=[part]))

    class OracleSummarizer(BaseLlm):
        async def generate_content_async(self, llm_request: Any, stream: bool = False) -> Any:
            prompt = "\n".join(p.text or "" for c in llm_request.contents for p in c.parts or ())
            side.append({"messages": [{"role": "user", "content": prompt}], "tools": []})
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text=oracle_summary(prompt))]))

    warden = ContextWardenCallbacks(SQLiteStore(db), model=plan_for) if arm == "contextwarden" else None
    callbacks = (
        {"before_model_callback": warden.before_model, "after_model_callback": warden.after_model} if warden else {}
    )
    tools = [read_log, *(warden.tools if warden else [])]
    agent = LlmAgent(name="b", model=Recording(model="r"), instruction=SYSTEM, tools=tools, **callbacks)
    compaction = None
    warnings.filterwarnings("ignore", message=r"\[EXPERIMENTAL\] EventsCompactionConfig")
    if arm == "EventsCompactionConfig":
        # the sliding window of ADK's own docs: summarize every 3 invocations, overlapping by 1
        summarizer = LlmEventSummarizer(llm=OracleSummarizer(model="oracle"))
        compaction = EventsCompactionConfig(summarizer=summarizer, compaction_interval=3, overlap_size=1)
    runner = InMemoryRunner(app=App(name="bench", root_agent=agent, events_compaction_config=compaction))

    async def go() -> str:
        await runner.session_service.create_session(app_name="bench", user_id="u", session_id="bench")
        for turn in range(USER_TURNS):
            state["left"] = CALLS_PER_TURN
            message = types.Content(role="user", parts=[types.Part(text=user_text(turn))])
            async for _ in runner.run_async(user_id="u", session_id="bench", new_message=message):
                pass
        session = await runner.session_service.get_session(app_name="bench", user_id="u", session_id="bench")
        return json.dumps([e.model_dump(mode="json", exclude_none=True) for e in session.events] if session else [])

    history = asyncio.run(go())
    return Arm(
        requests=seen,
        recall=recall_server(warden.warden.manager) if warden else None,
        side_requests=side,
        history=history,
    )
