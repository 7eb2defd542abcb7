"""Each framework's long run three ways: no context management, the framework's own, contextwarden.

The same scripted agent run for every arm: 8 user turns of 5 tool calls each (40 calls), tool
outputs growing from 1.5K to 60K characters, with planted facts (two stated by the user mid-run,
three inside early tool outputs). The framework's own scripted model records every request it
receives; each request is measured as OpenAI Chat messages (tools included) with the exact
o200k_base counter, and priced by :mod:`contextwarden.replay.costmodel` under an Anthropic-style
profile (``claude-sonnet-4-5``: breakpoints on the tools and the last message, 5-minute cache) and
an OpenAI-style one (``gpt-4o``: automatic prefix cache), one call every 10 seconds. contextwarden
plans for the profile it is priced under.

Arms per framework:

- ``none``: the framework as it comes;
- ``builtin``: LangChain ``ContextEditingMiddleware(ClearToolUsesEdit(trigger=30_000))``, the Agents
  SDK ``ToolOutputTrimmer()`` (pydantic-ai ships none; ADK's events compaction needs a summarizer
  model, so it does not run offline);
- ``contextwarden``: the adapter.

Retention: of the planted facts, how many the *last* request shows verbatim ("in context"), and how
many the model can still get (in context, or returned by a retrieval tool it was offered: for
contextwarden, ``recall`` over the store).

    .venv/bin/python benchmarks/bench_integrations.py [--frameworks langchain,agents,pydantic_ai,adk] [--json OUT]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contextwarden.log.store import SQLiteStore
from contextwarden.models import get_profile
from contextwarden.replay.costmodel import BlockMeter, CacheSimulator
from contextwarden.tokens import best_counter
from contextwarden.wire import get_codec

USER_TURNS, CALLS_PER_TURN = 8, 5
PROFILES = {"anthropic": "claude-sonnet-4-5", "openai": "gpt-4o"}
FACTS = {
    "user:2": "Note: the release branch is called hotfix-blue.",
    "user:5": "Note: the CI runner image is ubuntu-22.04-large.",
    "tool:3": "FACT: the flaky test is test_payments_retry.",
    "tool:8": "FACT: the cache key prefix is cw-v7.",
    "tool:13": "FACT: the on-call engineer is Priya.",
}
SYSTEM = "You are a build engineer. Use the tools."
TOOLS = [
    {"name": "read_log", "description": "Read a build log.", "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}
]


def user_text(turn: int) -> str:
    return FACTS.get(f"user:{turn}", f"Turn {turn}: keep going.") if turn else "Find why the nightly build fails."


def tool_output(call: int) -> str:
    lines = [f"call {call} line {n}: compiling module_{n % 17} ... ok" for n in range((call + 1) * 30)]
    if f"tool:{call}" in FACTS:
        lines.insert(3, FACTS[f"tool:{call}"])
    return "\n".join(lines)


def read_log(path: str) -> str:
    """Read a build log."""
    return tool_output(int(path.split("-")[1].split(".")[0]))


@dataclass
class Arm:
    """One framework run: the requests its model received (as OpenAI Chat bodies) and a retrieval hook."""

    requests: list[dict[str, Any]]
    recall: Callable[[str], str] | None = None


# --------------------------------------------------------------------------- LangChain


def run_langchain(arm: str, plan_for: str, db: Path) -> Arm:
    from langchain.agents import create_agent
    from langchain.agents.middleware import ClearToolUsesEdit, ContextEditingMiddleware
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage, convert_to_openai_messages
    from langchain_core.tools import tool

    from contextwarden.integrations.langchain import ContextWardenMiddleware

    seen: list[dict[str, Any]] = []

    class Recording(GenericFakeChatModel):
        tools: list[Any] = []

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            self.tools = [t for t in tools]
            return self

        def _generate(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
            from langchain_core.utils.function_calling import convert_to_openai_tool

            tools = [convert_to_openai_tool(t) for t in self.tools]
            seen.append({"messages": convert_to_openai_messages(messages), "tools": tools})
            return super()._generate(messages, *args, **kwargs)

    middleware: list[Any] = []
    warden = None
    if arm == "builtin":
        middleware = [ContextEditingMiddleware(edits=[ClearToolUsesEdit(trigger=30_000)])]
    elif arm == "contextwarden":
        warden = ContextWardenMiddleware(SQLiteStore(db), session_id="bench", model=plan_for)
        middleware = [warden]
    agent_tool = tool(read_log)
    history: list[Any] = [{"role": "system", "content": SYSTEM}]
    call = 0
    for turn in range(USER_TURNS):
        answers = [
            AIMessage(content="", tool_calls=[{"id": f"c{call + k}", "name": "read_log", "args": {"path": f"b-{call + k}.log"}}])
            for k in range(CALLS_PER_TURN)
        ]
        call += CALLS_PER_TURN
        model = Recording(messages=iter([*answers, AIMessage(content=f"turn {turn} done")]))
        agent = create_agent(model, tools=[agent_tool], middleware=middleware)
        history = agent.invoke({"messages": [*history, {"role": "user", "content": user_text(turn)}]}, {"recursion_limit": 100})["messages"]
    return Arm(requests=seen, recall=_recall(warden.retrieval.serve) if warden else None)


# --------------------------------------------------------------------------- Agents SDK


def run_agents(arm: str, plan_for: str, db: Path) -> Arm:
    from agents import Agent, RunConfig, Runner, SQLiteSession, function_tool, set_tracing_disabled
    from agents.extensions import ToolOutputTrimmer

    from contextwarden.integrations.openai_agents import ContextWardenSession
    from contextwarden.integrations.testing import agents_model

    set_tracing_disabled(True)
    seen: list[dict[str, Any]] = []
    warden = ContextWardenSession("bench", SQLiteStore(db), model=plan_for)
    session: Any = warden if arm == "contextwarden" else SQLiteSession("bench")  # the SDK's own otherwise
    tools: list[Any] = [function_tool(read_log)]
    if arm == "contextwarden":
        tools += warden.tools
        config = warden.run_config()
    elif arm == "builtin":
        config = RunConfig(call_model_input_filter=ToolOutputTrimmer())
    else:
        config = RunConfig()
    original = config.call_model_input_filter

    def record(data: Any) -> Any:
        out = original(data) if original else data.model_data
        body = {"model": "m", "input": list(out.input), "instructions": out.instructions}
        seen.append({**_chat_of("openai_responses", body), "tools": [_schema(t) for t in tools]})
        return out

    config.call_model_input_filter = record
    call = 0

    async def go() -> None:
        nonlocal call
        for turn in range(USER_TURNS):
            script = [("read_log", {"path": f"b-{call + k}.log"}) for k in range(CALLS_PER_TURN)]
            call += CALLS_PER_TURN
            agent = Agent(name="b", instructions=SYSTEM, model=agents_model(script, final=f"turn {turn} done"), tools=tools)
            await Runner.run(agent, user_text(turn), session=session, run_config=config, max_turns=50)

    asyncio.run(go())
    return Arm(requests=seen, recall=_recall_agents(warden) if arm == "contextwarden" else None)


def _schema(tool: Any) -> dict[str, Any]:
    return {"type": "function", "function": {"name": tool.name, "description": tool.description, "parameters": tool.params_json_schema}}


def _recall_agents(session: Any) -> Callable[[str], str]:
    from contextwarden.integrations._retrieval import RetrievalServer

    server = RetrievalServer(session.input_filter.warden.manager, lambda: session.session_id)
    return _recall(server.serve)


# --------------------------------------------------------------------------- pydantic-ai


def run_pydantic_ai(arm: str, plan_for: str, db: Path) -> Arm | None:
    if arm == "builtin":
        return None  # pydantic-ai ships no context management of its own
    from pydantic_ai import Agent
    from pydantic_ai import messages as pm
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from contextwarden.integrations.pydantic_ai import ContextWarden, to_chat

    seen: list[dict[str, Any]] = []
    script: list[int] = list(range(USER_TURNS * CALLS_PER_TURN))
    state = {"left": 0}

    def answer(messages: list[pm.ModelMessage], info: AgentInfo) -> pm.ModelResponse:
        tools = [{"type": "function", "function": {"name": t.name, "description": t.description or "", "parameters": t.parameters_json_schema}} for t in info.function_tools]
        seen.append({"messages": to_chat(messages), "tools": tools})
        if state["left"]:
            state["left"] -= 1
            n = script.pop(0)
            return pm.ModelResponse(parts=[pm.ToolCallPart(tool_name="read_log", args={"path": f"b-{n}.log"}, tool_call_id=f"c{n}")])
        return pm.ModelResponse(parts=[pm.TextPart(content="turn done")])

    capability = ContextWarden(store=SQLiteStore(db), session_id="bench", model=plan_for) if arm == "contextwarden" else None
    agent: Agent[None, str] = Agent(FunctionModel(answer), system_prompt=SYSTEM, capabilities=[capability] if capability else [])
    agent.tool_plain(read_log)

    async def go() -> None:
        history = None
        for turn in range(USER_TURNS):
            state["left"] = CALLS_PER_TURN
            history = (await agent.run(user_text(turn), message_history=history)).all_messages()

    asyncio.run(go())
    return Arm(requests=seen, recall=_recall_server(capability.warden.manager) if capability else None)


def _recall_server(manager: Any) -> Callable[[str], str]:
    from contextwarden.integrations._retrieval import RetrievalServer

    return _recall(RetrievalServer(manager, lambda: "bench").serve)


# --------------------------------------------------------------------------- ADK


def run_adk(arm: str, plan_for: str, db: Path) -> Arm | None:
    if arm == "builtin":
        return None  # events compaction summarizes with an LLM: it does not run offline
    from google.adk.agents import LlmAgent
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.llm_response import LlmResponse
    from google.adk.runners import InMemoryRunner
    from google.genai import types

    from contextwarden.integrations.google_adk import ContextWardenCallbacks

    seen: list[dict[str, Any]] = []
    state = {"left": 0, "n": 0}

    class Recording(BaseLlm):
        async def generate_content_async(self, llm_request: Any, stream: bool = False) -> Any:
            body = {"contents": [c.model_dump(mode="json", exclude_none=True, by_alias=True) for c in llm_request.contents]}
            chat = _chat_of("gemini", body)
            chat["messages"].insert(0, {"role": "system", "content": SYSTEM})
            seen.append({**chat, "tools": TOOLS_CHAT})
            if state["left"]:
                state["left"] -= 1
                state["n"] += 1
                part = types.Part(function_call=types.FunctionCall(name="read_log", args={"path": f"b-{state['n'] - 1}.log"}))
            else:
                part = types.Part(text="turn done")
            yield LlmResponse(content=types.Content(role="model", parts=[part]))

    warden = ContextWardenCallbacks(SQLiteStore(db), model=plan_for) if arm == "contextwarden" else None
    callbacks = {"before_model_callback": warden.before_model, "after_model_callback": warden.after_model} if warden else {}
    agent = LlmAgent(name="b", model=Recording(model="r"), instruction=SYSTEM, tools=[read_log, *(warden.tools if warden else [])], **callbacks)
    runner = InMemoryRunner(agent=agent, app_name="bench")

    async def go() -> None:
        await runner.session_service.create_session(app_name="bench", user_id="u", session_id="bench")
        for turn in range(USER_TURNS):
            state["left"] = CALLS_PER_TURN
            message = types.Content(role="user", parts=[types.Part(text=user_text(turn))])
            async for _ in runner.run_async(user_id="u", session_id="bench", new_message=message):
                pass

    asyncio.run(go())
    return Arm(requests=seen, recall=_recall_server(warden.warden.manager) if warden else None)


TOOLS_CHAT = [{"type": "function", "function": t} for t in TOOLS]


# --------------------------------------------------------------------------- measuring


def _chat_of(fmt: str, body: dict[str, Any]) -> dict[str, Any]:
    """A request body of another format as OpenAI Chat messages, through the wire codecs."""
    parsed = get_codec(fmt).parse_request(body)  # type: ignore[arg-type]
    return {"messages": get_codec("openai_chat").render_request(parsed.to_context(), model="m")["messages"]}


def _recall(serve: Callable[[str, dict[str, Any]], str]) -> Callable[[str], str]:
    return lambda query: serve("recall", {"query": query})


def measure(arm: Arm, profile_name: str) -> dict[str, Any]:
    profile = get_profile(profile_name)
    meter = BlockMeter(best_counter())
    sim = CacheSimulator(profile)
    tokens, cost, read = [], 0.0, 0
    for n, body in enumerate(arm.requests):
        blocks = meter.blocks(body)
        priced = sim.observe(blocks, at=10.0 * n, output_tokens=30, breakpoints=(0, len(blocks) - 1))
        tokens.append(priced.input_tokens)
        cost += priced.cost_usd
        read += priced.cache_read_tokens
    last = json.dumps(arm.requests[-1]["messages"], ensure_ascii=False)
    in_context = [f for f in FACTS.values() if f in last]
    reachable = [f for f in FACTS.values() if f in last or (arm.recall and f in arm.recall(f.split(": ", 1)[1][:24]))]
    return {
        "calls": len(tokens),
        "mean_tokens_per_call": round(sum(tokens) / len(tokens)),
        "max_tokens_per_call": max(tokens),
        "total_input_tokens": sum(tokens),
        "cache_read_share": round(read / max(sum(tokens), 1), 3),
        "cost_usd": round(cost, 4),
        "calls_over_window": sum(1 for t in tokens if t > (profile.input_window or t)),
        "facts_in_context": len(in_context),
        "facts_reachable": len(reachable),
    }


def bench_mirror(messages: int = 2_000) -> dict[str, float]:
    """Milliseconds to mirror a ``messages``-long history: first time, again unchanged, one more, fresh process."""
    import time

    from contextwarden.log.events import AssistantMessage, Event, ToolCall, ToolResult, UserMessage
    from contextwarden.mirror import mirror_history

    def history(n: int) -> list[Event]:
        out: list[Event] = [UserMessage(text="Fix the build.")]
        for k in range(n // 2):
            call = ToolCall(id=f"c{k}", name="read_log", arguments={"path": f"b-{k}.log"})
            out += [AssistantMessage(tool_calls=(call,)), ToolResult(call_id=call.id, tool_name="read_log", output=tool_output(k % 5))]
        return out

    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        store = SQLiteStore(Path(tmp) / "m.db")
        for label, events, target in (
            ("first", history(messages), store),
            ("unchanged", history(messages), store),
            ("one_more", [*history(messages), UserMessage(text="next")], store),
            ("fresh_process", [*history(messages), UserMessage(text="next"), UserMessage(text="again")], SQLiteStore(Path(tmp) / "m.db")),
        ):
            start = time.perf_counter()
            mirror_history(target, "m", events)
            out[label] = round((time.perf_counter() - start) * 1000, 1)
    return out


RUNNERS: dict[str, Callable[[str, str, Path], Arm | None]] = {
    "langchain": run_langchain,
    "agents": run_agents,
    "pydantic_ai": run_pydantic_ai,
    "adk": run_adk,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frameworks", default=",".join(RUNNERS))
    parser.add_argument("--json", default="")
    parser.add_argument("--mirror", action="store_true", help="time mirror_history on a 2,000-message history")
    args = parser.parse_args()
    results: dict[str, Any] = {}
    if args.mirror:
        print("mirror_history ms:", bench_mirror())
        return
    with tempfile.TemporaryDirectory() as tmp:
        for framework in args.frameworks.split(","):
            for style, profile in PROFILES.items():
                for arm in ("none", "builtin", "contextwarden"):
                    ran = RUNNERS[framework](arm, profile, Path(tmp) / f"{framework}-{style}-{arm}.db")
                    if ran is None:
                        continue
                    row = measure(ran, profile)
                    results[f"{framework}/{style}/{arm}"] = row
                    print(f"{framework:12} {style:9} {arm:13} " + " ".join(f"{k}={v}" for k, v in row.items()), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps({"python": sys.version.split()[0], "results": results}, indent=2))


if __name__ == "__main__":
    main()
