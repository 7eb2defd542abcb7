"""What a provider refuses: the scripted upstream's strict checks of a request body.

:func:`problems` lists, for an Anthropic Messages or OpenAI Responses body, the reasons the real API
would answer 400, in its own words where they are known. Among them:

- Anthropic: a conversation that does not start with a user turn or does not alternate user and
  assistant (``system`` messages inside ``messages`` are allowed anywhere and skipped); a
  ``tool_use`` whose result is not in the next user turn, a ``tool_result`` that answers no call of
  the turn before, duplicate ids; an empty text block; more than 4 ``cache_control`` breakpoints;
  with thinking on, a thinking block after text or a tool call, or an assistant turn that calls
  a tool without starting with its thinking; a thinking block whose signature is not the one issued
  for that text (:func:`signature`), which is what a client or proxy that edits thinking meets.
- OpenAI Responses: a ``function_call_output``, ``custom_tool_call_output`` or client-executed
  ``tool_search_output`` whose call is not earlier in the input, a call without its output,
  duplicate call ids, and encrypted reasoning that was not issued by this upstream (:func:`encrypted`).
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Mapping
from typing import Any

MAX_BREAKPOINTS = 4
"""Anthropic's limit on ``cache_control`` blocks in one request."""

_KEY = b"contextwarden-scripted"


def signature(thinking: str) -> str:
    """The signature the upstream issues for a thinking block's text (so an edited block is caught)."""
    return base64.b64encode(hashlib.sha256(_KEY + thinking.encode()).digest() * 2).decode()


def encrypted(text: str) -> str:
    """The opaque ``encrypted_content`` the upstream issues for a reasoning item's text."""
    digest = hashlib.sha256(_KEY + text.encode()).digest()
    return "gAAAAA" + base64.b64encode(digest + text.encode()).decode()


def _decrypts(content: Any) -> bool:
    if not isinstance(content, str) or not content.startswith("gAAAAA"):
        return False
    try:
        raw = base64.b64decode(content[6:], validate=True)
    except ValueError:
        return False
    return len(raw) >= 32 and hashlib.sha256(_KEY + raw[32:]).digest() == raw[:32]


def problems(fmt: str, body: Mapping[str, Any]) -> list[str]:
    """Why the provider of ``fmt`` would refuse ``body`` (empty: it would accept it)."""
    if fmt == "anthropic":
        return _anthropic(body)
    if fmt == "openai_responses":
        return _responses(body)
    return []


def _blocks(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content) if isinstance(content, list) else []


def _count_breakpoints(value: Any) -> int:
    if isinstance(value, Mapping):
        return int("cache_control" in value) + sum(_count_breakpoints(v) for v in value.values())
    if isinstance(value, list):
        return sum(_count_breakpoints(v) for v in value)
    return 0


def _thinking_on(body: Mapping[str, Any]) -> bool:
    thinking = body.get("thinking")
    return isinstance(thinking, Mapping) and thinking.get("type") in ("enabled", "adaptive")


def _anthropic(body: Mapping[str, Any]) -> list[str]:
    out: list[str] = []
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return ["messages: at least one message is required"]
    if not isinstance(body.get("max_tokens"), int):
        out.append("max_tokens: Field required")
    points = _count_breakpoints(body.get("tools")) + _count_breakpoints(body.get("system"))
    points += _count_breakpoints(messages)
    if points > MAX_BREAKPOINTS:
        out.append(f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. Found {points}.")
    turns = [(i, m) for i, m in enumerate(messages) if not (isinstance(m, Mapping) and m.get("role") == "system")]
    thinking = _thinking_on(body)
    seen_ids: set[str] = set()
    expected = "user"
    pending: set[str] = set()
    for i, message in turns:
        if not isinstance(message, Mapping) or message.get("role") not in ("user", "assistant"):
            out.append(f"messages.{i}: role must be 'user', 'assistant' or 'system'")
            continue
        role = message["role"]
        if role != expected:
            out.append(f"messages.{i}: roles must alternate between 'user' and 'assistant' (found two '{role}')")
        expected = "assistant" if role == "user" else "user"
        blocks = _blocks(message.get("content"))
        if not blocks and not (role == "assistant" and i == len(messages) - 1):
            out.append(f"messages.{i}: all messages must have non-empty content")
        for j, block in enumerate(blocks):
            if isinstance(block, Mapping) and block.get("type") == "text" and not block.get("text"):
                out.append(f"messages.{i}.content.{j}.text: text content blocks must be non-empty")
        if role == "user":
            out += _results(i, blocks, pending)
            pending = set()
        else:
            out += _assistant(i, blocks, thinking, seen_ids)
            pending = {b["id"] for b in blocks if isinstance(b, Mapping) and b.get("type") == "tool_use"}
    return out


def _results(i: int, blocks: list[Any], pending: set[str]) -> list[str]:
    out: list[str] = []
    answered = [b.get("tool_use_id") for b in blocks if isinstance(b, Mapping) and b.get("type") == "tool_result"]
    for tool_id in answered:
        if tool_id not in pending:
            out.append(
                f"messages.{i}.content: unexpected `tool_use_id` found in `tool_result` blocks: {tool_id}. "
                "Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
            )
    if len(set(answered)) != len(answered):
        out.append(f"messages.{i}.content: duplicate `tool_use_id` in `tool_result` blocks")
    missing = sorted(pending - set(answered))
    if missing:
        out.append(
            f"messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately after: "
            f"{', '.join(missing)}. Each `tool_use` block must have a corresponding `tool_result` block "
            "in the next message."
        )
    return out


def _assistant(i: int, blocks: list[Any], thinking: bool, seen_ids: set[str]) -> list[str]:
    out: list[str] = []
    text = False
    for j, block in enumerate(blocks):
        if not isinstance(block, Mapping):
            out.append(f"messages.{i}.content.{j}: a content block must be an object")
            continue
        kind = block.get("type")
        if kind in ("thinking", "redacted_thinking"):
            if thinking and text:
                out.append(f"messages.{i}.content.{j}: a thinking block cannot follow text in an assistant message")
            if kind == "thinking" and block.get("signature") != signature(str(block.get("thinking", ""))):
                out.append(f"messages.{i}.content.{j}: Invalid `signature` in `thinking` block")
            continue
        text = text or kind == "text"
        if kind == "tool_use":
            if block.get("id") in seen_ids:
                out.append(f"messages.{i}.content.{j}: `tool_use` ids must be unique: {block.get('id')}")
            seen_ids.add(str(block.get("id")))
    calls = any(isinstance(b, Mapping) and b.get("type") == "tool_use" for b in blocks)
    first = blocks[0].get("type") if blocks and isinstance(blocks[0], Mapping) else None
    if thinking and calls and first not in ("thinking", "redacted_thinking"):
        out.append(
            f"messages.{i}.content.0: Expected `thinking` or `redacted_thinking`, but found `{first}`. When "
            "`thinking` is enabled, a final `assistant` message must start with a thinking block."
        )
    return out


_CALLS = {
    "function_call": "function_call_output",
    "custom_tool_call": "custom_tool_call_output",
    "tool_search_call": "tool_search_output",
}
_OUTPUTS = {v: k for k, v in _CALLS.items()}
_SEARCHES = ("tool_search_call", "tool_search_output")


def _responses(body: Mapping[str, Any]) -> list[str]:
    items = body.get("input")
    if isinstance(items, str):
        return []
    if not isinstance(items, list):
        return ["input: Field required"]
    out: list[str] = []
    calls: dict[str, str] = {}
    answered: set[str] = set()
    for i, item in enumerate(items):
        if not isinstance(item, Mapping):
            out.append(f"input[{i}]: an input item must be an object")
            continue
        kind = item.get("type", "message")
        call_id = str(item.get("call_id", ""))
        if kind in _SEARCHES and item.get("execution") != "client":
            continue  # a search the API ran itself: its output is the API's own, with no call id to match
        if kind in _CALLS:
            if call_id in calls:
                out.append(f"input[{i}]: Duplicate item found with call_id {call_id}.")
            calls[call_id] = kind
        elif kind in _OUTPUTS:
            if calls.get(call_id) != _OUTPUTS[kind]:
                out.append(f"No tool call found for {kind} with call_id {call_id}.")
            answered.add(call_id)
        elif kind == "reasoning" and item.get("encrypted_content") is not None:
            if not _decrypts(item.get("encrypted_content")):
                out.append(f"input[{i}]: The encrypted content for item {item.get('id')} could not be verified.")
        elif kind == "message" and item.get("role") not in ("user", "assistant", "system", "developer"):
            out.append(f"input[{i}].role: Invalid value: {item.get('role')!r}")
    for call_id in calls:
        if call_id not in answered:
            out.append(f"No tool output found for function call {call_id}.")
    return out
