"""Render a :class:`~contextwarden.context.ModelContext` as an Anthropic Messages request body.

The body lacks ``max_tokens`` (and any sampling settings): the caller adds them.

- Roles must alternate, so consecutive messages of the same role are merged into one turn; the results
  of parallel calls become ``tool_result`` blocks of one user turn, and the text of a following user
  message comes after them (results must come first).
- System and developer messages before the first conversational message become further system blocks;
  later ones are sent as user text.
- Thinking is kept only for blocks with a signature (``redacted:`` signatures become
  ``redacted_thinking``); unsigned blocks and OpenAI Responses signatures are dropped.
- Empty text blocks are never sent; an empty tool result has no ``content``.
- ``cache_control`` goes on at most four blocks: the last tool, the last system block, and the last
  cacheable block of the messages at ``ctx.cache_breakpoints`` (the latest ones when they do not fit).
"""

from __future__ import annotations

from typing import Any

from ..context import Message, ModelContext
from ..errors import UsageError
from ..events import BinaryPart
from ._common import (
    REDACTED_PREFIX,
    arguments_payload,
    b64,
    clean_text,
    is_foreign_to_anthropic_or_gemini,
    join_text,
    split_parts,
)
from .pairing import normalize_with_origins

__all__ = ["MAX_CACHE_BREAKPOINTS", "render_anthropic"]

MAX_CACHE_BREAKPOINTS = 4
"""Anthropic accepts at most this many ``cache_control`` blocks per request."""

_EMPTY_SCHEMA: dict[str, object] = {"type": "object", "properties": {}}
_UNCACHEABLE = frozenset({"thinking", "redacted_thinking"})

Position = tuple[int, int]
"""(turn index, block index) of a content block in the rendered ``messages``."""


def render_anthropic(ctx: ModelContext, *, cache_ttl: str = "5m") -> dict[str, Any]:
    """Return ``{"model", "system"?, "messages", "tools"?}`` for ``POST /v1/messages``.

    ``cache_ttl``: ``"5m"`` (the default cache) or ``"1h"`` (the extended one, written at 2x price).
    """
    if cache_ttl not in ("5m", "1h"):
        raise UsageError(f"cache_ttl must be '5m' or '1h', not {cache_ttl!r}")
    messages, _, origins = normalize_with_origins(ctx.messages)
    system: list[dict[str, Any]] = [{"type": "text", "text": clean_text(ctx.system)}] if ctx.system else []
    turns: list[dict[str, Any]] = []
    positions: list[Position | None] = []
    leading = True
    for message in messages:
        if leading and message.role in ("system", "developer"):
            text = join_text(message.text, split_parts(message.parts)[1])
            if text:
                system.append({"type": "text", "text": text})
            positions.append(None)
            continue
        leading = False
        role = "assistant" if message.role == "assistant" else "user"
        blocks = _blocks(message)
        if blocks:
            if not turns or turns[-1]["role"] != role:
                turns.append({"role": role, "content": []})
            content: list[dict[str, Any]] = turns[-1]["content"]
            content.extend(blocks)
        positions.append(_last_cacheable(turns) if blocks else (positions[-1] if positions else None))
    body: dict[str, Any] = {"model": ctx.model}
    if system:
        body["system"] = system
    body["messages"] = turns
    tools = [
        {"name": tool.name, "description": tool.description, "input_schema": tool.parameters or _EMPTY_SCHEMA}
        for tool in ctx.tools
    ]
    if tools:
        body["tools"] = tools
    _place_cache_control(ctx, body, system, tools, origins, positions, cache_ttl)
    return body


def _blocks(message: Message) -> list[dict[str, Any]]:
    images, notes = split_parts(message.parts)
    text = join_text(message.text, notes)
    if message.role == "assistant":
        return _assistant_blocks(message, text)
    if message.role == "tool":
        result: dict[str, Any] = {"type": "tool_result", "tool_use_id": message.tool_call_id}
        if images:
            result["content"] = _text_and_images(text, images)
        elif text:
            result["content"] = text
        if message.is_error:
            result["is_error"] = True
        return [result]
    return _text_and_images(text, images)


def _assistant_blocks(message: Message, text: str) -> list[dict[str, Any]]:
    if not text and not message.tool_calls:
        return []  # thinking alone carries nothing the conversation refers to
    blocks: list[dict[str, Any]] = []
    for block in message.thinking:
        if not block.signature or is_foreign_to_anthropic_or_gemini(block.signature):
            continue
        if block.signature.startswith(REDACTED_PREFIX):
            blocks.append({"type": "redacted_thinking", "data": block.signature[len(REDACTED_PREFIX) :]})
        else:
            blocks.append({"type": "thinking", "thinking": block.text, "signature": block.signature})
    if text:
        blocks.append({"type": "text", "text": text})
    blocks.extend(
        {"type": "tool_use", "id": call.id, "name": call.name, "input": arguments_payload(call)}
        for call in message.tool_calls
    )
    return blocks


def _text_and_images(text: str, images: list[BinaryPart]) -> list[dict[str, Any]]:
    # Images first, then the text that refers to them: the order Anthropic recommends.
    blocks: list[dict[str, Any]] = [
        {
            "type": "image",
            "source": {"type": "base64", "media_type": image.media_type, "data": b64(image.data)},
        }
        for image in images
    ]
    if text:
        blocks.append({"type": "text", "text": text})
    return blocks


def _last_cacheable(turns: list[dict[str, Any]]) -> Position | None:
    for turn_index in range(len(turns) - 1, -1, -1):
        content = turns[turn_index]["content"]
        for block_index in range(len(content) - 1, -1, -1):
            if content[block_index]["type"] not in _UNCACHEABLE:
                return turn_index, block_index
    return None


def _place_cache_control(
    ctx: ModelContext,
    body: dict[str, Any],
    system: list[dict[str, Any]],
    tools: list[dict[str, Any]],
    origins: tuple[int, ...],
    positions: list[Position | None],
    cache_ttl: str,
) -> None:
    marker: dict[str, str] = {"type": "ephemeral"}
    if cache_ttl == "1h":
        marker["ttl"] = "1h"
    marked: list[dict[str, Any]] = []
    if tools:
        marked.append(tools[-1])
    if system:
        marked.append(system[-1])
    wanted: list[Position] = []
    for breakpoint in sorted(set(ctx.cache_breakpoints)):
        if breakpoint < 0:
            continue  # -1 is the end of system and tools, marked above
        # The last rendered message that comes from ctx.messages[:breakpoint + 1].
        count = sum(1 for origin in origins if origin <= breakpoint)
        position = positions[count - 1] if count else None
        if position is not None and position not in wanted:
            wanted.append(position)
    room = MAX_CACHE_BREAKPOINTS - len(marked)
    for turn_index, block_index in wanted[-room:] if room > 0 else []:
        marked.append(body["messages"][turn_index]["content"][block_index])
    for block in marked:
        block["cache_control"] = dict(marker)
