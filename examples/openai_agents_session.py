"""contextwarden in an OpenAI Agents SDK run. Offline: python examples/openai_agents_session.py
With a local OpenAI-compatible server: CONTEXTWARDEN_LLM_URL=http://127.0.0.1:8765/v1 python ..."""

import asyncio
import os

from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool, set_tracing_disabled
from openai import AsyncOpenAI

from contextwarden.integrations.openai_agents import ContextWardenSession
from contextwarden.integrations.testing import agents_model
from contextwarden.models import ModelProfile


@function_tool
def read_log(path: str) -> str:
    """Read a build log."""
    return "\n".join(f"{path} line {n}: ok" for n in range(400))


async def main() -> None:
    set_tracing_disabled(True)
    if url := os.environ.get("CONTEXTWARDEN_LLM_URL"):
        model = OpenAIChatCompletionsModel(model="local", openai_client=AsyncOpenAI(base_url=url, api_key="local"))
        plan_for: ModelProfile | str = ModelProfile(name="local", context_window=2048, max_output_tokens=64)
    else:
        model = agents_model([("read_log", {"path": f"b{n}.log"}) for n in range(8)], final="Done.")
        plan_for = "gpt-4o"
    session = ContextWardenSession("agents-demo", "example-sessions.db", model=plan_for)
    agent = Agent(name="builder", instructions="Find the bug.", model=model, tools=[read_log, *session.tools])
    result = await Runner.run(agent, "Why does the build fail?", session=session, run_config=session.run_config())
    print(result.final_output)
    print("inspect it: contextwarden inspect agents-demo --store example-sessions.db")


asyncio.run(main())
