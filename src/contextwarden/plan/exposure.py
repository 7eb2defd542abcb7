"""Which tools a request offers, and how their definitions are counted."""

from __future__ import annotations

import json
from collections.abc import Sequence

from .._deprecated import deprecated_names
from ..context import ToolDefinition
from ..log.events import EVICTING_EDITS
from ..tools import READ_RANGE, RECALL
from ..window.projection import Projection

__all__ = ["cut_pending", "evicted", "exposed_tools", "tool_json"]

__getattr__ = deprecated_names(__name__, {"ToolLike": (lambda: ToolDefinition, "contextwarden.ToolDefinition")})


def tool_json(tool: ToolDefinition) -> str:
    """The tool as the model receives it, for counting."""
    return json.dumps(
        {"name": tool.name, "description": tool.description, "parameters": tool.parameters},
        ensure_ascii=False,
        separators=(",", ":"),
    )


def exposed_tools(
    tools: Sequence[ToolDefinition], exposed: tuple[str, ...] | None, *, retrieval: bool
) -> tuple[ToolDefinition, ...]:
    """The tools of this request, in a stable order.

    The caller's tools (filtered by the last recorded tool-set change) come first, then the
    retrieval tools when enabled and not already offered.
    """
    chosen = list(tools)
    if exposed is not None:
        by_name = {t.name: t for t in chosen}
        chosen = [by_name[n] for n in exposed if n in by_name]
    if retrieval:
        names = {t.name for t in chosen}
        chosen += [t for t in (READ_RANGE, RECALL) if t.name not in names]
    return tuple(chosen)


def evicted(projection: Projection) -> bool:
    """Whether the retrieval tools are offered: content left the window at a window event.

    That is a compaction, an edit other than dropping thinking, or a context-edit batch after an output cut
    at ingestion. Before any, their schemas would be dead weight on every request of a short session. A cut
    at ingestion alone does not bring them (:func:`cut_pending`): the tool list opens the cached prefix, so
    the tools joining rewrites the whole request, which the cut must pay for like a batch.
    """
    if projection.compaction is not None or projection.cuts_offered:
        return True
    return any(d.action in EVICTING_EDITS for d in projection.decisions)


def cut_pending(projection: Projection) -> bool:
    """Whether an output cut at ingestion awaits the retrieval tools (no window event has brought them yet)."""
    return not evicted(projection) and any(d.action == "truncate" for d in projection.decisions)
