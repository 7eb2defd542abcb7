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
import json
from dataclasses import dataclass, field
from typing import Any

from ..assemble.manager import ContextManager, ContextPolicy
from ..log.events import UsageReport
from ..log.store import SessionStore
from ..models import ModelProfile
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
        return from_chat(projected.body["messages"])


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


def from_chat(messages: list[dict[str, Any]]) -> list[pm.ModelMessage]:
    """OpenAI Chat messages (a rendered projection) as pydantic-ai messages."""
    out: list[pm.ModelMessage] = []
    pending: list[Any] = []
    names: dict[str, str] = {}

    def flush() -> None:
        if pending:
            out.append(pm.ModelRequest(parts=list(pending)))
            pending.clear()

    for message in messages:
        role = message.get("role")
        if role == "assistant":
            flush()
            out.append(_assistant(message, names))
        elif role in ("system", "developer"):
            pending.append(pm.SystemPromptPart(content=_text(message.get("content"))))
        elif role == "tool":
            call_id = str(message.get("tool_call_id", ""))
            pending.append(
                pm.ToolReturnPart(
                    tool_name=names.get(call_id, ""), content=_text(message.get("content")), tool_call_id=call_id
                )
            )
        else:
            pending.append(pm.UserPromptPart(content=_user_parts(message.get("content"))))
    flush()
    return out


def _assistant(message: dict[str, Any], names: dict[str, str]) -> pm.ModelResponse:
    parts: list[Any] = []
    text = _text(message.get("content"))
    if text:
        parts.append(pm.TextPart(content=text))
    for call in message.get("tool_calls") or ():
        function = call.get("function") or {}
        names[str(call.get("id", ""))] = str(function.get("name", ""))
        parts.append(
            pm.ToolCallPart(
                tool_name=str(function.get("name", "")),
                args=_arguments(function.get("arguments")),
                tool_call_id=str(call.get("id", "")),
            )
        )
    return pm.ModelResponse(parts=parts)


def _arguments(raw: Any) -> dict[str, Any] | str:
    if isinstance(raw, str):
        try:
            parsed = json.loads(raw)
        except json.JSONDecodeError:
            return raw
        return parsed if isinstance(parsed, dict) else raw
    return raw if isinstance(raw, dict) else {}


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


def _user_parts(content: Any) -> Any:
    if not isinstance(content, list):
        return _text(content)
    items: list[Any] = []
    for part in content:
        if not isinstance(part, dict):
            continue
        if part.get("type") == "text":
            items.append(str(part.get("text", "")))
        elif part.get("type") == "image_url":
            items.append(pm.ImageUrl(url=str((part.get("image_url") or {}).get("url", ""))))
    return items
