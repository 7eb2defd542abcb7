"""The policy a build runs under: :class:`ContextPolicy`, and its JSON form for the log.

Every build records the policy it used (see :mod:`contextwarden.assemble.buildrecord`), so ``inspect``,
``lint`` and the report rebuild the requests the agent really sent. The JSON form is the policy's
fields, nested dataclasses and tuples included; reading it back fills fields a newer release added
with their defaults and ignores fields it does not know, so an old log stays readable.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .._dataclass_json import decode_dataclass, encode_dataclass
from ..budget import BudgetPolicy
from ..errors import CodecError
from ..window.policies.presets import CODING_TOOL_POLICIES, ToolPolicy
from .planner import PlannerSettings

__all__ = ["ContextPolicy", "decode_dataclass", "encode_dataclass", "policy_from_dict", "policy_to_dict"]


@dataclass(frozen=True, kw_only=True)
class ContextPolicy:
    """Everything that decides what the model sees. Vary it with ``dataclasses.replace``.

    Presets for kinds of agents (coding, research, browser) come from
    :func:`contextwarden.plan.taskpolicies.get_task_policy`.
    """

    name: str = "contextwarden"
    """A name for reports."""
    tool_policies: tuple[ToolPolicy, ...] = CODING_TOOL_POLICIES
    """Per-tool normalize/truncate/retain rules."""
    max_item_tokens: int = 10_000
    """Hard cap of every item."""
    planner: PlannerSettings = field(default_factory=PlannerSettings)
    """When and how much to reduce."""
    budget: BudgetPolicy = field(default_factory=BudgetPolicy)
    """Reserve, safety margin, trigger."""
    compact: bool = True
    """Compact when reductions are not enough (needs a compactor on the manager)."""
    retrieval_tools: bool = True
    """Expose ``read_range`` and ``recall`` so evicted content can be read back (served by
    :meth:`~contextwarden.assemble.manager.ContextManager.retrieve`). When False, no truncation marker or
    placeholder names them: markers name only tools the model was given."""
    client_window_notes: bool = True
    """Open a window that the client's own trim or rewind started (a mirrored history) with the block that
    keeps the goal pinned and a note saying what changed. False: the client's copy alone, as a proxy
    forwards it (the client's list is the whole history it means to send)."""
    retrieval_max_tokens: int = 4_000
    """Cap of one retrieval answer."""
    recall_tool: str = ""
    """A tool of the caller's own that gives evicted content back by its artifact id (the
    ``recall`` of ``contextwarden mcp``, named as the client lists it: ``mcp__contextwarden__recall``).
    When set, placeholders and truncation markers name a call of it instead of ``read_range``."""


def policy_to_dict(policy: ContextPolicy) -> dict[str, Any]:
    """The policy as JSON-ready data (nested settings as objects, tuples as lists)."""
    return encode_dataclass(policy)


_FORMER_PROTECTION = {
    "working_set_files": "working_set_files",
    "protect_modified_files": "modified_files",
    "protect_exploration_reads": "exploration_reads",
}
"""Planner fields a policy recorded by an earlier release holds, and the ``Protection`` field each became."""


def policy_from_dict(data: object) -> ContextPolicy:
    """Read a policy written by :func:`policy_to_dict`; ``CodecError`` names what is wrong."""
    planner = data.get("planner") if isinstance(data, dict) else None
    if isinstance(data, dict) and isinstance(planner, dict) and "protection" not in planner:
        former = {new: planner[old] for old, new in _FORMER_PROTECTION.items() if old in planner}
        data = {**data, "planner": {**planner, "protection": former}}
    try:
        return decode_dataclass(ContextPolicy, data, "policy")
    except (TypeError, ValueError) as exc:
        raise CodecError(f"recorded policy: {exc}") from None
