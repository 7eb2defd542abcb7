"""contextwarden in a pydantic-ai agent. Offline: python examples/pydantic_ai_agent.py
With a local OpenAI-compatible server: CONTEXTWARDEN_LLM_URL=http://127.0.0.1:8765/v1 python ..."""

import os

from pydantic_ai import Agent

from contextwarden.integrations.pydantic_ai import ContextWarden
from contextwarden.integrations.testing import pydantic_ai_model
from contextwarden.models import ModelProfile

if url := os.environ.get("CONTEXTWARDEN_LLM_URL"):
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    model = OpenAIChatModel("local", provider=OpenAIProvider(base_url=url, api_key="local"))
    plan_for: ModelProfile | str = ModelProfile(name="local", context_window=2048, max_output_tokens=64)
else:  # offline: pydantic-ai's FunctionModel, scripted to read eight logs
    model = pydantic_ai_model([("read_log", {"path": f"b{n}.log"}) for n in range(8)], final="Done.")
    plan_for = "gpt-4o"

warden = ContextWarden(store="example-sessions.db", session_id="pydantic-ai-demo", model=plan_for)
agent = Agent(model, system_prompt="Find the bug.", capabilities=[warden])


@agent.tool_plain
def read_log(path: str) -> str:
    """Read a build log."""
    return "\n".join(f"{path} line {n}: ok" for n in range(400))


result = agent.run_sync("Why does the build fail?")
print(result.output, f"({len(result.all_messages())} messages kept by pydantic-ai itself)")
print("inspect it: contextwarden inspect pydantic-ai-demo --store example-sessions.db")
