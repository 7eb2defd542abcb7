"""contextwarden in a Google ADK agent, offline: python examples/google_adk_agent.py
(ADK reaches OpenAI-compatible servers such as the local model only through LiteLlm: pip install litellm,
then use LiteLlm(model="openai/local", api_base=os.environ["CONTEXTWARDEN_LLM_URL"]) as the model.)"""

import asyncio

from google.adk.agents import LlmAgent
from google.adk.runners import InMemoryRunner
from google.genai import types

from contextwarden.integrations.google_adk import ContextWardenCallbacks
from contextwarden.integrations.testing import adk_model


def read_log(path: str) -> str:
    """Read a build log."""
    return "\n".join(f"{path} line {n}: ok" for n in range(400))


async def main() -> None:
    warden = ContextWardenCallbacks("example-sessions.db", model="gpt-4o")
    model = adk_model([("read_log", {"path": f"b{n}.log"}) for n in range(8)], final="Done.")
    agent = LlmAgent(name="builder", model=model, instruction="Find the bug.", tools=[read_log, *warden.tools],
                     before_model_callback=warden.before_model, after_model_callback=warden.after_model)
    runner = InMemoryRunner(agent=agent, app_name="demo")
    await runner.session_service.create_session(app_name="demo", user_id="me", session_id="adk-demo")
    question = types.Content(role="user", parts=[types.Part(text="Why does the build fail?")])
    async for event in runner.run_async(user_id="me", session_id="adk-demo", new_message=question):
        if event.is_final_response() and event.content:
            print(event.content.parts[0].text)
    print("inspect it: contextwarden inspect adk-demo --store example-sessions.db")


asyncio.run(main())
