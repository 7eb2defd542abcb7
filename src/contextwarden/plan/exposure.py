"""Which tools a request offers, and how their definitions are counted."""

from __future__ import annotations

import json
from collections.abc import Sequence

from .._deprecated import deprecated_names
from ..context import ToolDefinition
from ..log.events import EVICTING_EDITS
from ..tools import READ_RANGE, RECALL
from ..window.projection import Projection

__all__ = ["evicted", "exposed_tools", "tool_json"]

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


_EVICTING = EVICTING_EDITS | {"truncate"}


def evicted(projection: Projection) -> bool:
    """Whether content left the window: a compaction, an edit other than dropping thinking, a truncated output.

    The retrieval tools are for reading such content back; before any, their schemas would be dead weight
    on every request of a short session.
    """
    return projection.compaction is not None or any(d.action in _EVICTING for d in projection.decisions)
