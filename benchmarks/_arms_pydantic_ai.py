"""pydantic-ai 2.x under each arm of ``bench_integrations.py``: none, a history processor, contextwarden."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from _long_run import CALLS_PER_TURN, SYSTEM, USER_TURNS, Arm, read_log, recall_server, user_text

from contextwarden.log.store import SQLiteStore
from contextwarden.replay.costmodel import BlockMeter
from contextwarden.tokens import best_counter

ARMS = ("none", "ProcessHistory(keep last 10)", "contextwarden")
KEEP = 10


def keep_recent(messages: list[Any]) -> list[Any]:
    """The history processor pydantic-ai's docs suggest, made pairing-safe: the first request and the last messages.

    The tail never opens on tool returns whose calls were cut off (the docs warn that a slice must
    keep calls and returns together).
    """
    from pydantic_ai import messages as pm

    if len(messages) <= KEEP + 1:
        return messages
    tail = messages[-KEEP:]
    first = tail[0]
    if isinstance(first, pm.ModelRequest) and any(isinstance(p, pm.ToolReturnPart) for p in first.parts):
        tail = tail[1:]
    return [messages[0], *tail]


def run(arm: str, plan_for: str, db: Path) -> Arm:
    """A pydantic-ai ``Agent`` on a ``FunctionModel`` that records what it is sent."""
    from pydantic_ai import Agent
    from pydantic_ai import messages as pm
    from pydantic_ai.capabilities import ProcessHistory
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.usage import RequestUsage

    from contextwarden.integrations.pydantic_ai import ContextWarden, to_chat

    seen: list[dict[str, Any]] = []
    script: list[int] = list(range(USER_TURNS * CALLS_PER_TURN))
    state = {"left": 0}

    meter = BlockMeter(best_counter())

    def answer(messages: list[pm.ModelMessage], info: AgentInfo) -> pm.ModelResponse:
        tools = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description or "",
                    "parameters": t.parameters_json_schema,
                },
            }
            for t in info.function_tools
        ]
        body = {"messages": to_chat(messages), "tools": tools}
        seen.append(body)
        # the usage a provider would report: FunctionModel's own guess counts words, and contextwarden
        # anchors its next estimate on the reported usage (it underestimated a 206K request as 102K)
        usage = RequestUsage(input_tokens=sum(b.tokens for b in meter.blocks(body)), output_tokens=30)
        if state["left"]:
            state["left"] -= 1
            n = script.pop(0)
            call = pm.ToolCallPart(tool_name="read_log", args={"path": f"b-{n}.log"}, tool_call_id=f"c{n}")
            return pm.ModelResponse(parts=[call], usage=usage)
        return pm.ModelResponse(parts=[pm.TextPart(content="turn done")], usage=usage)

    capabilities: list[Any] = []
    warden = None
    if arm == "contextwarden":
        warden = ContextWarden(store=SQLiteStore(db), session_id="bench", model=plan_for)
        capabilities = [warden]
    elif arm.startswith("ProcessHistory"):
        capabilities = [ProcessHistory(keep_recent)]
    agent: Agent[None, str] = Agent(FunctionModel(answer), system_prompt=SYSTEM, capabilities=capabilities)
    agent.tool_plain(read_log)

    async def go() -> list[pm.ModelMessage]:
        history: list[pm.ModelMessage] | None = None
        for turn in range(USER_TURNS):
            state["left"] = CALLS_PER_TURN
            history = (await agent.run(user_text(turn), message_history=history)).all_messages()
        return history or []

    history = asyncio.run(go())
    recall = recall_server(warden.warden.manager) if warden else None
    return Arm(requests=seen, recall=recall, history=str(to_chat(history)))
