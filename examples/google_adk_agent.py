"""contextwarden in a Google ADK agent. Offline: python examples/google_adk_agent.py
With a local OpenAI-compatible server (through LiteLlm): CONTEXTWARDEN_LLM_URL=http://127.0.0.1:8765/v1 python ..."""

import os

from google.adk.agents import LlmAgent
from google.adk.runners import InMemoryRunner
from google.genai import types

from contextwarden.integrations.google_adk import ContextWardenCallbacks
from contextwarden.integrations.testing import adk_model
from contextwarden.models import ModelProfile


def read_log(path: str) -> str:
    """Read a build log."""
    return "\n".join(f"{path} line {n}: ok" for n in range(400))


if url := os.environ.get("CONTEXTWARDEN_LLM_URL"):
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # litellm fetches prices online otherwise
    from google.adk.models.lite_llm import LiteLlm

    model = LiteLlm(model="openai/local", api_base=url, api_key="local", max_tokens=64)
    plan_for: ModelProfile | str = ModelProfile(name="local", context_window=2048, max_output_tokens=64)
else:  # offline: a scripted model that reads eight logs
    model, plan_for = adk_model([("read_log", {"path": f"b{n}.log"}) for n in range(8)], final="Done."), "gpt-4o"
warden = ContextWardenCallbacks("example-sessions.db", model=plan_for)
agent = LlmAgent(name="builder", model=model, instruction="Find the bug.", tools=[read_log, *warden.tools],
                 before_model_callback=warden.before_model, after_model_callback=warden.after_model)
runner = InMemoryRunner(agent=agent, app_name="demo")
runner.session_service.create_session_sync(app_name="demo", user_id="me", session_id="adk-demo")
question = types.Content(role="user", parts=[types.Part(text="Why does the build fail?")])
for event in runner.run(user_id="me", session_id="adk-demo", new_message=question):
    if event.is_final_response() and event.content:
        print(event.content.parts[0].text)
print("inspect it: contextwarden inspect adk-demo --store example-sessions.db")
