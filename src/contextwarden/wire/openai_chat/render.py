"""Render a :class:`~contextwarden.context.ModelContext` as an OpenAI Chat Completions request body.

Choices a reader should know:

- Thinking is not rendered: Chat Completions has no field to replay reasoning in.
- ``is_error`` has no field either; a failed tool's text is sent as it is (it says what failed).
- Tool messages cannot carry images. A tool message with images gets a note saying so, and after the
  whole run of tool messages (a user message inside the run would break pairing) one user message
  carries those images, each group introduced by the call id it came from.
- Parts that are not images (PDFs, raw bytes) become a one-line note with type and size.
- An assistant message with only tool calls has ``"content": ""`` (llama.cpp rejects null).
- Byte stability: keys are written in a fixed order and nothing depends on time or randomness, so a
  context prefix renders to the same message list prefix.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...context import Message, ModelContext
from ...log.events import BinaryPart
from ...pairing import normalize_pairing
from .._common import arguments_text, clean_text, data_url, join_text, split_parts, with_opaque
from .._render_args import finish, function_spec, tool_list

__all__ = ["render_openai_chat"]

_OWN_FIELDS = frozenset({"model", "messages", "tools", "max_completion_tokens"})
_FORMAT = "openai_chat"


def render_openai_chat(
    ctx: ModelContext,
    *,
    model: str | None = None,
    max_tokens: int | None = None,
    extra: Mapping[str, Any] | None = None,
    developer_role: bool = False,
) -> dict[str, Any]:
    """Return ``{"model", "messages", "tools"?, "max_completion_tokens"?}`` for ``POST /v1/chat/completions``.

    ``model`` defaults to ``ctx.model``; ``max_tokens`` is sent as ``max_completion_tokens`` when given;
    ``extra`` adds settings (``temperature``, ``stream``...). ``developer_role``: speak system
    instructions (and developer messages) with the ``developer`` role (o-series and later reasoning
    models) instead of ``system``, which every OpenAI-compatible server knows. ``tools`` is left out when there are
    none (the API rejects an empty list).
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
    body: dict[str, Any] = {"model": model or ctx.model, "messages": out}
    tools = tool_list(ctx.tools, _FORMAT, lambda tool: {"type": "function", "function": function_spec(tool)})
    return finish(body, extra, protected=_OWN_FIELDS, tools=tools, limit=("max_completion_tokens", max_tokens))


def _render_message(message: Message, system_role: str, tool_images: list[dict[str, Any]]) -> dict[str, Any] | None:
    images, notes = split_parts(message.parts)
    text = join_text(message.text, notes)
    if message.role in ("system", "developer"):
        return {"role": system_role, "content": text} if text else None
    if message.role == "user":
        return _user(text, images, message)
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


def _user(text: str, images: list[BinaryPart], message: Message) -> dict[str, Any] | None:
    opaque = [part for part in message.opaque if part.format == _FORMAT]
    if not images and not opaque:
        return {"role": "user", "content": text} if text else None
    content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    content.extend(_image_part(image) for image in images)
    return {"role": "user", "content": with_opaque(content, message.opaque, _FORMAT)}


def _assistant(message: Message, text: str) -> dict[str, Any] | None:
    if not text and not message.tool_calls:
        return None
    # An empty string beside tool calls, not null: OpenAI takes both, but llama.cpp's server (and other
    # OpenAI-compatible servers that validate with pydantic) reject null.
    rendered: dict[str, Any] = {"role": "assistant", "content": text}
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
