"""contextwarden: decide what an LLM agent's model sees on each call.

The session is an append-only event log (the truth); every model request is a projection of it
that fits the model's budget, keeps what must never be lost, and stays byte-stable at the front
so provider prompt caches hit.

The public API, in the order an agent loop uses it::

    from contextwarden import ContextManager, UserMessage, open_store, render

    store = open_store("sessions.db")                     # SQLite file, "memory:" or postgresql://
    manager = ContextManager(store, policy="coding")      # or "research", "browser", a ContextPolicy
    session = manager.session("task-1", model="gpt-4o", create=True)
    session.append(UserMessage(text="Fix the failing test."))
    body = render(session.build(), "openai_chat")         # POST it; append the reply; repeat

or let the agent loop call the model and run the tools: ``run_agent_loop(provider, tools, manager,
"task-1", model="gpt-4o")``, where a ``Provider`` (``OpenAICompatProvider``, ``AnthropicProvider``,
``ScriptedProvider`` in tests) takes the ``ModelContext`` a build returns and answers with a ``ModelReply``,
and each ``AgentTool`` pairs a ``ToolDefinition`` with the function that runs it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from ._deprecated import warn_renamed
from .errors import (
    BudgetExceededError,
    CodecError,
    ConflictError,
    ContextWardenError,
    ProviderError,
    SessionNotFound,
    SpendLimitReached,
    SummaryRejected,
    UnknownModelError,
    UsageError,
)
from .log.events import (
    AssistantMessage,
    BinaryPart,
    Compaction,
    ContextEdit,
    ContextEditBatch,
    Event,
    ForkMarker,
    Instruction,
    Pin,
    SettingChange,
    Steering,
    ThinkingBlock,
    ToolCall,
    ToolResult,
    ToolSetChange,
    UsageReport,
    UserMessage,
)

if TYPE_CHECKING:
    from .assemble.buildrecord import BuildSettings
    from .assemble.manager import ContextManager
    from .assemble.project import ProjectContext
    from .assemble.session import Session
    from .budget import BudgetPolicy
    from .chat import CallOptions, ModelReply, Provider
    from .context import Decision, Message, ModelContext, ToolDefinition
    from .log.store import SessionStore, open_store
    from .loop import AgentTool, LoopResult, ToolOutput, run_agent_loop
    from .models import ModelProfile, get_profile, list_profiles, register_profile, resolve_profile
    from .plan.planner import PlannerSettings
    from .plan.policy import ContextPolicy
    from .plan.protection import Protection
    from .plan.spend import SpendLimit, SpendTracker
    from .plan.taskpolicies import Keep, TaskPolicy, get_task_policy, register_task_policy, task_policy_names
    from .providers import AnthropicProvider, OpenAICompatProvider
    from .testing import ScriptedProvider
    from .window.policies.presets import ToolPolicy
    from .wire import FORMATS, WireFormat
    from .wire._render import render

# The rest loads on first use, so ``contextwarden --help`` and ``import contextwarden.log.events`` do not
# pay for the manager, the stores and the wire codecs.
_LAZY: dict[str, str] = {
    "render": ".wire._render",
    "BuildSettings": ".assemble.buildrecord",
    "Decision": ".context",
    "Message": ".context",
    "ModelContext": ".context",
    "ToolDefinition": ".context",
    "ContextManager": ".assemble.manager",
    "ModelProfile": ".models",
    "get_profile": ".models",
    "list_profiles": ".models",
    "register_profile": ".models",
    "resolve_profile": ".models",
    "ToolPolicy": ".window.policies.presets",
    "ContextPolicy": ".plan.policy",
    "PlannerSettings": ".plan.planner",
    "Protection": ".plan.protection",
    "BudgetPolicy": ".budget",
    "ProjectContext": ".assemble.project",
    "Session": ".assemble.session",
    "SessionStore": ".log.store",
    "open_store": ".log.store",
    "Keep": ".plan.taskpolicies",
    "TaskPolicy": ".plan.taskpolicies",
    "get_task_policy": ".plan.taskpolicies",
    "register_task_policy": ".plan.taskpolicies",
    "task_policy_names": ".plan.taskpolicies",
    "SpendTracker": ".plan.spend",
    "SpendLimit": ".plan.spend",
    "FORMATS": ".wire",
    "WireFormat": ".wire",
    "CallOptions": ".chat",
    "ModelReply": ".chat",
    "Provider": ".chat",
    "AnthropicProvider": ".providers",
    "OpenAICompatProvider": ".providers",
    "ScriptedProvider": ".testing",
    "AgentTool": ".loop",
    "LoopResult": ".loop",
    "ToolOutput": ".loop",
    "run_agent_loop": ".loop",
}

_RENAMED: dict[str, str] = {
    "BudgetExhausted": "SpendLimitReached",  # deprecated
    "TreeBudget": "SpendTracker",  # deprecated
    "TreeBudgetPolicy": "SpendLimit",  # deprecated
}
"""Old public names, kept for one release: each use warns and returns the new name's value."""


def __getattr__(name: str) -> object:
    """Import a public name's module on first access (PEP 562); an old name warns."""
    new = _RENAMED.get(name)
    if new is not None:
        warn_renamed(f"contextwarden.{name}", f"contextwarden.{new}")
        return __getattr__(new) if new in _LAZY else globals()[new]
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'contextwarden' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The public names (those ``__getattr__`` serves included)."""
    return sorted({*globals(), *__all__})


__all__ = [
    "FORMATS",
    "AgentTool",
    "AnthropicProvider",
    "AssistantMessage",
    "BinaryPart",
    "BudgetExceededError",
    "BudgetPolicy",
    "BuildSettings",
    "CallOptions",
    "CodecError",
    "Compaction",
    "ConflictError",
    "ContextEdit",
    "ContextEditBatch",
    "ContextManager",
    "ContextPolicy",
    "ContextWardenError",
    "Decision",
    "Event",
    "ForkMarker",
    "Instruction",
    "Keep",
    "LoopResult",
    "Message",
    "ModelContext",
    "ModelProfile",
    "ModelReply",
    "OpenAICompatProvider",
    "Pin",
    "PlannerSettings",
    "ProjectContext",
    "Protection",
    "Provider",
    "ProviderError",
    "ScriptedProvider",
    "Session",
    "SessionNotFound",
    "SessionStore",
    "SettingChange",
    "SpendLimit",
    "SpendLimitReached",
    "SpendTracker",
    "Steering",
    "SummaryRejected",
    "TaskPolicy",
    "ThinkingBlock",
    "ToolCall",
    "ToolDefinition",
    "ToolOutput",
    "ToolPolicy",
    "ToolResult",
    "ToolSetChange",
    "UnknownModelError",
    "UsageError",
    "UsageReport",
    "UserMessage",
    "WireFormat",
    "get_profile",
    "get_task_policy",
    "list_profiles",
    "open_store",
    "register_profile",
    "register_task_policy",
    "render",
    "resolve_profile",
    "run_agent_loop",
    "task_policy_names",
]
