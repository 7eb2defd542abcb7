"""contextwarden inside a LangChain v1 agent: one middleware for ``create_agent``.

::

    from langchain.agents import create_agent
    from contextwarden.integrations.langchain import ContextWardenMiddleware

    agent = create_agent(model, tools=tools, middleware=[ContextWardenMiddleware("sessions.db")])

On every model call the middleware mirrors the agent state's messages into the session log and
replaces the *request's* messages with the projection (``wrap_model_call``). The agent's own
state keeps every message, so removing the middleware leaves a working agent with its full
history. The retrieval tools ``read_range`` and ``recall`` are registered as real LangChain tools,
served from the store. The session id is the one given, else the run's LangGraph ``thread_id``.

Needs ``pip install 'contextwarden[langchain]'``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from ..assemble.manager import ContextManager, ContextPolicy
from ..log.events import UsageReport
from ..log.store import SessionStore
from ..models import ModelProfile
from ._core import Warden, fallback_warning
from ._retrieval import RetrievalServer

try:
    from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
    from langchain_core.messages import (
        AIMessage,
        BaseMessage,
        SystemMessage,
        convert_to_messages,
        convert_to_openai_messages,
    )
    from langchain_core.tools import BaseTool, StructuredTool
    from langchain_core.utils.function_calling import convert_to_openai_tool
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("the LangChain adapter needs LangChain 1.x: pip install 'contextwarden[langchain]'") from exc

__all__ = ["ContextWardenMiddleware"]

_FRAMEWORK = "LangChain"


class ContextWardenMiddleware(AgentMiddleware):
    """Hands each model call of a ``create_agent`` agent the projection of its session log."""

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
        """Keep the session in ``store`` (see :class:`~contextwarden.integrations._core.Warden`).

        ``session_id`` names the session; without one, each run's LangGraph ``thread_id`` does
        (a run with neither is refused, and its request goes out unchanged).
        """
        super().__init__()
        self.warden = Warden(store, manager=manager, policy=policy, model=model, retrieval=retrieval)
        self.session_id = session_id
        self.retrieval = RetrievalServer(self.warden.manager, self._current_session)
        self.tools = [_tool(name, self.retrieval) for name in self.retrieval.names] if retrieval else []
        self.last_session_id = ""

    # ------------------------------------------------------------------ hooks

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> Any:
        """Send the projection instead of the agent's messages (the original on any failure)."""
        response = handler(self._projected_or_original(request))
        self._record(request, response)
        return response

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> Any:
        """The async twin of :meth:`wrap_model_call`."""
        response = await handler(self._projected_or_original(request))
        self._record(request, response)
        return response

    # ------------------------------------------------------------------ projection

    def _projected_or_original(self, request: ModelRequest[Any]) -> ModelRequest[Any]:
        try:
            return self._project(request)
        except Exception as exc:  # any failure of ours must not stop the agent
            fallback_warning(_FRAMEWORK, exc)
            return request

    def _project(self, request: ModelRequest[Any]) -> ModelRequest[Any]:
        self.last_session_id = ""
        session_id = self._session_for_run()
        name = _model_name(request.model)
        body = {
            "model": name,
            "messages": convert_to_openai_messages(self._history(request)),
            "tools": [convert_to_openai_tool(t) for t in request.tools],
        }
        projected = self.warden.project(
            session_id, "openai_chat", body, model=name, context_window=_window(request.model)
        )
        system, messages = _split_system(projected.body["messages"])
        offered = {t.name for t in projected.context.tools}
        tools = [t for t in request.tools if _tool_name(t) in offered or not _tool_name(t)]
        return request.override(
            messages=convert_to_messages(messages),  # type: ignore[arg-type]
            system_message=SystemMessage(content=system) if system else None,
            tools=tools,
        )

    def _record(self, request: ModelRequest[Any], response: Any) -> None:
        """Store the model's answer and usage now, so the log is complete when the run ends."""
        if not self.last_session_id:
            return
        answer = [m for m in getattr(response, "result", [response]) if isinstance(m, AIMessage)]
        try:
            body = {
                "model": _model_name(request.model),
                "messages": convert_to_openai_messages(self._history(request) + answer),
            }
            self.warden.mirror(self.last_session_id, "openai_chat", body)
            usage = answer[-1].usage_metadata if answer else None
            if usage and usage.get("input_tokens"):
                details = usage.get("input_token_details") or {}
                self.warden.record_usage(
                    self.last_session_id,
                    UsageReport(
                        input_tokens=usage["input_tokens"],
                        output_tokens=usage.get("output_tokens", 0),
                        cache_read_tokens=details.get("cache_read", 0) or 0,
                        cache_write_tokens=details.get("cache_creation", 0) or 0,
                        model=_model_name(request.model),
                    ),
                )
        except Exception as exc:  # bookkeeping only: the agent has its answer
            fallback_warning(_FRAMEWORK, exc)

    @staticmethod
    def _history(request: ModelRequest[Any]) -> list[BaseMessage]:
        history: list[BaseMessage] = [request.system_message] if request.system_message else []
        return history + list(request.messages)

    def _session_for_run(self) -> str:
        session_id = self.session_id or _thread_id()
        if not session_id:
            raise ValueError("no session id: pass session_id= or run the agent with a thread_id in its config")
        self.last_session_id = session_id
        return session_id

    def _current_session(self) -> str:
        return self.session_id or _thread_id() or self.last_session_id


def _tool(name: str, server: RetrievalServer) -> BaseTool:
    spec = server.spec(name)

    def run(**arguments: Any) -> str:
        return server.serve(name, arguments)

    return StructuredTool.from_function(
        func=run, name=spec.name, description=spec.description, args_schema=dict(spec.parameters)
    )


def _thread_id() -> str:
    try:
        from langgraph.config import get_config

        configurable = get_config().get("configurable") or {}
    except RuntimeError:  # called outside a LangGraph run
        return ""
    return str(configurable.get("thread_id") or "")


def _model_name(model: Any) -> str:
    for attribute in ("model_name", "model", "model_id"):
        value = getattr(model, attribute, None)
        if isinstance(value, str) and value:
            return value
    return ""


def _window(model: Any) -> int | None:
    profile = getattr(model, "profile", None)
    window = profile.get("max_input_tokens") if isinstance(profile, dict) else None
    return window if isinstance(window, int) else None


def _tool_name(tool: Any) -> str:
    if isinstance(tool, BaseTool):
        return tool.name
    try:
        function = convert_to_openai_tool(tool).get("function") or {}
    except (TypeError, ValueError):
        return ""
    return str(function.get("name", ""))


def _split_system(messages: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    """The leading system text and the rest (LangChain keeps the system message apart)."""
    lead = 0
    while lead < len(messages) and messages[lead].get("role") in ("system", "developer"):
        lead += 1
    system = "\n\n".join(str(m.get("content") or "") for m in messages[:lead])
    return system, messages[lead:]
