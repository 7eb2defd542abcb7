"""LangChain 1.x ``create_agent`` under each arm of ``bench_integrations.py``.

The arms: none, its ``ContextEditingMiddleware``, its ``SummarizationMiddleware`` (twice), contextwarden.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from _long_run import CALLS_PER_TURN, SYSTEM, USER_TURNS, Arm, oracle_summary, read_log, recall_tool, user_text

from contextwarden.log.store import SQLiteStore

ARMS = (
    "none",
    "ContextEditingMiddleware",
    "SummarizationMiddleware",
    "SummarizationMiddleware(trim_tokens_to_summarize=None)",
    "contextwarden",
)


def run(arm: str, plan_for: str, db: Path) -> Arm:
    """LangChain 1.x ``create_agent`` with a fake chat model that records what it is sent."""
    from langchain.agents import create_agent
    from langchain.agents.middleware import ClearToolUsesEdit, ContextEditingMiddleware, SummarizationMiddleware
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage, convert_to_openai_messages
    from langchain_core.tools import tool
    from langchain_core.utils.function_calling import convert_to_openai_tool
    from pydantic import Field

    from contextwarden.integrations.langchain import ContextWardenMiddleware

    seen: list[dict[str, Any]] = []
    side: list[dict[str, Any]] = []

    class Recording(GenericFakeChatModel):
        tools: list[Any] = Field(default_factory=list)

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            self.tools = list(tools)
            return self

        def _generate(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
            tools = [convert_to_openai_tool(t) for t in self.tools]
            seen.append({"messages": convert_to_openai_messages(messages), "tools": tools})
            return super()._generate(messages, *args, **kwargs)

    def summarize(messages: list[Any]) -> str:
        chat = convert_to_openai_messages(messages)
        side.append({"messages": chat, "tools": []})
        return oracle_summary(json.dumps(chat, ensure_ascii=False))

    middleware: list[Any] = []
    warden = None
    if arm == "ContextEditingMiddleware":
        middleware = [ContextEditingMiddleware(edits=[ClearToolUsesEdit(trigger=30_000)])]
    elif arm.startswith("SummarizationMiddleware"):
        # keep= is the documented default (20 messages); summarizer= replaces the summary model call.
        # By default the summarizer is shown only the last 4,000 tokens of what it replaces.
        counting = GenericFakeChatModel(messages=iter([]))
        trim: dict[str, Any] = {"trim_tokens_to_summarize": None} if "None" in arm else {}
        middleware = [SummarizationMiddleware(counting, trigger=("tokens", 30_000), summarizer=summarize, **trim)]
    elif arm == "contextwarden":
        warden = ContextWardenMiddleware(SQLiteStore(db), session_id="bench", model=plan_for)
        middleware = [warden]
    agent_tool = tool(read_log)
    history: list[Any] = [{"role": "system", "content": SYSTEM}]
    call = 0
    for turn in range(USER_TURNS):
        answers = [
            AIMessage(
                content="",
                tool_calls=[{"id": f"c{call + k}", "name": "read_log", "args": {"path": f"b-{call + k}.log"}}],
            )
            for k in range(CALLS_PER_TURN)
        ]
        call += CALLS_PER_TURN
        model = Recording(messages=iter([*answers, AIMessage(content=f"turn {turn} done")]))
        agent = create_agent(model, tools=[agent_tool], middleware=middleware)
        state = agent.invoke(
            {"messages": [*history, {"role": "user", "content": user_text(turn)}]}, {"recursion_limit": 100}
        )
        history = state["messages"]
    return Arm(
        requests=seen,
        recall=recall_tool(warden.retrieval.serve) if warden else None,
        side_requests=side,
        history=json.dumps(convert_to_openai_messages(history), ensure_ascii=False),
    )
