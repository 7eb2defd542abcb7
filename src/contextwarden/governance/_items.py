"""The comparable form of a model request: items with digests, tokens and labels."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from ..log.events import ToolCall

RequestFormat = Literal["openai_chat", "openai_responses", "anthropic", "gemini", "contextwarden"]
"""The payload formats a request can be read from (``contextwarden``: a built ModelContext)."""
Section = Literal["system", "tools", "messages"]
"""The three parts of a request, in prompt order."""

_FRAGMENT_OPEN = re.compile(r"\s*<([A-Za-z][\w.:-]{0,63})(?:\s[^<>]{0,300})?>")


@dataclass(frozen=True, kw_only=True)
class RequestItem:
    """One unit of a request: a system block, a tool schema, a message or a content block."""

    section: Section
    """Which part of the request it belongs to."""
    index: int
    """Position within its section."""
    role: str
    """``system``, ``developer``, ``user``, ``assistant``, ``tool`` (a tool result) or ``schema``."""
    kind: str
    """What kind of item it is, for rules that group items: ``system``, ``tool_schema``, ``user``,
    ``assistant``, ``reasoning``, ``developer``, ``tool_output:<tool>`` or ``fragment:<tag>``."""
    label: str
    """Where it sits, for people: ``messages[3] (tool result of bash, call_1)``."""
    text: str
    """Its text content (tool calls as ``name(arguments)``, schemas as JSON)."""
    digest: bytes
    """A hash of its bytes as sent; equal digests mean an unchanged item."""
    tokens: int
    """Its token count, message framing and images included."""
    source: str = ""
    """The session event it was projected from (our own sessions only)."""
    injected: bool | None = None
    """Whether the harness injected it rather than the user, the model or a tool authoring it
    (known for our own sessions; ``None`` for foreign logs)."""
    cap: int | None = None
    """Its declared hard cap in tokens, when known (our own sessions)."""
    calls: tuple[ToolCall, ...] = ()
    """Tool calls the item makes (assistant items)."""
    call_id: str = ""
    """The call a tool result answers."""


@dataclass(frozen=True, kw_only=True)
class RequestUsage:
    """What the provider reported for the call, when the log carries the response."""

    input_tokens: int
    """Total input tokens, cached ones included."""
    cache_read_tokens: int = 0
    """Input tokens served from the prompt cache."""
    output_tokens: int = 0
    """Output tokens."""


@dataclass(frozen=True, kw_only=True)
class Request:
    """One model request, split into comparable items."""

    number: int
    """1-based position among the requests read, in call order."""
    line: int
    """The line of the source file it came from (0 when not from a file)."""
    format: RequestFormat
    """The payload format it was read as."""
    model: str
    """The model named in the payload."""
    system: tuple[RequestItem, ...]
    """System prompt blocks (and leading system/developer messages)."""
    tools: tuple[RequestItem, ...]
    """Tool schemas, in the order sent."""
    messages: tuple[RequestItem, ...]
    """Conversation items, in order."""
    stateful: bool = False
    """The payload continues a server-side conversation (``previous_response_id``), so it holds only
    new items and cannot be compared with the request before it."""
    window_events: tuple[str, ...] = ()
    """Window events recorded since the previous request (our own sessions): compaction, context
    edits, tool-set changes. They explain a change of prefix."""
    usage: RequestUsage | None = None
    """Provider usage for the call, when recorded."""
    unreadable: str = ""
    """Why the codec could not read the payload's items (then it has none and is not compared)."""

    @property
    def comparable(self) -> bool:
        """Whether the request can be compared with the one before it (not stateful, items read)."""
        return not (self.stateful or self.unreadable)

    @property
    def items(self) -> tuple[RequestItem, ...]:
        """Every item in prompt order: system, tools, messages."""
        return (*self.system, *self.tools, *self.messages)

    @property
    def total_tokens(self) -> int:
        """Tokens of the whole request."""
        return sum(item.tokens for item in self.items)


@dataclass(frozen=True, kw_only=True)
class BadLine:
    """A line that could not be read as a request; reading goes on after it."""

    line: int
    """The line number."""
    error: str
    """What was wrong, for example ``truncated or invalid JSON: Unterminated string``."""


def canonical_json(value: object) -> bytes:
    """Compact UTF-8 JSON of ``value`` in its own key order (lone surrogates kept)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")


def strip_cache_control(value: object) -> object:
    # Cache breakpoints move every turn but are not part of the cached text.
    if not isinstance(value, Mapping):
        return value
    content = value.get("content")
    nested = isinstance(content, list) and any(isinstance(b, Mapping) and "cache_control" in b for b in content)
    if "cache_control" not in value and not nested:
        return value
    out = {k: v for k, v in value.items() if k != "cache_control"}
    if isinstance(content, list) and nested:
        out["content"] = [
            {k: v for k, v in b.items() if k != "cache_control"} if isinstance(b, Mapping) else b for b in content
        ]
    return out


def item_digest(prefix: str, value: object) -> bytes:
    """A 16-byte hash of ``value`` as sent, cache markers left out, salted with ``prefix``."""
    h = hashlib.blake2b(prefix.encode(), digest_size=16)
    h.update(canonical_json(strip_cache_control(value)))
    return h.digest()


def fragment_tag(text: str) -> str | None:
    """The tag name when ``text`` as a whole is one ``<tag ...>...</tag>`` block, else ``None``."""
    match = _FRAGMENT_OPEN.match(text)
    if match is None:
        return None
    tag = match.group(1)
    return tag if text.rstrip().endswith(f"</{tag}>") else None


def text_kind(role: str, text: str) -> str:
    """The kind of a text item: ``fragment:<tag>`` when one tagged block, else its role's kind."""
    tag = fragment_tag(text) if role in ("user", "developer", "system") else None
    if tag is not None:
        return f"fragment:{tag}"
    return "developer" if role in ("system", "developer") else role
