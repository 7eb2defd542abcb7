"""The model's part of a summary as JSON: a schema for constrained decoding, and reading the answer.

A small model (SmolLM2-135M) cannot be relied on to write eleven Markdown headings in order, but a
server that constrains decoding to a JSON schema (llama-cpp-python's ``response_format`` with
``{"type": "json_object", "schema": ...}``, which it compiles into a grammar) makes every answer
parse. Nor can it be relied on for facts: asked for the test status it wrote "failed" where no test
had run, and for the step in progress one that had finished. So under constrained decoding the model
writes only the sections that need judgment (:data:`SCHEMA_KEYS`: decisions, next steps, critical
context, open questions); the goal, constraints, progress, changes, test status and failed attempts
are derived from the events by the structured summarizer, which also renders the headings. The
shape and the facts never depend on the model.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from ...log.events import JSONValue
from .sections import Section, section
from .truth import clean_text
from .validate import InvalidSummary

MAX_ITEMS = 3
"""Items per list the schema allows (bounds the output of a model that repeats itself)."""
MAX_ITEM_CHARS = 80
"""Characters per item the schema allows."""
LIST_SHAPES: tuple[tuple[int, int], ...] = ((MAX_ITEMS, MAX_ITEM_CHARS), (2, 80), (2, 60), (1, 80), (1, 40))
"""(items per list, characters per item), tried in order until the longest answer fits the output budget."""
CHARS_PER_TOKEN = 2.5
"""A low estimate of characters per output token (short items, paths and symbols tokenize densely)."""

SCHEMA_KEYS: tuple[str, ...] = ("decisions", "next_steps", "critical_context", "open_questions")
"""The sections the model writes, in heading order; every other section is derived in code."""
LISTS: tuple[Section, ...] = tuple(section(key) for key in SCHEMA_KEYS)


def _string_list(items: int, chars: int, *, min_items: int = 0) -> dict[str, JSONValue]:
    return {
        "type": "array",
        "items": {"type": "string", "maxLength": chars},
        "minItems": min_items,
        "maxItems": items,
    }


def longest_answer_tokens(items: int, chars: int) -> int:
    """About how many tokens the longest answer the schema allows takes (keys, quotes and commas included)."""
    size = 2 + sum(len(sec.key) + 6 + items * (chars + 4) for sec in LISTS)
    return int(size / CHARS_PER_TOKEN) + 1


def list_shape(max_tokens: int | None) -> tuple[int, int]:
    """The largest (items, characters) of :data:`LIST_SHAPES` whose longest answer fits ``max_tokens``.

    Under a grammar a small model often fills every list to its limits; an answer cut at the output
    limit is rejected as truncated, so the schema itself must not allow more than the budget holds.
    """
    if max_tokens is None:
        return LIST_SHAPES[0]
    return next((shape for shape in LIST_SHAPES if longest_answer_tokens(*shape) <= max_tokens), LIST_SHAPES[-1])


def summary_schema(max_tokens: int | None = None) -> dict[str, JSONValue]:
    """The JSON schema of the model's part of a history summary, bounded to fit ``max_tokens``."""
    items, chars = list_shape(max_tokens)
    properties: dict[str, JSONValue] = {
        sec.key: _string_list(items, chars, min_items=1 if sec.key == "next_steps" else 0) for sec in LISTS
    }
    return {"type": "object", "properties": properties, "required": list(properties)}


SchemaStyle = Literal["json_object", "json_schema"]
"""How a server takes the schema: llama-cpp-python's ``{"type": "json_object", "schema": ...}``, or the
OpenAI form ``{"type": "json_schema", "json_schema": {"name": ..., "schema": ...}}`` (OpenAI, vLLM,
llama.cpp's ``llama-server``, Ollama, LM Studio)."""


def response_format(max_tokens: int | None = None, *, style: SchemaStyle = "json_object") -> dict[str, JSONValue]:
    """The ``response_format`` body field asking the server to decode to :func:`summary_schema`."""
    if style == "json_schema":
        return {"type": "json_schema", "json_schema": {"name": "summary", "schema": summary_schema(max_tokens)}}
    return {"type": "json_object", "schema": summary_schema(max_tokens)}


def keys_guide() -> str:
    """The prompt text naming every key the answer must have."""
    return "\n".join(f'- "{sec.key}": {sec.hint}' for sec in LISTS)


def _items(raw: dict[str, Any], key: str) -> list[str]:
    value = raw.get(key, [])
    values = value if isinstance(value, list) else [value]
    items = [" ".join(clean_text(str(v)).split()) for v in values if str(v).strip()]
    return [i for i in items if i.strip(" .-:")]


def parse_answer(answer: str) -> dict[str, list[str]]:
    """Section key → the model's bullets for a JSON ``answer``; raises ``InvalidSummary`` if it is not one.

    Empty strings and punctuation-only items are dropped, and so is a key left with none (its section
    is then derived like the others).
    """
    try:
        # strict=False: small models put raw tabs and newlines inside JSON strings; the items are
        # whitespace-normalised below, so such a character costs nothing.
        raw = json.loads(answer, strict=False)
    except json.JSONDecodeError as exc:
        raise InvalidSummary("format", f"the constrained answer is not JSON ({exc.msg})") from exc
    if not isinstance(raw, dict):
        raise InvalidSummary("format", "the constrained answer is not a JSON object")
    written = {sec.key: _items(raw, sec.key) for sec in LISTS}
    return {key: items for key, items in written.items() if items}


def render_answer(written: dict[str, list[str]]) -> str:
    """The model's part alone under its headings (what validation judges the model by)."""
    lines: list[str] = []
    for sec in LISTS:
        items = written.get(sec.key, [])
        bullets = (
            [f"{n}. {i}" for n, i in enumerate(items, 1)] if sec.key == "next_steps" else [f"- {i}" for i in items]
        )
        lines += [sec.heading, *(bullets or ["- (none)"])]
    return "\n".join(lines)
