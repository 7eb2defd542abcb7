"""contextwarden inside a pydantic-ai 2.x agent: one capability.

::

    from pydantic_ai import Agent
    from contextwarden.integrations.pydantic_ai import ContextWarden

    agent = Agent(model, tools=tools, capabilities=[ContextWarden("sessions.db")])

pydantic-ai 2.x has no ``history_processors=``; its hook is a capability's
``before_model_request``. The stock ``ProcessHistory`` capability also overwrites the run's own
history with what it returns; this one changes only the request (``request_context.messages``), so
``result.all_messages()`` keeps every message while the model sees the projection, and removing the
capability leaves a working agent. ``after_model_request`` records the provider's usage, which
anchors the next size estimate. ``read_range`` and ``recall`` are registered as a real toolset. The
session id is the one given, else the run's ``conversation_id``, else its ``run_id``.

Messages travel as OpenAI Chat dicts through contextwarden's wire codec. A part kind this module
does not know makes the request go out unchanged, with a warning.

Needs ``pip install 'contextwarden[pydantic-ai]'``.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..assemble.manager import ContextManager, ContextPolicy
from ..log.events import AssistantMessage, Instruction, ToolResult, UsageReport, UserMessage
from ..log.store import SessionStore
from ..models import ModelProfile
from ..wire import get_codec
from ._core import Warden, fallback_warning
from ._retrieval import RetrievalServer

try:
    from pydantic_ai import RunContext
    from pydantic_ai import messages as pm
    from pydantic_ai.capabilities import AbstractCapability
    from pydantic_ai.models import ModelRequestContext
    from pydantic_ai.toolsets import FunctionToolset
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "the pydantic-ai adapter needs pydantic-ai 2.x: pip install 'contextwarden[pydantic-ai]'"
    ) from exc

__all__ = ["ContextWarden", "UnsupportedPart"]

_FRAMEWORK = "pydantic-ai"
# Parts that steer the framework itself and carry nothing the model reads as conversation.
_BOOKKEEPING = frozenset(
    {
        "instruction-delta",
        "instruction-baseline",
        "tool-availability-delta",
        "capability-load-delta",
        "model-settings-delta",
    }
)


class UnsupportedPart(ValueError):
    """A message part this adapter cannot convert (the request then goes out unchanged)."""


@dataclass
class ContextWarden(AbstractCapability[Any]):
    """A capability that hands each model request the projection of the session log."""

    store: SessionStore | str | None = None
    """Where sessions live: a store, a store URL, or ``None`` for the default SQLite file."""
    session_id: str | None = None
    """The session; ``None`` uses the run's ``conversation_id`` (or ``run_id``)."""
    manager: ContextManager | None = None
    """A manager to share (its store wins over ``store``)."""
    policy: ContextPolicy | None = None
    """What the model sees (defaults to the manager's)."""
    model: str | ModelProfile | None = None
    """The profile to plan for (default: looked up from the run's model name)."""
    retrieval: bool = True
    """Register ``read_range``/``recall``; off, no placeholder names them."""
    warden: Warden = field(init=False, repr=False)
    _session: str = field(default="", init=False, repr=False)
    _sent: dict[str, list[pm.ModelMessage]] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        """Open the store and the manager once, when the capability is made."""
        self.warden = Warden(
            self.store, manager=self.manager, policy=self.policy, model=self.model, retrieval=self.retrieval
        )

    def get_toolset(self) -> FunctionToolset[Any] | None:
        """``read_range`` and ``recall`` served from the store (none when retrieval is off)."""
        if not self.retrieval:
            return None
        server = RetrievalServer(self.warden.manager, lambda: self._session)
        toolset: FunctionToolset[Any] = FunctionToolset()

        def read_range(artifact_id: str, start_line: int, end_line: int) -> str:
            return server.serve(
                "read_range", {"artifact_id": artifact_id, "start_line": start_line, "end_line": end_line}
            )

        def recall(query: str) -> str:
            return server.serve("recall", {"query": query})

        for func in (read_range, recall):
            toolset.add_function(func, name=func.__name__, description=server.spec(func.__name__).description)
        return toolset

    async def before_model_request(
        self, ctx: RunContext[Any], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        """Replace the request's messages (never the run's history) with the projection."""
        self._sent[ctx.run_id or ""] = list(request_context.messages)
        try:
            request_context.messages = self._project(ctx, request_context)
        except Exception as exc:  # any failure of ours must not stop the run
            fallback_warning(_FRAMEWORK, exc)
        return request_context

    async def after_model_request(
        self, ctx: RunContext[Any], *, request_context: ModelRequestContext, response: pm.ModelResponse
    ) -> pm.ModelResponse:
        """Store the model's answer now, and the provider's usage (it anchors the next estimate)."""
        history = self._sent.pop(ctx.run_id or "", None)
        if not self._session or history is None:
            return response
        try:
            self.warden.mirror(self._session, "openai_chat", {"model": "", "messages": to_chat([*history, response])})
        except Exception as exc:  # bookkeeping only: the run has its answer
            fallback_warning(_FRAMEWORK, exc)
        usage = response.usage
        if usage.input_tokens:
            try:
                self.warden.record_usage(
                    self._session,
                    UsageReport(
                        input_tokens=usage.input_tokens,
                        output_tokens=usage.output_tokens,
                        cache_read_tokens=usage.cache_read_tokens,
                        cache_write_tokens=usage.cache_write_tokens,
                        model=response.model_name or "",
                    ),
                )
            except Exception as exc:  # usage is bookkeeping: never fail the run for it
                fallback_warning(_FRAMEWORK, exc)
        return response

    def _project(self, ctx: RunContext[Any], request_context: ModelRequestContext) -> list[pm.ModelMessage]:
        self._session = ""
        session_id = self.session_id or ctx.conversation_id or ctx.run_id
        if not session_id:
            raise ValueError("no session id: pass session_id= or run with a conversation_id")
        self._session = session_id
        name = request_context.model.model_name
        params = request_context.model_request_parameters
        body = {
            "model": name,
            "messages": to_chat(request_context.messages),
            "tools": [
                {
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description or "",
                        "parameters": t.parameters_json_schema,
                    },
                }
                for t in params.function_tools
            ],
        }
        projected = self.warden.project(session_id, "openai_chat", body, model=name)
        return from_chat(projected.body)


# --------------------------------------------------------------------------- pydantic-ai -> chat


def to_chat(messages: list[pm.ModelMessage]) -> list[dict[str, Any]]:
    """pydantic-ai messages as OpenAI Chat messages (raises :class:`UnsupportedPart`)."""
    out: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, pm.ModelRequest):
            for part in message.parts:
                converted = _request_part(part)
                if converted is not None:
                    out.append(converted)
        else:
            out.append(_response(message))
    return out


def _request_part(part: Any) -> dict[str, Any] | None:
    if isinstance(part, pm.SystemPromptPart):
        return {"role": "system", "content": part.content}
    if isinstance(part, pm.UserPromptPart):
        return {"role": "user", "content": _user_content(part.content)}
    if isinstance(part, pm.ToolReturnPart):
        return {"role": "tool", "tool_call_id": part.tool_call_id, "content": part.model_response_str()}
    if isinstance(part, pm.RetryPromptPart):
        if part.tool_name:
            return {"role": "tool", "tool_call_id": part.tool_call_id, "content": part.model_response()}
        return {"role": "user", "content": part.model_response()}
    if isinstance(part, pm.RetryFeedbackPart):
        return {"role": "user", "content": part.model_response()}
    if getattr(part, "part_kind", "") in _BOOKKEEPING:
        return None
    raise UnsupportedPart(f"pydantic-ai request part {type(part).__name__} is not supported")


def _user_content(content: Any) -> Any:
    if isinstance(content, str):
        return content
    parts: list[dict[str, Any]] = []
    for item in content:
        if isinstance(item, str):
            parts.append({"type": "text", "text": item})
        elif isinstance(item, pm.ImageUrl):
            parts.append({"type": "image_url", "image_url": {"url": item.url}})
        elif isinstance(item, pm.BinaryContent) and item.is_image:
            data = base64.b64encode(item.data).decode("ascii")
            parts.append({"type": "image_url", "image_url": {"url": f"data:{item.media_type};base64,{data}"}})
        else:
            raise UnsupportedPart(f"pydantic-ai user content {type(item).__name__} is not supported")
    return parts


def _response(message: pm.ModelResponse) -> dict[str, Any]:
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, pm.TextPart):
            texts.append(part.content)
        elif isinstance(part, pm.ToolCallPart):
            calls.append(
                {
                    "id": part.tool_call_id,
                    "type": "function",
                    "function": {"name": part.tool_name, "arguments": part.args_as_json_str()},
                }
            )
        elif isinstance(part, pm.ThinkingPart):
            continue  # the projection does not replay old reasoning to a Chat-style model
        else:
            raise UnsupportedPart(f"pydantic-ai response part {type(part).__name__} is not supported")
    out: dict[str, Any] = {"role": "assistant", "content": "\n\n".join(texts) or None}
    if calls:
        out["tool_calls"] = calls
    return out


# --------------------------------------------------------------------------- chat -> pydantic-ai


def from_chat(body: Mapping[str, Any]) -> list[pm.ModelMessage]:
    """A rendered OpenAI Chat request (a projection) as pydantic-ai messages, read by the Chat codec."""
    parsed = get_codec("openai_chat").parse_request(body)
    out: list[pm.ModelMessage] = []
    pending: list[Any] = []

    def flush() -> None:
        if pending:
            out.append(pm.ModelRequest(parts=list(pending)))
            pending.clear()

    for event in (*parsed.instructions, *parsed.events):
        if isinstance(event, AssistantMessage):
            flush()
            out.append(_model_response(event))
        elif isinstance(event, Instruction):
            pending.append(pm.SystemPromptPart(content=event.text))
        elif isinstance(event, ToolResult):
            pending.append(
                pm.ToolReturnPart(tool_name=event.tool_name, content=event.output, tool_call_id=event.call_id)
            )
        elif isinstance(event, UserMessage):
            pending.append(pm.UserPromptPart(content=_user_content_of(event)))
    flush()
    return out


def _model_response(message: AssistantMessage) -> pm.ModelResponse:
    parts: list[Any] = [pm.TextPart(content=message.text)] if message.text else []
    for call in message.tool_calls:
        raw = call.arguments.get("_raw")
        # Arguments that were not a JSON object go back as the text they were.
        args = raw if len(call.arguments) == 1 and isinstance(raw, str) else dict(call.arguments)
        parts.append(pm.ToolCallPart(tool_name=call.name, args=args, tool_call_id=call.id))
    return pm.ModelResponse(parts=parts)


def _user_content_of(message: UserMessage) -> Any:
    if not message.parts:
        return message.text
    images = [pm.BinaryContent(data=part.data, media_type=part.media_type) for part in message.parts]
    return [message.text, *images] if message.text else images
