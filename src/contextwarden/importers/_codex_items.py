"""What a Codex rollout line can hold: its record and item types, and the text read from an item's content.

The reader (:mod:`.codex`) decides what each item becomes; this module only names the vocabulary
of ``codex-rs/protocol`` (``RolloutItem`` and ``ResponseItem`` types) and pulls plain text, images
and exit codes out of content arrays, so both can be checked on their own.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..log.events import BinaryPart
from ._common import binary_from_data_url

ENVELOPE_TYPES = frozenset({"session_meta", "response_item", "turn_context", "event_msg", "compacted"})
ITEM_TYPES = frozenset(
    {
        "message",
        "reasoning",
        "function_call",
        "function_call_output",
        "custom_tool_call",
        "custom_tool_call_output",
        "local_shell_call",
        "web_search_call",
        "ghost_snapshot",
        "compaction",
        "compaction_summary",
        "context_compaction",
        "compaction_trigger",
        "tool_search_call",
        "tool_search_output",
        "image_generation_call",
        "agent_message",
        "additional_tools",
        "configuration_update",
    }
)
ASSISTANT_ITEMS = frozenset(
    {
        "reasoning",
        "function_call",
        "custom_tool_call",
        "local_shell_call",
        "tool_search_call",
        "web_search_call",
        "image_generation_call",
    }
)
# Server-side tools: the API ran them and sends their items back as input; kept verbatim, read as nothing.
SERVER_ITEMS = frozenset({"web_search_call", "image_generation_call"})
OUTPUT_ITEMS = frozenset({"function_call_output", "custom_tool_call_output", "tool_search_output"})
COMPACTION_ITEMS = frozenset({"compaction", "compaction_summary", "context_compaction"})
# Harness state and request controls the rollout records but the model never reads as history.
CONTROL_ITEMS = frozenset({"ghost_snapshot", "additional_tools", "configuration_update", "compaction_trigger"})
INJECTED_PREFIXES = ("<user_instructions>", "<environment_context>", "# AGENTS.md instructions")
_EXIT_HEADER = re.compile(r"^(?:Exit code: |Process exited with code )(-?\d+)", re.MULTILINE)


def kind_of(record: dict[str, Any]) -> str:
    """The record's or item's ``type`` ("" when missing)."""
    kind = record.get("type")
    return kind if isinstance(kind, str) else ""


def agent_message_text(item: dict[str, Any]) -> str:
    """Another agent's message to this one (its encrypted parts can only be named)."""
    pieces = []
    content = item.get("content")
    for part in content if isinstance(content, list) else []:
        if isinstance(part, dict) and isinstance(part.get("text"), str):
            pieces.append(part["text"])
        elif isinstance(part, dict) and part.get("type") == "encrypted_content":
            pieces.append("[encrypted content]")
    header = f"[message from agent {item.get('author') or '?'} to {item.get('recipient') or '?'}]"
    return "\n".join([header, *pieces])


def message_text(item: dict[str, Any]) -> tuple[str, list[BinaryPart]]:
    """A message item's text and images (its content is a string or an array of parts)."""
    content = item.get("content")
    if isinstance(content, str):
        return content, []
    return content_text(content if isinstance(content, list) else [])


def content_text(content: list[Any]) -> tuple[str, list[BinaryPart]]:
    """The text parts joined by newlines, and the images among the parts (a URL that is not data stays text)."""
    texts: list[str] = []
    parts: list[BinaryPart] = []
    for block in content:
        if not isinstance(block, dict):
            continue
        if isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif isinstance(block.get("image_url"), str):
            part = binary_from_data_url(block["image_url"])
            if part is not None:
                parts.append(part)
            else:
                texts.append(f"[image: {block['image_url']}]")
    return "\n".join(texts), parts


def exit_code_of(text: str) -> int | None:
    """A tool output's exit code: the ``{"output", "metadata": {"exit_code"}}`` form or an ``Exit code: N`` header."""
    if text.startswith("{"):
        try:
            parsed = json.loads(text)
        except (ValueError, RecursionError):
            parsed = None
        meta = parsed.get("metadata") if isinstance(parsed, dict) else None
        if isinstance(meta, dict) and isinstance(meta.get("exit_code"), int):
            return int(meta["exit_code"])
    match = _EXIT_HEADER.search(text[:200])
    return int(match.group(1)) if match else None
