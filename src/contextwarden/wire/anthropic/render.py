"""Render a :class:`~contextwarden.context.ModelContext` as an Anthropic Messages request body.

The body is complete: ``model``, ``max_tokens`` (the caller's, else the model profile's), ``system``,
``messages`` and ``tools``. It obeys the Messages API's own rules on any context:

- Roles alternate and the first message is ``user``: consecutive messages of one role merge into one
  turn; a conversation that would start with the assistant (or be empty) opens with
  :data:`OPENING_TEXT`. The results of parallel calls are ``tool_result`` blocks of one user turn, and
  the text of a following user message comes after them (results must come first).
- No text block is empty or whitespace only; assistant text never ends in whitespace (the API
  rejects it on a final, prefill turn; cutting it everywhere keeps a turn's bytes the same once later
  turns follow); a whitespace-only tool result has no ``content``.
- System and developer messages before the conversation become further system blocks; later ones are
  sent as user text.
- Tool-use ids fit the API's pattern: one made by another provider that does not is respelled
  (:func:`call_id`), on the call and its result alike.
- Thinking is kept only for blocks with a signature (``redacted:`` signatures become
  ``redacted_thinking``); unsigned blocks and OpenAI Responses signatures are dropped. Anthropic opaque
  items go back at their positions, verbatim. In an assistant turn, thinking and redacted thinking
  come before any text or tool use (extended thinking requires it): when consecutive assistant
  messages merge into one turn, a later message's thinking joins the turn's leading thinking.
- ``cache_control`` goes on at most four blocks: the last system block (the last tool when there is no
  system prompt; the cached prefix runs tools, system, messages), and the last cacheable block of the
  messages at ``ctx.cache_breakpoints`` (the latest three when they do not fit).

Tool-call pairing (and unique call ids) come from :func:`contextwarden.pairing.normalize_with_origins`.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any

from ...context import Message, ModelContext
from ...errors import UsageError
from ...log.events import BinaryPart
from ...pairing import normalize_with_origins
from .._common import (
    REDACTED_PREFIX,
    arguments_payload,
    b64,
    clean_text,
    has_opaque,
    is_foreign_to_anthropic_or_gemini,
    join_text,
    with_opaque,
)
from .._render_args import OPENING_TEXT, finish, function_spec, profile_max_tokens, tool_list

__all__ = ["MAX_CACHE_BREAKPOINTS", "call_id", "render_anthropic"]

MAX_CACHE_BREAKPOINTS = 4
"""Anthropic accepts at most this many ``cache_control`` blocks per request."""


_CALL_ID = re.compile(r"[a-zA-Z0-9_-]{1,64}")
_CACHEABLE = frozenset({"text", "image", "document", "tool_use", "tool_result"})
_THINKING = frozenset({"thinking", "redacted_thinking"})
_OWN_FIELDS = frozenset({"model", "max_tokens", "system", "messages", "tools"})
_FORMAT = "anthropic"

Position = tuple[int, int]
"""(turn index, block index) of a content block in the rendered ``messages``."""


def render_anthropic(
    ctx: ModelContext,
    *,
    model: str | None = None,
    max_tokens: int | None = None,
    extra: Mapping[str, Any] | None = None,
    cache_ttl: str = "5m",
) -> dict[str, Any]:
    """Return the body for ``POST /v1/messages``.

    ``model`` defaults to ``ctx.model``, ``max_tokens`` to the model profile's output limit; ``extra``
    adds settings (``temperature``, ``stream``, ``thinking``...). ``cache_ttl``: ``"5m"`` (the default
    cache) or ``"1h"`` (the extended one, written at 2x price).
    """
    if cache_ttl not in ("5m", "1h"):
        raise UsageError(f"cache_ttl must be '5m' or '1h', not {cache_ttl!r}")
    messages, _, origins = normalize_with_origins(ctx.messages)
    system: list[dict[str, Any]] = [{"type": "text", "text": clean_text(ctx.system)}] if ctx.system.strip() else []
    turns: list[dict[str, Any]] = []
    positions: list[Position | None] = []
    leading = True
    for message in messages:
        if leading and message.role in ("system", "developer"):
            text = _text(message)
            if text.strip():
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
            if role == "assistant":
                _join_assistant(content, blocks, len(turns) - 1, positions)
            else:
                content.extend(blocks)
        positions.append(_last_cacheable(turns) if blocks else (positions[-1] if positions else None))
    if not turns or turns[0]["role"] != "user":
        turns.insert(0, {"role": "user", "content": [{"type": "text", "text": OPENING_TEXT}]})
        positions = [(p[0] + 1, p[1]) if p is not None else None for p in positions]
    body: dict[str, Any] = {"model": model or ctx.model, "max_tokens": max_tokens or profile_max_tokens(ctx.model)}
    if system:
        body["system"] = system
    body["messages"] = turns
    tools = tool_list(ctx.tools, _FORMAT, lambda tool: function_spec(tool, schema_key="input_schema"))
    _place_cache_control(ctx, body, system, tools, origins, positions, cache_ttl)
    return finish(body, extra, protected=_OWN_FIELDS, tools=tools)


def call_id(raw: str) -> str:
    """A tool-use id as the Messages API takes it (``^[a-zA-Z0-9_-]{1,64}$``).

    An id made elsewhere that does not fit (``functions.bash:0``, an empty id) is spelled with its
    other characters as ``_`` and a hash of the original, so distinct ids stay distinct and the same
    id always gets the same spelling.
    """
    if _CALL_ID.fullmatch(raw):
        return raw
    digest = hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f"{re.sub(r'[^a-zA-Z0-9_-]', '_', raw)[:48]}_{digest}"


def _text(message: Message) -> str:
    notes = [_note(p) for p in message.parts if not _inline(p)]
    return join_text(message.text, notes)


def _blocks(message: Message) -> list[dict[str, Any]]:
    text = _text(message)
    media = [p for p in message.parts if _inline(p)]
    if message.role == "assistant":
        return _assistant_blocks(message, text)
    if message.role == "tool":
        result: dict[str, Any] = {"type": "tool_result", "tool_use_id": call_id(message.tool_call_id)}
        if media:
            result["content"] = _text_and_media(text, media)
        elif text.strip():
            result["content"] = text
        if message.is_error:
            result["is_error"] = True
        return [result]
    return with_opaque(_text_and_media(text, media), message.opaque, _FORMAT)


def _assistant_blocks(message: Message, text: str) -> list[dict[str, Any]]:
    if not text.strip() and not message.tool_calls and not has_opaque(message.opaque, _FORMAT):
        return []  # thinking alone carries nothing the conversation refers to
    blocks: list[dict[str, Any]] = []
    for block in message.thinking:
        if not block.signature or is_foreign_to_anthropic_or_gemini(block.signature):
            continue
        if block.signature.startswith(REDACTED_PREFIX):
            blocks.append({"type": "redacted_thinking", "data": block.signature[len(REDACTED_PREFIX) :]})
        else:
            blocks.append({"type": "thinking", "thinking": block.text, "signature": block.signature})
    if text.strip():
        # Trailing whitespace is cut everywhere, not only on a final (prefill) turn where the API
        # rejects it, so a turn renders to the same bytes once later turns follow it.
        blocks.append({"type": "text", "text": text.rstrip()})
    blocks.extend(
        {"type": "tool_use", "id": call_id(call.id), "name": call.name, "input": arguments_payload(call)}
        for call in message.tool_calls
    )
    return with_opaque(blocks, message.opaque, _FORMAT)


def _join_assistant(
    content: list[dict[str, Any]], blocks: list[dict[str, Any]], turn: int, positions: list[Position | None]
) -> None:
    """Add a message's ``blocks`` to an assistant turn, its thinking before the turn's text and tool use.

    ``positions`` already placed in this turn move with the blocks they point at.
    """
    thinking = [b for b in blocks if b.get("type") in _THINKING]
    at = next((i for i, b in enumerate(content) if b.get("type") not in _THINKING), len(content))
    if thinking and at < len(content):
        content[at:at] = thinking
        blocks = [b for b in blocks if b.get("type") not in _THINKING]
        for n, p in enumerate(positions):
            if p is not None and p[0] == turn and p[1] >= at:
                positions[n] = (turn, p[1] + len(thinking))
    content.extend(blocks)


def _inline(part: BinaryPart) -> bool:
    return part.media_type in _IMAGE_TYPES or part.media_type == "application/pdf"


_IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})


def _note(part: BinaryPart) -> str:
    label = f" {part.name}" if part.name else ""
    return f"[attachment{label} ({part.media_type}, {len(part.data)} bytes) not shown]"


def _text_and_media(text: str, media: list[BinaryPart]) -> list[dict[str, Any]]:
    # Images and documents first, then the text that refers to them: the order Anthropic recommends.
    blocks: list[dict[str, Any]] = [
        {
            "type": "document" if part.media_type == "application/pdf" else "image",
            "source": {"type": "base64", "media_type": part.media_type, "data": b64(part.data)},
        }
        for part in media
    ]
    if text.strip():
        blocks.append({"type": "text", "text": text})
    return blocks


def _last_cacheable(turns: list[dict[str, Any]]) -> Position | None:
    for turn_index in range(len(turns) - 1, -1, -1):
        content = turns[turn_index]["content"]
        for block_index in range(len(content) - 1, -1, -1):
            if content[block_index].get("type") in _CACHEABLE:
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
    # The cached prefix runs tools, then system, then messages, so one breakpoint at the end of the system
    # prompt covers the tools too; the tools get their own only when there is no system prompt. That leaves
    # three of the four breakpoints for the messages, as the replay's cost model counts them.
    marked: list[dict[str, Any]] = [system[-1]] if system else [tools[-1]] if tools else []
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
