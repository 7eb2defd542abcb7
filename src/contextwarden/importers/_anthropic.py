"""Anthropic Messages content blocks, shared by the Claude Code and the plain Anthropic importers."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..events import BinaryPart, ThinkingBlock, ToolCall
from ._common import as_dict, binary_from_base64, fail, parse_arguments


@dataclass
class AssistantContent:
    """The parts of one assistant message's content."""

    texts: list[str] = field(default_factory=list)
    thinking: list[ThinkingBlock] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)

    @property
    def text(self) -> str:
        """The text blocks joined by blank lines."""
        return "\n\n".join(t for t in self.texts if t)


def assistant_content(content: Any, source: str, where: str, skip: Callable[[str], None]) -> AssistantContent:
    """Read an assistant ``content`` (a string or blocks); unsupported block types are passed to ``skip``."""
    out = AssistantContent()
    if isinstance(content, str):
        out.texts.append(content)
        return out
    if content is None:
        return out
    if not isinstance(content, list):
        raise fail(source, f"{where}.content", "expected a string or an array of blocks")
    for index, raw in enumerate(content):
        block = as_dict(raw, source, f"{where}.content[{index}]")
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            out.texts.append(block["text"])
        elif kind == "thinking":
            out.thinking.append(
                ThinkingBlock(text=str(block.get("thinking") or ""), signature=str(block.get("signature") or ""))
            )
        elif kind == "redacted_thinking":
            out.thinking.append(ThinkingBlock(text="", signature=str(block.get("data") or "")))
        elif kind == "tool_use":
            call_id = block.get("id")
            if not isinstance(call_id, str) or not call_id:
                raise fail(source, f"{where}.content[{index}].id", "a tool_use block needs an id")
            name = str(block.get("name") or "")
            out.calls.append(ToolCall(id=call_id, name=name, arguments=parse_arguments(block.get("input"))))
        else:
            skip(f"assistant block:{kind}")
    return out


def collect_block(block: dict[str, Any], texts: list[str], parts: list[BinaryPart]) -> None:
    """Add a user-side ``text``, ``image`` or ``document`` block to ``texts`` or ``parts``."""
    kind = block.get("type")
    if kind == "text" and isinstance(block.get("text"), str):
        texts.append(block["text"])
    elif kind in ("image", "document"):
        source = block.get("source")
        source = source if isinstance(source, dict) else {}
        data = source.get("data")
        part = None
        if source.get("type") == "base64" and isinstance(data, str):
            part = binary_from_base64(str(source.get("media_type") or ""), data)
        if part is not None:
            parts.append(part)
        else:
            url = source.get("url")
            texts.append(f"[{kind}: {url}]" if isinstance(url, str) else f"[{kind}]")


def text_and_parts(content: Any, source: str, where: str) -> tuple[str, list[BinaryPart]]:
    """Text and binary parts of a ``content`` that is a string, null or an array of blocks."""
    if content is None:
        return "", []
    if isinstance(content, str):
        return content, []
    if not isinstance(content, list):
        raise fail(source, f"{where}.content", "expected a string or an array of blocks")
    texts: list[str] = []
    parts: list[BinaryPart] = []
    for index, block in enumerate(content):
        collect_block(as_dict(block, source, f"{where}.content[{index}]"), texts, parts)
    return "\n".join(texts), parts


def system_text(system: Any, source: str, where: str) -> str:
    """Return the text of an Anthropic ``system`` field (a string or text blocks)."""
    text, _ = text_and_parts(system, source, where)
    return text


@dataclass
class UserContent:
    """The parts of one user message's content: tool results first (as the API requires), then the rest."""

    results: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    """``(JSON path, tool_result block)`` pairs, in order."""
    texts: list[str] = field(default_factory=list)
    parts: list[BinaryPart] = field(default_factory=list)

    @property
    def text(self) -> str:
        """The text blocks joined by blank lines."""
        return "\n\n".join(t for t in self.texts if t)


def user_content(content: Any, source: str, where: str) -> UserContent:
    """Read a user ``content`` (a string or blocks) into tool results, text and binary parts."""
    out = UserContent()
    if isinstance(content, str):
        out.texts.append(content)
        return out
    if not isinstance(content, list):
        raise fail(source, f"{where}.content", "expected a string or an array of blocks")
    for index, raw in enumerate(content):
        here = f"{where}.content[{index}]"
        block = as_dict(raw, source, here)
        if block.get("type") == "tool_result":
            out.results.append((here, block))
        else:
            collect_block(block, out.texts, out.parts)
    return out
