"""Scripted models for each framework, to run an agent with an adapter offline (examples, your own tests).

Each function takes a script, ``[(tool_name, arguments), ...]`` tool calls made one per model call,
and the ``final`` text said after the last one, and returns that framework's own kind of model. Each
imports only its framework, when called.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from typing import Any

Step = tuple[str, dict[str, Any]]
"""One scripted tool call: the tool's name and its arguments."""

# Call ids stay unique across scripted models, as a real model's are: frameworks pair and
# de-duplicate items by call id across a whole session.
_CALL_IDS = itertools.count(1)


def langchain_model(calls: Sequence[Step], *, final: str) -> Any:
    """A LangChain ``GenericFakeChatModel`` that accepts ``bind_tools`` (``create_agent`` binds tools)."""
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage

    class ToolCallingFakeModel(GenericFakeChatModel):
        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

    answers = [
        AIMessage(content="", tool_calls=[{"id": f"call_{next(_CALL_IDS)}", "name": name, "args": args}])
        for name, args in calls
    ]
    return ToolCallingFakeModel(messages=iter([*answers, AIMessage(content=final)]))


def agents_model(calls: Sequence[Step], *, final: str) -> Any:
    """An Agents SDK ``Model`` answering from the script (no streaming)."""
    from agents import Model, ModelResponse
    from agents.usage import Usage
    from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

    script = list(calls)

    class ScriptedModel(Model):
        async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
            item: Any
            if script:
                name, arguments = script.pop(0)
                item = ResponseFunctionToolCall(
                    type="function_call", call_id=f"call_{next(_CALL_IDS)}", name=name, arguments=json.dumps(arguments)
                )
            else:
                text = ResponseOutputText(type="output_text", text=final, annotations=[])
                item = ResponseOutputMessage(
                    id="msg_final", type="message", role="assistant", status="completed", content=[text]
                )
            return ModelResponse(output=[item], usage=Usage(requests=1), response_id=None)

        def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
            raise NotImplementedError("the scripted model does not stream")

    return ScriptedModel()


def pydantic_ai_model(calls: Sequence[Step], *, final: str) -> Any:
    """A pydantic-ai ``FunctionModel`` answering from the script."""
    from pydantic_ai import messages as pm
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    script = list(calls)

    def answer(messages: list[pm.ModelMessage], info: AgentInfo) -> pm.ModelResponse:
        if script:
            name, arguments = script.pop(0)
            return pm.ModelResponse(parts=[pm.ToolCallPart(tool_name=name, args=arguments)])
        return pm.ModelResponse(parts=[pm.TextPart(content=final)])

    return FunctionModel(answer)


def adk_model(calls: Sequence[Step], *, final: str) -> Any:
    """A Google ADK ``BaseLlm`` answering from the script."""
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.llm_response import LlmResponse
    from google.genai import types

    script = list(calls)

    class ScriptedLlm(BaseLlm):
        async def generate_content_async(
            self, llm_request: Any, stream: bool = False
        ) -> AsyncGenerator[LlmResponse, None]:
            if script:
                name, arguments = script.pop(0)
                part = types.Part(function_call=types.FunctionCall(name=name, args=arguments))
            else:
                part = types.Part(text=final)
            yield LlmResponse(content=types.Content(role="model", parts=[part]))

    return ScriptedLlm(model="scripted")
