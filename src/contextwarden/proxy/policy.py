"""The policy the proxy plans with: the chosen task preset, with what a proxy must keep."""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from ..context import ToolDefinition
from ..log.events import Instruction
from ..plan.policy import ContextPolicy
from ..plan.taskpolicies import get_task_policy, get_task_preset
from .recall import RECALL_DESCRIPTION, RECALL_NAME, SERVER_INSTRUCTIONS

PROXY_PRESET = "proxy"
"""The task preset (:data:`contextwarden.plan.taskpolicies.PROXY`) that holds the proxy's settings."""


def proxy_policy(preset: str | None = None) -> ContextPolicy:
    """The policy of a proxy planning under the task preset ``preset`` (``None``: the ``proxy`` preset).

    Another preset keeps its tool policies and planner, with what the ``proxy`` preset (as registered)
    sets for a proxy: its retrieval tools and window notes off, thinking kept, its horizon and its
    protection, and at least its number of recent results. An unknown preset is a ``UsageError`` that
    lists the known ones.
    """
    own = get_task_policy(PROXY_PRESET)
    if preset is None or get_task_preset(preset).name == PROXY_PRESET:
        return own
    base = get_task_policy(preset)
    planner = replace(
        base.planner,
        keep_recent_tool_results=max(base.planner.keep_recent_tool_results, own.planner.keep_recent_tool_results),
        drop_old_thinking=own.planner.drop_old_thinking,
        horizon_share=own.planner.horizon_share,
        protection=own.planner.protection,
    )
    return replace(
        base, retrieval_tools=own.retrieval_tools, client_window_notes=own.client_window_notes, planner=planner
    )


def __getattr__(name: str) -> object:
    """The proxy's former constants, read from the ``proxy`` preset (deprecated, for one release)."""
    if name in ("PROXY_HORIZON", "PROXY_KEEP_RECENT"):
        warnings.warn(f"{name} is deprecated: read get_task_preset('proxy').planner", DeprecationWarning, stacklevel=2)
        planner = get_task_preset(PROXY_PRESET).planner
        return planner.horizon_share if name == "PROXY_HORIZON" else planner.keep_recent_tool_results
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def provider_clears_tool_results(body: Mapping[str, Any]) -> bool:
    """Whether the client asks the provider to clear old tool results itself (Anthropic ``context_management``).

    The provider then drops them server-side once the request passes the client's trigger; masking them
    here as well would save nothing more and would still cost the cache rewrites.
    """
    management = body.get("context_management")
    edits = management.get("edits") if isinstance(management, Mapping) else None
    return isinstance(edits, list) and any(
        isinstance(e, Mapping) and str(e.get("type", "")).startswith("clear_tool_uses") for e in edits
    )


def without_masking(policy: ContextPolicy) -> ContextPolicy:
    """``policy`` with only lossless reductions: for a request whose provider clears tool results itself."""
    return replace(policy, planner=replace(policy.planner, mask=False))


def with_recall(
    policy: ContextPolicy, tools: Sequence[ToolDefinition], instructions: Sequence[Instruction] = ()
) -> ContextPolicy:
    """``policy`` naming the client's ``contextwarden mcp`` recall tool, when the client declares it.

    ``tools`` are the client's own, ``instructions`` its opening system or developer text, where a
    client that defers MCP tools lists their servers (:func:`deferred_recall_tool`). Both are there
    from the client's first request, so the session's placeholders name the tool from the start and
    nothing forwarded changes for it; a server a client lists only later in the conversation is left
    out, since naming it then would reword every placeholder already sent. A session whose client
    declares no such tool keeps ``policy`` as it is (its placeholders say the content is not retrievable).
    """
    name = recall_tool_of(tools) or deferred_recall_tool(instructions)
    return replace(policy, recall_tool=name) if name and name != policy.recall_tool else policy


def recall_tool_of(tools: Sequence[ToolDefinition]) -> str:
    """The name a client lists ``contextwarden mcp``'s recall tool under, or ``""``.

    Known by its description, whatever the client calls it: Claude Code ``mcp__<server>__recall``;
    Codex groups a server's tools in a Responses ``namespace`` tool (``mcp__<server>``), whose tools
    the model calls by their own name within the namespace: ``<namespace>.recall``; other clients
    list it by its own name.
    """
    head = RECALL_DESCRIPTION.split(":")[0]
    for tool in tools:
        if tool.description.startswith(head):
            return tool.name
        raw = _json_object(tool.raw_json)
        inner = raw.get("tools") if raw.get("type") == "namespace" else None
        for entry in inner if isinstance(inner, list) else ():
            if isinstance(entry, Mapping) and str(entry.get("description", "")).startswith(head):
                return f"{raw.get('name', '')}.{entry.get('name', '')}"
    return ""


_LISTED = re.compile(r"^- ([\w.-]+): (.*)$", re.MULTILINE)
"""A server in a client's listing of deferred tools: ``- <namespace>: <what the server says of itself>``."""


def deferred_recall_tool(instructions: Sequence[Instruction]) -> str:
    """The recall call of a ``contextwarden mcp`` server listed among deferred tools, or ``""``.

    Codex 0.171.0 declares no MCP tool up front: its opening developer text lists each server as a
    namespace (``Deferred tool namespaces:`` then ``- mcp__contextwarden: <the server's
    instructions, cut>``), and the model loads a namespace with ``tool_search`` before it calls a tool
    of it as ``<namespace>.recall``. The server is known by the first sentence of its instructions.
    """
    head = SERVER_INSTRUCTIONS.split(". ")[0]
    for instruction in instructions:
        for found in _LISTED.finditer(instruction.text):
            if found.group(2).startswith(head):
                return f"{found.group(1)}.{RECALL_NAME}"
    return ""


def _json_object(text: str) -> Mapping[str, Any]:
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, Mapping) else {}
