"""Reading OpenAI Chat, OpenAI Responses and Anthropic Messages payloads into request items."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..events import ToolCall
from ..tokens import IMAGE_TOKENS, MESSAGE_OVERHEAD, TokenCounter
from ..wire import detect_format as wire_detect_format
from ..wire._common import parse_arguments
from ._items import (
    RequestFormat,
    RequestItem,
    RequestUsage,
    Section,
    canonical_json,
    item_digest,
    strip_cache_control,
    text_kind,
)

_WRAPPERS = ("request", "body", "payload", "params")


def detect_format(payload: Mapping[str, Any]) -> RequestFormat | None:
    """The request format of a payload, or ``None`` when it is not a request the linter reads.

    The format is :func:`contextwarden.wire.detect_format`'s; Gemini bodies are not linted yet.
    """
    fmt = wire_detect_format(payload)
    return None if fmt == "gemini" else fmt


def unwrap(raw: Mapping[str, Any]) -> tuple[Mapping[str, Any], RequestFormat | None, Mapping[str, Any] | None]:
    """The request payload inside ``raw`` (itself, or under a wrapper key), its format and its response."""
    fmt = detect_format(raw)
    if fmt is not None:
        return raw, fmt, None
    for key in _WRAPPERS:
        inner = raw.get(key)
        fmt = detect_format(inner) if isinstance(inner, Mapping) else None
        if fmt is not None:
            assert isinstance(inner, Mapping)
            response = raw.get("response")
            return inner, fmt, response if isinstance(response, Mapping) else None
    return raw, None, None


def _content_text(content: object) -> tuple[str, int]:
    """Text and image count of a message ``content`` (a string or a list of parts)."""
    if isinstance(content, str):
        return content, 0
    if not isinstance(content, list):
        return "", 0
    texts: list[str] = []
    images = 0
    for part in content:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, Mapping):
            kind = part.get("type")
            if kind in ("image", "image_url", "input_image", "document", "input_file"):
                images += 1
            elif isinstance(part.get("text"), str):
                texts.append(part["text"])
            elif isinstance(part.get("content"), (str, list)):
                inner, more = _content_text(part["content"])
                texts.append(inner)
                images += more
    return "\n".join(texts), images


class ItemBuilder:
    """Collects the items of one payload, reusing the previous request's token counts."""

    def __init__(self, counter: TokenCounter, known: dict[bytes, int]) -> None:
        self.counter = counter
        self.known = known
        self.system: list[RequestItem] = []
        self.tools: list[RequestItem] = []
        self.messages: list[RequestItem] = []
        self.call_names: dict[str, str] = {}
        self._calls: list[ToolCall] = []

    def add(
        self,
        section: Section,
        *,
        role: str,
        kind: str,
        label: str,
        text: str,
        digest: bytes,
        images: int = 0,
        overhead: int = MESSAGE_OVERHEAD,
        call_id: str = "",
    ) -> None:
        """Append one item; tool calls collected by :meth:`call` since the last item go with it."""
        tokens = self.known.get(digest)
        if tokens is None:
            tokens = overhead + self.counter.count(text) + images * IMAGE_TOKENS
            self.known[digest] = tokens
        target = {"system": self.system, "tools": self.tools, "messages": self.messages}[section]
        target.append(
            RequestItem(
                section=section,
                index=len(target),
                role=role,
                kind=kind,
                label=label,
                text=text,
                digest=digest,
                tokens=tokens,
                calls=tuple(self._calls),
                call_id=call_id,
            )
        )
        self._calls.clear()

    def tool(self, index: int, raw: object) -> None:
        spec = raw if isinstance(raw, Mapping) else {}
        function = spec.get("function")
        name = function.get("name") if isinstance(function, Mapping) else spec.get("name", spec.get("type"))
        text = canonical_json(strip_cache_control(raw)).decode("utf-8", "surrogatepass")
        self.add(
            "tools",
            role="schema",
            kind="tool_schema",
            label=f"tools[{index}] ({name})",
            text=text,
            digest=item_digest("tool", raw),
            overhead=0,
        )

    def call(self, call_id: str, name: str, arguments: str) -> str:
        """Note a tool call of the next item; returns its text form ``name(arguments)``."""
        self.call_names[call_id] = name
        self._calls.append(ToolCall(id=call_id, name=name, arguments=parse_arguments(arguments)))
        return f"{name}({arguments})"


def chat_items(b: ItemBuilder, payload: Mapping[str, Any]) -> None:
    leading = True
    for i, raw in enumerate(payload.get("messages") or ()):
        message = raw if isinstance(raw, Mapping) else {}
        role = str(message.get("role", "user"))
        text, images = _content_text(message.get("content"))
        kind = text_kind(role, text)
        label = f"messages[{i}] ({role})"
        call_id = ""
        if role == "assistant":
            calls = [c for c in message.get("tool_calls") or () if isinstance(c, Mapping)]
            pieces = [text] if text else []
            for c in calls:
                function = c.get("function")
                fn: Mapping[str, Any] = function if isinstance(function, Mapping) else {}
                pieces.append(b.call(str(c.get("id", "")), str(fn.get("name", "")), str(fn.get("arguments", ""))))
            reasoning = message.get("reasoning_content")
            if isinstance(reasoning, str):
                pieces.insert(0, reasoning)
            text = "\n".join(pieces)
        elif role == "tool":
            call_id = str(message.get("tool_call_id", ""))
            name = b.call_names.get(call_id, str(message.get("name", "")))
            kind, label = f"tool_output:{name}", f"messages[{i}] (tool result of {name}, {call_id})"
        section: Section = "system" if leading and role in ("system", "developer") else "messages"
        leading = leading and section == "system"
        b.add(
            section,
            role=role,
            kind="system" if section == "system" else kind,
            label=label,
            text=text,
            digest=item_digest("m", raw),
            images=images,
            call_id=call_id,
        )


def _responses_item(b: ItemBuilder, i: int, raw: object) -> tuple[Section | None, str]:
    """Add one Responses input item; returns its section (None when added) and role."""
    item = raw if isinstance(raw, Mapping) else {}
    kind = str(item.get("type") or ("message" if "role" in item else "unknown"))
    if kind == "message":
        return None, str(item.get("role", "user"))
    if kind == "function_call":
        text = b.call(str(item.get("call_id", "")), str(item.get("name", "")), str(item.get("arguments", "")))
        b.add(
            "messages",
            role="assistant",
            kind="assistant",
            label=f"input[{i}] (call {item.get('name')})",
            text=text,
            digest=item_digest("m", raw),
        )
    elif kind == "function_call_output":
        call_id = str(item.get("call_id", ""))
        name = b.call_names.get(call_id, "")
        text, images = _content_text(item.get("output"))
        b.add(
            "messages",
            role="tool",
            kind=f"tool_output:{name}",
            label=f"input[{i}] (tool result of {name}, {call_id})",
            text=text,
            digest=item_digest("m", raw),
            images=images,
            call_id=call_id,
        )
    elif kind == "reasoning":
        text, _ = _content_text(item.get("summary") or item.get("content"))
        b.add(
            "messages",
            role="assistant",
            kind="reasoning",
            label=f"input[{i}] (reasoning)",
            text=text,
            digest=item_digest("m", raw),
        )
    else:
        text = canonical_json(raw).decode("utf-8", "surrogatepass")
        b.add(
            "messages",
            role="assistant",
            kind=kind,
            label=f"input[{i}] ({kind})",
            text=text,
            digest=item_digest("m", raw),
        )
    return "messages", ""


def responses_items(b: ItemBuilder, payload: Mapping[str, Any]) -> None:
    instructions = payload.get("instructions")
    if isinstance(instructions, str) and instructions:
        b.add(
            "system",
            role="system",
            kind="system",
            label="instructions",
            text=instructions,
            digest=item_digest("m", {"role": "system", "content": instructions}),
        )
    items = payload.get("input")
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    leading = True
    for i, raw in enumerate(items or ()):
        section, role = _responses_item(b, i, raw)
        if section is not None:
            leading = False
            continue
        text, images = _content_text(raw.get("content") if isinstance(raw, Mapping) else None)
        is_system = leading and role in ("system", "developer")
        leading = is_system
        b.add(
            "system" if is_system else "messages",
            role=role,
            kind="system" if is_system else text_kind(role, text),
            label=f"input[{i}] ({role})",
            text=text,
            digest=item_digest("m", raw),
            images=images,
        )


def _anthropic_block(b: ItemBuilder, role: str, i: int, j: int, block: Mapping[str, Any]) -> None:
    kind = block.get("type")
    label = f"messages[{i}].content[{j}] ({kind})"
    images = 0
    call_id = ""
    if kind == "tool_use":
        args = canonical_json(block.get("input", {})).decode("utf-8", "surrogatepass")
        text, item_kind = b.call(str(block.get("id", "")), str(block.get("name", "")), args), "assistant"
    elif kind == "tool_result":
        call_id = str(block.get("tool_use_id", ""))
        name = b.call_names.get(call_id, "")
        text, images = _content_text(block.get("content"))
        role, item_kind = "tool", f"tool_output:{name}"
        label = f"messages[{i}].content[{j}] (tool result of {name}, {call_id})"
    elif kind in ("thinking", "redacted_thinking"):
        text, item_kind = str(block.get("thinking", "")), "reasoning"
    else:
        text, images = _content_text([block])
        item_kind = text_kind(role, text)
    b.add(
        "messages",
        role=role,
        kind=item_kind,
        label=label,
        text=text,
        digest=item_digest(f"{role}\0{j}\0", block),
        images=images,
        overhead=MESSAGE_OVERHEAD if j == 0 else 1,
        call_id=call_id,
    )


def anthropic_items(b: ItemBuilder, payload: Mapping[str, Any]) -> None:
    system = payload.get("system")
    blocks = [{"type": "text", "text": system}] if isinstance(system, str) else system
    for j, block in enumerate(blocks if isinstance(blocks, list) else ()):
        text, _ = _content_text([block])
        b.add(
            "system",
            role="system",
            kind="system",
            label=f"system[{j}]" if not isinstance(system, str) else "system",
            text=text,
            digest=item_digest("sys", block),
        )
    for i, raw in enumerate(payload.get("messages") or ()):
        message = raw if isinstance(raw, Mapping) else {}
        role = str(message.get("role", "user"))
        content = message.get("content")
        if isinstance(content, str):
            b.add(
                "messages",
                role=role,
                kind=text_kind(role, content),
                label=f"messages[{i}] ({role})",
                text=content,
                digest=item_digest(f"{role}\0{0}\0", {"type": "text", "text": content}),
            )
            continue
        for j, block in enumerate(content if isinstance(content, list) else ()):
            if isinstance(block, Mapping):
                _anthropic_block(b, role, i, j, block)


def response_usage(response: Mapping[str, Any] | None) -> RequestUsage | None:
    usage = response.get("usage") if response is not None else None
    if not isinstance(usage, Mapping):
        return None

    def num(mapping: object, key: str) -> int:
        value = mapping.get(key) if isinstance(mapping, Mapping) else None
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    if "prompt_tokens" in usage:
        return RequestUsage(
            input_tokens=num(usage, "prompt_tokens"),
            output_tokens=num(usage, "completion_tokens"),
            cache_read_tokens=num(usage.get("prompt_tokens_details"), "cached_tokens"),
        )
    if "cache_read_input_tokens" in usage or "cache_creation_input_tokens" in usage:
        read = num(usage, "cache_read_input_tokens")
        total = num(usage, "input_tokens") + read + num(usage, "cache_creation_input_tokens")
        return RequestUsage(input_tokens=total, cache_read_tokens=read, output_tokens=num(usage, "output_tokens"))
    return RequestUsage(
        input_tokens=num(usage, "input_tokens"),
        output_tokens=num(usage, "output_tokens"),
        cache_read_tokens=num(usage.get("input_tokens_details"), "cached_tokens"),
    )
