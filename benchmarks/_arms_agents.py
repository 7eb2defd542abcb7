"""The OpenAI Agents SDK under each arm of ``bench_integrations.py``.

The arms: none, its ``ToolOutputTrimmer``, a session that returns only its last items, contextwarden.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from _long_run import CALLS_PER_TURN, SYSTEM, USER_TURNS, Arm, chat_of, read_log, recall_server, user_text

from contextwarden.log.store import SQLiteStore

ARMS = ("none", "ToolOutputTrimmer", "SessionSettings(limit=20)", "contextwarden")


def run(arm: str, plan_for: str, db: Path) -> Arm:
    """The OpenAI Agents SDK with a scripted ``Model``; requests recorded after the input filter."""
    from agents import Agent, RunConfig, Runner, SQLiteSession, function_tool, set_tracing_disabled
    from agents.extensions import ToolOutputTrimmer
    from agents.memory import SessionSettings

    from contextwarden.integrations.openai_agents import ContextWardenSession
    from contextwarden.integrations.testing import agents_model

    set_tracing_disabled(True)
    seen: list[dict[str, Any]] = []
    warden = ContextWardenSession("bench", SQLiteStore(db), model=plan_for)
    session: Any = SQLiteSession("bench")  # the SDK's own otherwise
    tools: list[Any] = [function_tool(read_log)]
    config = RunConfig()
    if arm == "contextwarden":
        session = warden
        tools += warden.tools
        config = warden.run_config()
    elif arm == "ToolOutputTrimmer":
        config = RunConfig(call_model_input_filter=ToolOutputTrimmer())
    elif arm == "SessionSettings(limit=20)":
        session = SQLiteSession("bench", session_settings=SessionSettings(limit=20))
    original = config.call_model_input_filter

    def record(data: Any) -> Any:
        out = original(data) if original else data.model_data
        body = {"model": "m", "input": list(out.input), "instructions": out.instructions}
        seen.append({**chat_of("openai_responses", body), "tools": [_agents_schema(t) for t in tools]})
        return out

    config.call_model_input_filter = record
    call = 0

    async def go() -> str:
        nonlocal call
        for turn in range(USER_TURNS):
            script = [("read_log", {"path": f"b-{call + k}.log"}) for k in range(CALLS_PER_TURN)]
            call += CALLS_PER_TURN
            model = agents_model(script, final=f"turn {turn} done")
            agent = Agent(name="b", instructions=SYSTEM, model=model, tools=tools)
            await Runner.run(agent, user_text(turn), session=session, run_config=config, max_turns=50)
        items = await session.get_items(limit=10**9)  # past the session's own limit: what it stored
        return json.dumps(items, ensure_ascii=False, default=str)

    history = asyncio.run(go())
    recall = recall_server(warden.input_filter.warden.manager) if arm == "contextwarden" else None
    return Arm(requests=seen, recall=recall, history=history)


def _agents_schema(tool: Any) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": tool.name, "description": tool.description, "parameters": tool.params_json_schema},
    }
