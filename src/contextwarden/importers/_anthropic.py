"""Anthropic Messages content blocks, shared by the Claude Code and the plain Anthropic importers.

Each block is read by the wire layer's Anthropic codec (:mod:`contextwarden.wire.anthropic.request`),
so a transcript and a live request mean the same thing; this module adds the importers' strictness (a
malformed block is an error naming its JSON path) and their leniency: a ``tool_use`` or ``thinking``
block carrying a field the codec does not write back (a newer API's ``caller``, say) is still the call
or the reasoning the model made, so it is read as one rather than lost; any other block (a server tool
call and its result, a block type this version does not know) is kept verbatim as an
:class:`~contextwarden.log.events.OpaquePart` the Anthropic renderer sends back where it came.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..log.events import BinaryPart, OpaquePart, ThinkingBlock, ToolCall
from ..wire._common import arguments_object
from ..wire.anthropic.request import assistant_block, content_block
from ..wire.usage import anthropic_usage
from ._builder import TranscriptBuilder
from ._common import as_dict, fail


@dataclass
class AssistantContent:
    """The parts of one assistant message's content."""

    texts: list[str] = field(default_factory=list)
    thinking: list[ThinkingBlock] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)
    opaque: list[OpaquePart] = field(default_factory=list)
    """Blocks kept verbatim (server tool use and results, unknown types), in order."""

    @property
    def text(self) -> str:
        """The text blocks joined by blank lines."""
        return "\n\n".join(t for t in self.texts if t)


def assistant_content(content: Any, source: str, where: str, skip: Callable[[str], None]) -> AssistantContent:
    """Read an assistant ``content`` (a string or blocks); a block kept verbatim is also counted by ``skip``."""
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
        if block.get("type") == "tool_use" and (not isinstance(block.get("id"), str) or not block.get("id")):
            raise fail(source, f"{where}.content[{index}].id", "a tool_use block needs an id")
        read = assistant_block(block, index)
        if isinstance(read, str):
            out.texts.append(read)
        elif isinstance(read, ThinkingBlock):
            out.thinking.append(read)
        elif isinstance(read, ToolCall):
            out.calls.append(read)
        elif read.kind == "text" and isinstance(block.get("text"), str):
            out.texts.append(block["text"])  # text with citations: the model saw the text
        elif read.kind == "tool_use" and isinstance(block.get("name"), str):
            out.calls.append(
                ToolCall(id=block["id"], name=block["name"], arguments=arguments_object(block.get("input")))
            )
        elif read.kind == "thinking" and isinstance(block.get("thinking"), str):
            out.thinking.append(ThinkingBlock(text=block["thinking"], signature=str(block.get("signature") or "")))
        else:
            out.opaque.append(read)
            skip(f"assistant block:{read.kind} (kept verbatim)")
    return out


def add_assistant(
    builder: TranscriptBuilder,
    message: dict[str, Any],
    content: AssistantContent,
    *,
    model: str,
    request_id: str = "",
    key: str | None = None,
    at: float | None = None,
) -> None:
    """Append an Anthropic assistant ``message`` (its ``content`` read) and the usage it reports."""
    builder.assistant(
        text=content.text,
        thinking=content.thinking,
        tool_calls=content.calls,
        opaque=content.opaque,
        model=model,
        stop_reason=str(message.get("stop_reason") or ""),
        key=key,
        at=at,
    )
    usage = anthropic_usage(message.get("usage"))
    if usage is not None:
        builder.usage(usage, model=model, request_id=request_id, key=key)


def collect_block(block: dict[str, Any], texts: list[str], parts: list[BinaryPart]) -> None:
    """Add a user-side ``text``, ``image`` or ``document`` block to ``texts`` or ``parts``.

    An image or document the wire layer cannot inline (a URL or file reference) becomes a
    ``[image: URL]`` line, so the imported text still says what was shown.
    """
    if content_block(block, texts, parts):
        return
    kind = block.get("type")
    if kind in ("image", "document"):
        source = block.get("source")
        url = source.get("url") if isinstance(source, dict) else None
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
