"""Render a :class:`~contextwarden.context.ModelContext` as an OpenAI Chat Completions request body.

Choices a reader should know:

- Thinking is not rendered: Chat Completions has no field to replay reasoning in.
- ``is_error`` has no field either; a failed tool's text is sent as it is (it says what failed).
- Tool messages cannot carry images. A tool message with images gets a note saying so, and after the
  whole run of tool messages (a user message inside the run would break pairing) one user message
  carries those images, each group introduced by the call id it came from.
- Parts that are not images (PDFs, raw bytes) become a one-line note with type and size.
- Byte stability: keys are written in a fixed order and nothing depends on time or randomness, so a
  context prefix renders to the same message list prefix.
"""

from __future__ import annotations

from typing import Any

from ..context import Message, ModelContext
from ..events import BinaryPart
from ._common import arguments_text, clean_text, data_url, join_text, split_parts
from .pairing import normalize_pairing

__all__ = ["render_openai_chat"]

_EMPTY_SCHEMA: dict[str, object] = {"type": "object", "properties": {}}


def render_openai_chat(ctx: ModelContext, *, developer_role: bool = False) -> dict[str, Any]:
    """Return ``{"model", "messages", "tools"?}`` for ``POST /v1/chat/completions``.

    ``developer_role``: speak system instructions with the ``developer`` role (o-series and later
    reasoning models) instead of ``system``. ``tools`` is left out when there are none (the API
    rejects an empty list).
    """
    messages, _ = normalize_pairing(ctx.messages)
    system_role = "developer" if developer_role else "system"
    out: list[dict[str, Any]] = []
    if ctx.system:
        out.append({"role": system_role, "content": clean_text(ctx.system)})
    tool_images: list[dict[str, Any]] = []
    for message in messages:
        if message.role != "tool" and tool_images:
            out.append({"role": "user", "content": tool_images})
            tool_images = []
        rendered = _render_message(message, system_role, tool_images)
        if rendered is not None:
            out.append(rendered)
    if tool_images:
        out.append({"role": "user", "content": tool_images})
    body: dict[str, Any] = {"model": ctx.model, "messages": out}
    if ctx.tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.parameters or _EMPTY_SCHEMA,
                },
            }
            for tool in ctx.tools
        ]
    return body


def _render_message(message: Message, system_role: str, tool_images: list[dict[str, Any]]) -> dict[str, Any] | None:
    images, notes = split_parts(message.parts)
    text = join_text(message.text, notes)
    if message.role in ("system", "developer"):
        return {"role": system_role, "content": text} if text else None
    if message.role == "user":
        return _user(text, images)
    if message.role == "assistant":
        return _assistant(message, text)
    if images:
        tool_images.append(
            {
                "type": "text",
                "text": f"[images from the result of call {message.tool_call_id} ({message.tool_name})]",
            }
        )
        tool_images.extend(_image_part(image) for image in images)
        text = join_text(text, [f"[{len(images)} image(s) from this result follow in the next user message]"])
    return {"role": "tool", "tool_call_id": message.tool_call_id, "content": text}


def _user(text: str, images: list[BinaryPart]) -> dict[str, Any] | None:
    if not images:
        return {"role": "user", "content": text} if text else None
    content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    content.extend(_image_part(image) for image in images)
    return {"role": "user", "content": content}


def _assistant(message: Message, text: str) -> dict[str, Any] | None:
    if not text and not message.tool_calls:
        return None
    rendered: dict[str, Any] = {"role": "assistant", "content": text or None}
    if message.tool_calls:
        rendered["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": arguments_text(call)},
            }
            for call in message.tool_calls
        ]
    return rendered


def _image_part(image: BinaryPart) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": data_url(image)}}
