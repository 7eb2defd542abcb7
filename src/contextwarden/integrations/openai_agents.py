"""contextwarden inside the OpenAI Agents SDK: an input filter and a store-backed ``Session``.

::

    from agents import Agent, RunConfig, Runner
    from contextwarden.integrations.openai_agents import ContextWardenSession

    session = ContextWardenSession("ticket-42", "sessions.db")
    agent = Agent(name="coder", instructions="...", tools=[*my_tools, *session.tools])
    await Runner.run(agent, "Fix the test", session=session, run_config=session.run_config())

:class:`ContextWardenFilter` is a ``RunConfig.call_model_input_filter``: before each model call it
mirrors the run's input items into the session log and returns the projection as the model input.
The filter is handed no tools, so it reads them from the agent. :class:`ContextWardenSession`
keeps the SDK's own history in the same log (SQLite or PostgreSQL): ``pop_item`` and
``clear_session`` are recorded as window events, never deletions. Reasoning items with encrypted
content pass through verbatim (the Responses codec keeps them as opaque items).

Needs ``pip install 'contextwarden[openai-agents]'``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..assemble.manager import ContextManager, ContextPolicy
from ..errors import SessionNotFound
from ..log.events import Event, Instruction
from ..log.store import SessionStore
from ..mirror import mirror_history, mirrored_events
from ..models import ModelProfile
from ..wire import ParsedRequest, WireFormat, get_codec
from ._core import Warden, fallback_warning
from ._retrieval import RetrievalServer

try:
    from agents import Agent, FunctionTool, RunConfig, RunContextWrapper
    from agents.run_config import CallModelData, ModelInputData
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("the Agents SDK adapter needs openai-agents: pip install 'contextwarden[openai-agents]'") from exc

__all__ = ["ContextWardenFilter", "ContextWardenSession"]

_FRAMEWORK = "OpenAI Agents SDK"
_FORMAT: WireFormat = "openai_responses"


class ContextWardenFilter:
    """A ``call_model_input_filter`` that hands the model the projection of the session log."""

    def __init__(
        self,
        store: SessionStore | str | None = None,
        *,
        session_id: str,
        manager: ContextManager | None = None,
        policy: ContextPolicy | None = None,
        model: str | ModelProfile | None = None,
        retrieval: bool = True,
    ) -> None:
        """Mirror into ``store`` under ``session_id`` (the SDK's filter sees no run id of its own)."""
        self.warden = Warden(store, manager=manager, policy=policy, model=model, retrieval=retrieval)
        self.session_id = session_id
        server = RetrievalServer(self.warden.manager, lambda: self.session_id)
        self.tools: list[FunctionTool] = [_tool(n, server) for n in server.names] if retrieval else []
        """``read_range`` and ``recall`` as SDK tools: add them to the agent's ``tools``."""
        self.instructions: tuple[Instruction, ...] | None = None
        """The agent's instructions as the last call mirrored them (None before the first call)."""

    def __call__(self, data: CallModelData[Any]) -> ModelInputData:
        """The projected input for this model call, or the run's own on any failure."""
        try:
            return self._project(data)
        except Exception as exc:  # any failure of ours must not stop the run
            fallback_warning(_FRAMEWORK, exc)
            return data.model_data

    def _project(self, data: CallModelData[Any]) -> ModelInputData:
        agent = data.agent
        name = _model_name(agent)
        body: dict[str, Any] = {"model": name, "input": list(data.model_data.input)}
        if data.model_data.instructions:
            body["instructions"] = data.model_data.instructions
        body["tools"] = [_tool_schema(t) for t in agent.tools if isinstance(t, FunctionTool)]
        projected = self.warden.project(self.session_id, _FORMAT, body, model=name)
        self.instructions = projected.mirrored_instructions
        return ModelInputData(input=projected.body["input"], instructions=projected.body.get("instructions"))


class ContextWardenSession:
    """An Agents SDK ``Session`` whose history lives in a contextwarden store.

    The SDK's items are mirrored as events (what the filter mirrors matches them, so nothing is
    stored twice); ``get_items`` renders the log's history back as Responses items.
    """

    session_settings: Any = None

    def __init__(
        self,
        session_id: str,
        store: SessionStore | str | None = None,
        *,
        manager: ContextManager | None = None,
        policy: ContextPolicy | None = None,
        model: str | ModelProfile | None = None,
        retrieval: bool = True,
    ) -> None:
        """The session ``session_id`` in ``store``; the other options configure :attr:`input_filter`."""
        self.session_id = session_id
        self.input_filter = ContextWardenFilter(
            store, session_id=session_id, manager=manager, policy=policy, model=model, retrieval=retrieval
        )
        self.store = self.input_filter.warden.store
        self.tools = self.input_filter.tools
        self._items: list[Any] | None = None
        self._deferred = False

    def run_config(self, **settings: Any) -> RunConfig:
        """A ``RunConfig`` with this session's input filter (``settings`` go to ``RunConfig``)."""
        return RunConfig(call_model_input_filter=self.input_filter, **settings)

    async def get_items(self, limit: int | None = None) -> list[Any]:
        """The history (the newest ``limit`` items when given), oldest first."""
        items = self._history()
        return list(items[-limit:] if limit else items)

    async def add_items(self, items: list[Any]) -> None:
        """Append ``items`` to the history (only what the log does not hold yet is stored)."""
        history = self._history()
        history.extend(items)
        if self.input_filter.instructions is None and not self._deferred:
            # The SDK stores a run's input before the first model call, when the agent's
            # instructions are not known yet; mirroring it then would make the filter's first
            # call (instructions first) look like an edit. The next add, or that call, stores it.
            self._deferred = True
            return
        mirror_history(self.store, self.session_id, self._events(history))

    async def pop_item(self) -> Any | None:
        """Remove the newest item from the history: recorded as a window event, the log keeps it."""
        history = self._history()
        if not history:
            return None
        item = history.pop()
        mirror_history(self.store, self.session_id, self._events(history), exact=True)
        return item

    async def clear_session(self) -> None:
        """Start the history over (a window event; the log keeps what was said)."""
        self._items = []
        mirror_history(self.store, self.session_id, [], exact=True)

    def _history(self) -> list[Any]:
        if self._items is None:
            try:
                events = mirrored_events(self.store, self.session_id)
            except SessionNotFound:
                events = []
            lead = next((n for n, e in enumerate(events) if not isinstance(e, Instruction)), len(events))
            if self.input_filter.instructions is None and lead:
                self.input_filter.instructions = tuple(e for e in events[:lead] if isinstance(e, Instruction))
            parsed = ParsedRequest(format=_FORMAT, model="", instructions=(), events=tuple(events[lead:]))
            self._items = list(get_codec(_FORMAT).render_request(parsed.to_context(), model="-")["input"])
        return self._items

    def _events(self, items: Sequence[Any]) -> list[Event]:
        """The items as the filter mirrors them: the agent's instructions first, so both agree."""
        parsed = get_codec(_FORMAT).parse_request({"model": "", "input": list(items)})
        return [*(self.input_filter.instructions or ()), *parsed.instructions, *parsed.events]


def _tool(name: str, server: RetrievalServer) -> FunctionTool:
    spec = server.spec(name)

    async def invoke(_ctx: RunContextWrapper[Any], arguments: str) -> str:
        parsed = json.loads(arguments or "{}")
        return server.serve(name, parsed if isinstance(parsed, dict) else {})

    return FunctionTool(
        name=spec.name,
        description=spec.description,
        params_json_schema=dict(spec.parameters),
        on_invoke_tool=invoke,
        strict_json_schema=False,
    )


def _tool_schema(tool: FunctionTool) -> dict[str, Any]:
    return {
        "type": "function",
        "name": tool.name,
        "description": tool.description,
        "parameters": tool.params_json_schema,
    }


def _model_name(agent: Agent[Any]) -> str:
    model = agent.model
    if isinstance(model, str):
        return model
    name = getattr(model, "model", None)
    return name if isinstance(name, str) else ""
