"""Render a :class:`~contextwarden.context.ModelContext` as an OpenAI Responses request body.

The request is stateless (no ``previous_response_id``): the whole conversation is sent as input items.

- The system prompt goes to ``instructions``; later system or developer messages stay input messages.
- Reasoning is replayed as ``reasoning`` items only for thinking blocks that carry a Responses signature
  (``"<item id>:<encrypted_content>"``, see :mod:`contextwarden.wire._common`); other providers'
  signatures and bare reasoning text are not sent (the API cannot verify them). A reasoning item goes
  back only with the output it led to (the API rejects one without it): reasoning items an assistant
  message ends with, its own or opaque ones, are left out.
- Tool results with images use the list form of ``function_call_output.output``
  (``input_text`` and ``input_image`` parts).
- A call of a freeform tool (a ``custom`` tool in ``ctx.tools``, such as Codex's ``apply_patch``, or an
  undeclared tool whose one argument is ``input`` text) is a ``custom_tool_call``, and its result a
  ``custom_tool_call_output``. A call named ``<namespace>.<name>`` is a ``function_call`` of ``name``
  in ``namespace``; a client's ``tool_search_output``, kept whole, goes back as it came.
- Function tools are sent with ``"strict": false`` because Responses makes them strict by default,
  which would reject ordinary JSON schemas.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ...context import Message, ModelContext, ToolDefinition
from ...log.events import BinaryPart, ToolCall
from ...pairing import normalize_pairing
from .._common import (
    arguments_text,
    clean_text,
    data_url,
    has_opaque,
    join_text,
    split_parts,
    unpack_responses_signature,
    with_opaque,
)
from .._render_args import finish, function_spec, tool_list

__all__ = ["render_openai_responses"]

_OWN_FIELDS = frozenset({"model", "instructions", "input", "tools", "max_output_tokens"})
_FORMAT = "openai_responses"
_OWN_ITEMS = frozenset({"tool_search_output"})
"""Input items kept whole as a message of their own (``request.search_output``): sent back as they came."""


def render_openai_responses(
    ctx: ModelContext,
    *,
    model: str | None = None,
    max_tokens: int | None = None,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Return ``{"model", "instructions"?, "input", "tools"?, "max_output_tokens"?}`` for ``POST /v1/responses``.

    ``model`` defaults to ``ctx.model``; ``max_tokens`` is sent as ``max_output_tokens`` when given;
    ``extra`` adds settings (``reasoning``, ``include``, ``store``, ``stream``...).
    """
    messages, _ = normalize_pairing(ctx.messages)
    freeform = _Freeform(ctx.tools)
    items: list[dict[str, Any]] = []
    for message in messages:
        items.extend(_items(message, freeform))
    body: dict[str, Any] = {"model": model or ctx.model}
    if ctx.system:
        body["instructions"] = clean_text(ctx.system)
    body["input"] = items
    tools = tool_list(ctx.tools, _FORMAT, _tool)
    return finish(body, extra, protected=_OWN_FIELDS, tools=tools, limit=("max_output_tokens", max_tokens))


def _tool(tool: ToolDefinition) -> dict[str, Any]:
    # Responses makes function tools strict by default, which would reject ordinary JSON schemas.
    return {"type": "function", **function_spec(tool), "strict": False}


class _Freeform:
    """Which calls are freeform (``custom_tool_call``), and so which results are ``custom_tool_call_output``.

    A call is freeform when its tool is declared ``custom``, or undeclared with ``input`` text as its only argument.
    """

    def __init__(self, tools: tuple[ToolDefinition, ...]) -> None:
        self.custom: set[str] = set()
        self.declared: set[str] = set()
        for tool in tools:
            self.declared.add(tool.name)
            raw = json.loads(tool.raw_json) if tool.format == _FORMAT and tool.raw_json else None
            if isinstance(raw, dict) and raw.get("type") == "custom":
                self.custom.add(tool.name)
        self.calls: set[str] = set()
        """Ids of the calls rendered freeform so far."""

    def item(self, call: ToolCall) -> dict[str, Any]:
        text = call.arguments.get("input")
        freeform = call.name in self.custom or call.name not in self.declared
        if freeform and isinstance(text, str) and set(call.arguments) == {"input"}:
            self.calls.add(call.id)
            return {"type": "custom_tool_call", "call_id": call.id, "name": call.name, "input": text}
        namespace, _, name = call.name.rpartition(".")
        item = {"type": "function_call", "call_id": call.id, "name": name}
        return {**item, **({"namespace": namespace} if namespace else {}), "arguments": arguments_text(call)}


def _items(message: Message, freeform: _Freeform) -> list[dict[str, Any]]:
    images, notes = split_parts(message.parts)
    text = join_text(message.text, notes)
    if message.role == "assistant":
        return _assistant_items(message, text, freeform)
    if message.role == "tool":
        if message.tool_call_id in freeform.calls and not images:
            return [{"type": "custom_tool_call_output", "call_id": message.tool_call_id, "output": text}]
        output: str | list[dict[str, Any]] = text
        if images:
            output = _content(text, images)
        return [{"type": "function_call_output", "call_id": message.tool_call_id, "output": output}]
    if not text and not images and not has_opaque(message.opaque, _FORMAT):
        return []
    if not text and not images and {p.kind for p in message.opaque if p.format == _FORMAT} <= _OWN_ITEMS:
        return [json.loads(p.raw_json) for p in message.opaque if p.format == _FORMAT]
    content: str | list[dict[str, Any]] = text
    if images or has_opaque(message.opaque, _FORMAT):
        content = with_opaque(_content(text, images), message.opaque, _FORMAT)
    return [{"type": "message", "role": message.role, "content": content}]


def _assistant_items(message: Message, text: str, freeform: _Freeform) -> list[dict[str, Any]]:
    if not text and not message.tool_calls and not has_opaque(message.opaque, _FORMAT):
        return []  # a reasoning item without the output it led to is rejected
    items: list[dict[str, Any]] = []
    for block in message.thinking:
        unpacked = unpack_responses_signature(block.signature)
        if unpacked is None:
            continue
        item_id, encrypted = unpacked
        summary = [{"type": "summary_text", "text": block.text}] if block.text else []
        items.append({"type": "reasoning", "id": item_id, "summary": summary, "encrypted_content": encrypted})
    if text:
        items.append({"type": "message", "role": "assistant", "content": text})
    items.extend(freeform.item(call) for call in message.tool_calls)
    items = with_opaque(items, message.opaque, _FORMAT)
    while items and items[-1].get("type") == "reasoning":  # no output follows it in this message
        items.pop()
    return items


def _content(text: str, images: list[BinaryPart]) -> list[dict[str, Any]]:
    content: list[dict[str, Any]] = [{"type": "input_text", "text": text}] if text else []
    content.extend({"type": "input_image", "image_url": data_url(image), "detail": "auto"} for image in images)
    return content
