"""The structured summary as JSON: a schema for constrained decoding, and its rendering into headings.

A small model (SmolLM2-135M) cannot be relied on to write eleven Markdown headings in order, but a
server that constrains decoding to a JSON schema (llama-cpp-python's ``response_format`` with
``{"type": "json_object", "schema": ...}``, which it compiles into a grammar) makes every answer
parse. The model fills short lists; code renders them under the headings validation requires, so
the shape never depends on the model. The goal and constraints are not asked for when the window
pins them verbatim: the rendering refers to the pinned block instead.
"""

from __future__ import annotations

import json
from typing import Any

from ...log.events import JSONValue
from .sections import Section, section
from .truth import PINNED_CONSTRAINTS, PINNED_GOAL, clean_text
from .validate import InvalidSummary

MAX_ITEMS = 3
"""Items per list the schema allows (bounds the output of a model that repeats itself)."""
MAX_ITEM_CHARS = 80
"""Characters per item the schema allows."""

SCHEMA_KEYS: tuple[str, ...] = (
    "done",
    "in_progress",
    "blocked",
    "decisions",
    "next_steps",
    "critical_context",
    "test_status",
    "failed_attempts",
)
"""The sections a small model fills, in heading order after Goal, Constraints and Progress (the others
are either pinned or derived in code)."""
LISTS: tuple[Section, ...] = tuple(section(key) for key in SCHEMA_KEYS)


def _string_list(*, min_items: int = 0) -> dict[str, JSONValue]:
    return {
        "type": "array",
        "items": {"type": "string", "maxLength": MAX_ITEM_CHARS},
        "minItems": min_items,
        "maxItems": MAX_ITEMS,
    }


def summary_schema(*, anchors_pinned: bool) -> dict[str, JSONValue]:
    """The JSON schema of a history summary (without goal and constraints when they are pinned)."""
    properties: dict[str, JSONValue] = {}
    if not anchors_pinned:
        properties["goal"] = {"type": "string", "maxLength": 600}
        properties["constraints"] = _string_list()
    for sec in LISTS:
        properties[sec.key] = _string_list(min_items=1 if sec.key == "next_steps" else 0)
    return {"type": "object", "properties": properties, "required": list(properties)}


def response_format(*, anchors_pinned: bool) -> dict[str, JSONValue]:
    """The ``response_format`` body field asking the server to decode to :func:`summary_schema`."""
    return {"type": "json_object", "schema": summary_schema(anchors_pinned=anchors_pinned)}


def keys_guide(*, anchors_pinned: bool) -> str:
    """The prompt text naming every key the answer must have."""
    lines = [] if anchors_pinned else ['"goal": what the user wants', '"constraints": every rule the user stated']
    lines += [f'"{sec.key}": {sec.hint}' for sec in LISTS]
    return "\n".join(f"- {line}" for line in lines)


def _items(raw: dict[str, Any], key: str) -> list[str]:
    value = raw.get(key, [])
    values = value if isinstance(value, list) else [value]
    return [" ".join(clean_text(str(v)).split()) for v in values if str(v).strip()]


def render_summary(answer: str, *, anchors_pinned: bool, constraints: int = 0) -> str:
    """The sectioned Markdown summary for a JSON ``answer``; raises ``InvalidSummary`` if it is not one.

    ``constraints`` is how many constraints the pinned block holds (for the reference line).
    """
    try:
        raw = json.loads(answer)
    except json.JSONDecodeError as exc:
        raise InvalidSummary("format", f"the constrained answer is not JSON ({exc.msg})") from exc
    if not isinstance(raw, dict):
        raise InvalidSummary("format", "the constrained answer is not a JSON object")
    if anchors_pinned:
        goal = PINNED_GOAL
        rules = [PINNED_CONSTRAINTS.format(n=constraints)] if constraints else []
    else:
        goal = " ".join(clean_text(str(raw.get("goal", ""))).split())
        rules = _items(raw, "constraints")
    lines = [section("goal").heading, goal or "(no goal recorded)", section("constraints").heading]
    lines += [f"- {r}" for r in rules] or ["- (none)"]
    lines.append(section("progress").heading)
    for sec in LISTS:
        items = _items(raw, sec.key)
        if sec.key == "next_steps":
            lines += [sec.heading, *(f"{n}. {i}" for n, i in enumerate(items, 1))]
        else:
            lines += [sec.heading, *(f"- {i}" for i in items)] if items else [sec.heading, "- (none)"]
    return "\n".join(lines)
