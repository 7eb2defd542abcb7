"""Other systems' context management, run through their own released code (the ``peers`` extra).

Each peer converts the replayed history to the peer's own message types, lets the peer's code edit
them exactly where that system would (right before the model call), and converts the result back to
provider-neutral messages so every strategy is measured the same way. Nothing is re-implemented:
a peer whose package is missing is skipped with a note saying what to install, never imitated.

- ``langchain-context-editing``: LangChain v1 ``ContextEditingMiddleware(edits=[ClearToolUsesEdit()])``
  with its defaults (trigger 100,000 approximate tokens, keep the last 3 tool results, placeholder
  ``[cleared]``). The middleware's ``wrap_model_call`` runs on a ``ModelRequest`` holding the whole
  history, as the agent loop builds it on every call; the handler it calls captures the edited
  messages. It edits a copy each time, so the history itself stays whole.
- ``openai-agents-trimmer``: the OpenAI Agents SDK ``ToolOutputTrimmer()`` with its defaults
  (outputs over 500 characters, older than the last 2 user messages, become a 200-character preview),
  applied as ``RunConfig.call_model_input_filter`` is: on ``CallModelData`` holding a copy of the
  Responses-API input items and the instructions.
- ``openhands-condenser``: a condenser of ``openhands-sdk`` that runs without a model. openhands-sdk
  needs Python >= 3.12, and its releases up to 1.58 ship only ``NoOpCondenser`` (the raw history)
  and ``LLMSummarizingCondenser`` (needs an LLM), so this peer reports why it is skipped.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..context import Message, ModelContext
from ..log.events import Event
from ..wire import get_codec
from .names import PeerName
from .strategies import Built, History, RunEnv, StrategyRun, plain_context

_INSTALL = "pip install 'contextwarden[peers]'"


class PeerUnavailable(Exception):
    """A peer cannot run here; the message says why and what to install."""


@dataclass(frozen=True)
class PeerStrategy:
    """A peer system's context management, driven through its own code."""

    name: PeerName
    make: Callable[[], Callable[[str, Sequence[Message]], Sequence[Message]]]
    """Builds the peer's edit function (raises :class:`PeerUnavailable`); called once per transcript."""

    def start(self, env: RunEnv) -> StrategyRun:
        """Begin one transcript (raises :class:`PeerUnavailable` when the peer cannot run)."""
        return _PeerRun(env, self.make())

    def availability(self) -> str:
        """Empty when the peer can run, else why not."""
        try:
            self.make()
        except PeerUnavailable as exc:
            return str(exc)
        return ""


class _PeerRun:
    def __init__(self, env: RunEnv, edit: Callable[[str, Sequence[Message]], Sequence[Message]]) -> None:
        self.env = env
        self.edit = edit
        self.history = History()

    def observe(self, event: Event) -> None:
        self.history.add(event)

    def build(self) -> Built:
        messages = self.edit(self.history.system, self.history.messages)
        return Built(context=plain_context(self.env.profile, self.history.system, messages, self.env.counter))


def _with_text(messages: Sequence[Message], texts: Mapping[str, str]) -> list[Message]:
    """``messages`` with the tool results named by call id showing the peer's text instead."""
    out = []
    for m in messages:
        new = texts.get(m.tool_call_id) if m.role == "tool" else None
        out.append(replace(m, text=new, parts=()) if new is not None and new != m.text else m)
    return out


# --------------------------------------------------------------------------- LangChain


def _langchain() -> Callable[[str, Sequence[Message]], Sequence[Message]]:
    try:
        from langchain.agents.middleware import ClearToolUsesEdit, ContextEditingMiddleware
        from langchain.agents.middleware.types import ModelRequest
        from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
        from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
    except ImportError as exc:
        raise PeerUnavailable(f"LangChain v1 is not installed ({exc}); {_INSTALL}") from None
    middleware = ContextEditingMiddleware(edits=[ClearToolUsesEdit()])
    # The middleware counts tokens itself (approximately, its default); the model is never called.
    model = GenericFakeChatModel(messages=iter(()))

    def convert(m: Message) -> Any:
        if m.role == "assistant":
            calls = [{"name": c.name, "args": dict(c.arguments), "id": c.id, "type": "tool_call"} for c in m.tool_calls]
            return AIMessage(content=m.text, tool_calls=calls)
        if m.role == "tool":
            return ToolMessage(content=m.text, tool_call_id=m.tool_call_id, name=m.tool_name or None)
        if m.role in ("system", "developer"):
            return SystemMessage(content=m.text)
        return HumanMessage(content=m.text)

    cache: dict[int, Any] = {}

    def edit(system: str, messages: Sequence[Message]) -> Sequence[Message]:
        converted = []
        for n, m in enumerate(messages):
            if n not in cache:  # the history only grows; convert each message once
                cache[n] = convert(m)
            converted.append(cache[n])
        seen: list[Any] = []

        def handler(request: Any) -> Any:
            seen.extend(request.messages)
            return AIMessage(content="")

        request = ModelRequest(
            model=model, messages=converted, system_message=SystemMessage(content=system) if system else None
        )
        middleware.wrap_model_call(request, handler)
        texts = {str(m.tool_call_id): _lc_text(m.content) for m in seen if isinstance(m, ToolMessage)}
        return _with_text(messages, texts)

    return edit


def _lc_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in content)


# --------------------------------------------------------------------------- OpenAI Agents SDK


def _agents_items(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """The history as Responses-API input items, the shape the Agents SDK keeps it in (the wire codec's)."""
    body = get_codec("openai_responses").render_request(
        ModelContext(model="replay", system="", messages=tuple(messages))
    )
    return list(body["input"])


def _agents() -> Callable[[str, Sequence[Message]], Sequence[Message]]:
    try:
        from agents import Agent
        from agents.extensions import ToolOutputTrimmer
        from agents.run_config import CallModelData, ModelInputData
    except ImportError as exc:
        raise PeerUnavailable(f"the OpenAI Agents SDK is not installed ({exc}); {_INSTALL}") from None
    trimmer = ToolOutputTrimmer()
    agent: Any = Agent(name="replay")

    def edit(system: str, messages: Sequence[Message]) -> Sequence[Message]:
        items: list[Any] = _agents_items(messages)
        # As the SDK's run loop does: a copy of the input and the instructions, then the filter.
        data = CallModelData(
            model_data=ModelInputData(input=list(items), instructions=system or None), agent=agent, context=None
        )
        entries: list[Any] = list(trimmer(data).input)
        texts = {
            str(i["call_id"]): str(i["output"])
            for i in entries
            if isinstance(i, dict) and i.get("type") == "function_call_output"
        }
        return _with_text(messages, texts)

    return edit


# --------------------------------------------------------------------------- OpenHands

_MODEL_FREE = ("ObservationMaskingCondenser", "RecentEventsCondenser")


def _openhands() -> Callable[[str, Sequence[Message]], Sequence[Message]]:
    try:
        from openhands.sdk.context import condenser
    except ImportError:
        version = f"{sys.version_info.major}.{sys.version_info.minor}"
        raise PeerUnavailable(
            f"openhands-sdk is not installed (it needs Python >= 3.12; this is {version}); "
            "its releases up to 1.58 have no model-free condenser besides NoOpCondenser (the raw history)"
        ) from None
    names = sorted(n for n in dir(condenser) if n.endswith("Condenser"))
    found = [n for n in names if n in _MODEL_FREE]
    raise PeerUnavailable(
        f"openhands-sdk has no condenser that runs without a model to drive here (it ships {', '.join(names)}; "
        + (
            "found " + ", ".join(found) + " but its event conversion is not written yet)"
            if found
            else "NoOpCondenser sends the raw history and LLMSummarizingCondenser needs an LLM)"
        )
    )


PEERS: dict[PeerName, Callable[[], Callable[[str, Sequence[Message]], Sequence[Message]]]] = {
    "langchain-context-editing": _langchain,
    "openai-agents-trimmer": _agents,
    "openhands-condenser": _openhands,
}
"""Every peer by strategy name."""


def peer_strategy(name: PeerName) -> PeerStrategy:
    """The peer called ``name`` (one of :data:`PEERS`)."""
    return PeerStrategy(name=name, make=PEERS[name])
