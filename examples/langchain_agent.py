"""contextwarden in a LangChain v1 agent. Offline: python examples/langchain_agent.py
With a local OpenAI-compatible server: CONTEXTWARDEN_LLM_URL=http://127.0.0.1:8765/v1 python ..."""

import os

from langchain.agents import create_agent
from langchain_core.tools import tool

from contextwarden.integrations.langchain import ContextWardenMiddleware
from contextwarden.integrations.testing import langchain_model
from contextwarden.models import ModelProfile


@tool
def read_log(path: str) -> str:
    """Read a build log."""
    return "\n".join(f"{path} line {n}: ok" for n in range(400))


if url := os.environ.get("CONTEXTWARDEN_LLM_URL"):
    from langchain_openai import ChatOpenAI

    model = ChatOpenAI(base_url=url, api_key="local", model="local", max_tokens=64)
    plan_for: ModelProfile | str = ModelProfile(name="local", context_window=2048, max_output_tokens=64)
else:  # offline: LangChain's fake chat model, scripted to read eight logs
    model = langchain_model([("read_log", {"path": f"b{n}.log"}) for n in range(8)], final="Done.")
    plan_for = "gpt-4o"

warden = ContextWardenMiddleware("example-sessions.db", session_id="langchain-demo", model=plan_for)
agent = create_agent(model, tools=[read_log], middleware=[warden])
result = agent.invoke({"messages": [{"role": "user", "content": "Why does the build fail?"}]})
print(result["messages"][-1].content)
print("inspect it: contextwarden inspect langchain-demo --store example-sessions.db")
