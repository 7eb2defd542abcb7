"""contextwarden inside a Google ADK agent: a model-callback pair.

::

    from google.adk.agents import LlmAgent
    from contextwarden.integrations.google_adk import ContextWardenCallbacks

    warden = ContextWardenCallbacks("sessions.db")
    agent = LlmAgent(name="coder", model=model, tools=[*tools, *warden.tools],
                     before_model_callback=warden.before_model, after_model_callback=warden.after_model)

``before_model`` mirrors the request's contents into the session log and replaces the
``LlmRequest`` contents (and system instruction) with the projection; ADK builds each request anew
from its own session events, which stay untouched, so removing the callbacks leaves the agent's
history intact. ``after_model`` stores the model's answer and its usage. The session id is the one
given, else the ADK session's id. Contents travel as Gemini JSON through the wire codec.

Needs ``pip install 'contextwarden[google-adk]'``.
"""

from __future__ import annotations

from typing import Any

from ..assemble.manager import ContextManager, ContextPolicy
from ..log.events import UsageReport
from ..log.store import SessionStore
from ..models import ModelProfile
from ._core import Warden, fallback_warning
from ._retrieval import RetrievalServer

try:
    from google.adk.agents.callback_context import CallbackContext
    from google.adk.models.llm_request import LlmRequest
    from google.adk.models.llm_response import LlmResponse
    from google.adk.tools.function_tool import FunctionTool
    from google.genai import types
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("the ADK adapter needs google-adk: pip install 'contextwarden[google-adk]'") from exc

__all__ = ["ContextWardenCallbacks"]

_FRAMEWORK = "Google ADK"


class ContextWardenCallbacks:
    """``before_model_callback`` / ``after_model_callback`` that hand the model the projection."""

    def __init__(
        self,
        store: SessionStore | str | None = None,
        *,
        session_id: str | None = None,
        manager: ContextManager | None = None,
        policy: ContextPolicy | None = None,
        model: str | ModelProfile | None = None,
        retrieval: bool = True,
    ) -> None:
        """Keep the session in ``store``; ``session_id`` defaults to the ADK session's id."""
        self.warden = Warden(store, manager=manager, policy=policy, model=model, retrieval=retrieval)
        self.session_id = session_id
        self._current = ""
        self._sent: dict[str, dict[str, Any]] = {}
        server = RetrievalServer(self.warden.manager, lambda: self._current)
        self.tools: list[FunctionTool] = _tools(server) if retrieval else []
        """``read_range`` and ``recall`` as ADK tools: add them to the agent's ``tools``."""

    def before_model(self, callback_context: CallbackContext, llm_request: LlmRequest) -> LlmResponse | None:
        """Replace the request's contents with the projection (the original on any failure)."""
        try:
            session_id = self.session_id or callback_context.session.id
            self._current = session_id
            body = _body(llm_request)
            self._sent[session_id] = body
            projected = self.warden.project(session_id, "gemini", body, model=llm_request.model or "")
            llm_request.contents = [types.Content.model_validate(c) for c in projected.body.get("contents", [])]
            system = projected.body.get("systemInstruction") or projected.body.get("system_instruction")
            llm_request.config.system_instruction = types.Content.model_validate(system) if system else None
        except Exception as exc:  # any failure of ours must not stop the agent
            fallback_warning(_FRAMEWORK, exc)
        return None

    def after_model(self, callback_context: CallbackContext, llm_response: LlmResponse) -> LlmResponse | None:
        """Store the model's answer and usage now, so the log is complete when the run ends."""
        session_id = self.session_id or callback_context.session.id
        body = self._sent.pop(session_id, None)
        if body is None or llm_response.content is None or llm_response.partial:
            return None
        try:
            answer = llm_response.content.model_dump(mode="json", exclude_none=True, by_alias=True)
            self.warden.mirror(session_id, "gemini", {**body, "contents": [*body["contents"], answer]})
            usage = llm_response.usage_metadata
            if usage is not None and usage.prompt_token_count:
                self.warden.record_usage(
                    session_id,
                    UsageReport(
                        input_tokens=usage.prompt_token_count,
                        output_tokens=usage.candidates_token_count or 0,
                        cache_read_tokens=usage.cached_content_token_count or 0,
                        model=llm_response.model_version or "",
                    ),
                )
        except Exception as exc:  # bookkeeping only: the agent has its answer
            fallback_warning(_FRAMEWORK, exc)
        return None


def _body(request: LlmRequest) -> dict[str, Any]:
    """The request as a Gemini ``generateContent`` body."""
    body: dict[str, Any] = {
        "contents": [
            _text_results(c.model_dump(mode="json", exclude_none=True, by_alias=True)) for c in request.contents
        ]
    }
    system = request.config.system_instruction
    if isinstance(system, str):
        body["systemInstruction"] = {"parts": [{"text": system}]}
    elif isinstance(system, types.Content):
        body["systemInstruction"] = system.model_dump(mode="json", exclude_none=True, by_alias=True)
    declarations = [
        d.model_dump(mode="json", exclude_none=True, by_alias=True)
        for tool in request.config.tools or ()
        if isinstance(tool, types.Tool)
        for d in tool.function_declarations or ()
    ]
    if declarations:
        body["tools"] = [{"functionDeclarations": declarations}]
    return body


def _text_results(content: dict[str, Any]) -> dict[str, Any]:
    """The content with ADK's ``{"result": text}`` tool answers as Gemini's ``{"output": text}``.

    ADK wraps a tool's plain return value as ``{"result": value}``; read as a generic object it would
    be stored as one line of JSON, so a long text output could not be bounded, masked or read back
    by line. The model then sees ``output`` as the key, the name the Gemini API documents.
    """
    for part in content.get("parts") or ():
        response = (part.get("functionResponse") or {}).get("response")
        if isinstance(response, dict) and set(response) == {"result"} and isinstance(response["result"], str):
            part["functionResponse"]["response"] = {"output": response["result"]}
    return content


def _tools(server: RetrievalServer) -> list[FunctionTool]:
    def read_range(artifact_id: str, start_line: int, end_line: int) -> str:
        """Read lines of a stored artifact (a tool output that was truncated or removed from your context)."""
        return server.serve("read_range", {"artifact_id": artifact_id, "start_line": start_line, "end_line": end_line})

    def recall(query: str) -> str:
        """Search this session's earlier history, including parts no longer in your context."""
        return server.serve("recall", {"query": query})

    return [FunctionTool(read_range), FunctionTool(recall)]
