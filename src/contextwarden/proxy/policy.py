"""The policy the proxy plans with: the chosen task preset, with what a proxy must keep."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from ..context import ToolDefinition
from ..plan.policy import ContextPolicy
from ..plan.taskpolicies import get_task_policy
from .recall import RECALL_DESCRIPTION

PROXY_HORIZON = 1 / 3
"""A batch the session does not live to pay back costs more than going direct, so the proxy expects
a session to run a third as long again, not half (docs/proxy.md, "Measured")."""


PROXY_KEEP_RECENT = 3
"""Tool results the proxy keeps at least: it adds no retrieval tools, so its first batch rewrites no
tool list and the planner sees it as cheap; with the library's keep of 1 it comes early enough to cost
1.02x direct on a short real trajectory (tests/test_proxy_policy.py)."""


def proxy_policy(preset: str | None = None) -> ContextPolicy:
    """The policy of a proxy planning under the task preset ``preset`` (``None``: the default policy).

    The proxy keeps the client's tools as they are (no retrieval tools of ours) and leaves thinking
    blocks with their signatures alone, so the planner must not count on dropping them. Keeping an
    exploring session's reads took the matched A/B over the proxy's target of 0.80x of going direct (0.802x /
    0.806x), so that protection is off here. An unknown preset is a ``UsageError`` that lists the known ones.
    """
    base = get_task_policy(preset) if preset is not None else ContextPolicy()
    planner = replace(
        base.planner,
        keep_recent_tool_results=max(base.planner.keep_recent_tool_results, PROXY_KEEP_RECENT),
        drop_old_thinking=False,
        horizon_share=PROXY_HORIZON,
        protect_exploration_reads=False,
    )
    return replace(base, retrieval_tools=False, client_window_notes=False, planner=planner)


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


def with_recall(policy: ContextPolicy, tools: Sequence[ToolDefinition]) -> ContextPolicy:
    """``policy`` naming the client's ``contextwarden mcp`` recall tool, when ``tools`` (the client's own) hold it.

    The tool is in the client's list from its first request, so the session's placeholders name it
    from the start and nothing forwarded changes for it. A session whose client offers no such tool
    keeps ``policy`` as it is (its placeholders say the content is not retrievable).
    """
    name = recall_tool_of(tools)
    return replace(policy, recall_tool=name) if name and name != policy.recall_tool else policy


def recall_tool_of(tools: Sequence[ToolDefinition]) -> str:
    """The name a client lists ``contextwarden mcp``'s recall tool under, or ``""``.

    Known by its description, whatever the client calls it: Claude Code ``mcp__<server>__recall``;
    Codex groups a server's tools in a Responses ``namespace`` tool (``mcp__<server>``), whose
    tools the model calls as ``<namespace>__<tool>``; other clients list it by its own name.
    """
    head = RECALL_DESCRIPTION.split(":")[0]
    for tool in tools:
        if tool.description.startswith(head):
            return tool.name
        raw = _json_object(tool.raw_json)
        inner = raw.get("tools") if raw.get("type") == "namespace" else None
        for entry in inner if isinstance(inner, list) else ():
            if isinstance(entry, Mapping) and str(entry.get("description", "")).startswith(head):
                return f"{raw.get('name', '')}__{entry.get('name', '')}"
    return ""


def _json_object(text: str) -> Mapping[str, Any]:
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, Mapping) else {}
