"""Plain message lists: OpenAI Chat Completions and Anthropic Messages.

Accepted shapes: ``{"messages": [...], ...}`` (other top-level keys ignored, except ``model`` and
``tools`` which go to ``metadata`` and Anthropic's ``system``), a bare list of messages, or one message
per line (JSON Lines).

**OpenAI Chat** (``openai-chat``): ``system``/``developer`` → :class:`Instruction`; ``user`` →
:class:`UserMessage` (text parts joined, ``data:`` images → :class:`BinaryPart`); ``assistant`` →
:class:`AssistantMessage` with ``tool_calls`` (the legacy ``function_call`` gets a synthesized id
``function-call-<n>``) and ``reasoning_content`` as thinking; ``tool`` → :class:`ToolResult` by
``tool_call_id``; the legacy ``function`` role answers the latest ``function_call`` of that name.

**Anthropic Messages** (``anthropic-messages``): top-level ``system`` → :class:`Instruction`; ``user``
``tool_result`` blocks → :class:`ToolResult` (``is_error`` kept), its other blocks → one
:class:`UserMessage`; ``assistant`` ``text``/``thinking``/``redacted_thinking``/``tool_use`` → one
:class:`AssistantMessage`.

In both, a message carrying a ``usage`` object (a stored API response) gets a :class:`UsageReport`
right after it.
"""

from __future__ import annotations

from typing import Any

from ..log.events import ToolCall
from ..wire.openai_chat.request import reasoning_blocks
from ..wire.usage import openai_chat_usage
from ._anthropic import add_assistant, assistant_content, system_text, text_and_parts, user_content
from ._builder import TranscriptBuilder
from ._common import (
    Transcript,
    as_dict,
    as_list,
    fail,
    openai_content,
    openai_tool_calls,
    opt_str,
    parse_arguments,
)
from ._source import ImportOptions, SourceDocument

Located = list[tuple[str, Any]]


def load(doc: SourceDocument, options: ImportOptions) -> Transcript:
    """Read an OpenAI Chat or Anthropic Messages conversation, as ``options.format`` says."""
    messages, root = _messages(doc)
    builder = TranscriptBuilder(source=doc.path, format=options.format)
    if isinstance(root.get("model"), str):
        builder.metadata["model"] = root["model"]
    if isinstance(root.get("tools"), list):
        builder.metadata["tools"] = root["tools"]
    if options.format == "anthropic-messages":
        if "system" in root:
            text = system_text(root["system"], doc.path, "$.system")
            builder.instruction(text, source="anthropic system")
        _AnthropicReader(builder, doc.path).read(messages)
    else:
        _OpenAIReader(builder, doc.path).read(messages)
    return builder.build()


def _messages(doc: SourceDocument) -> tuple[Located, dict[str, Any]]:
    """Return the messages, each with its JSON path (or line), and the top-level object if any."""
    if doc.is_jsonl:
        return [(f"line {n}", record) for n, record in doc.lines], {}
    document = doc.document
    if isinstance(document, dict):
        messages = as_list(document.get("messages"), doc.path, "$.messages")
        return [(f"$.messages[{i}]", m) for i, m in enumerate(messages)], document
    messages = as_list(document, doc.path, "$")
    return [(f"$[{i}]", m) for i, m in enumerate(messages)], {}


class _OpenAIReader:
    def __init__(self, builder: TranscriptBuilder, source: str) -> None:
        self.builder = builder
        self.source = source
        self.legacy_calls: dict[str, str] = {}

    def read(self, messages: Located) -> None:
        for where, raw in messages:
            message = as_dict(raw, self.source, where)
            role = opt_str(message, "role", self.source, where)
            text, parts = openai_content(message.get("content"), self.source, where)
            if role in ("system", "developer"):
                self.builder.instruction(text, role=role, source=f"openai {role} message")
            elif role == "user":
                self.builder.user(text, parts=parts)
            elif role == "assistant":
                self._assistant(message, text, where)
            elif role == "tool":
                call_id = opt_str(message, "tool_call_id", self.source, where)
                if not call_id:
                    raise fail(self.source, f"{where}.tool_call_id", "a tool message needs a tool_call_id")
                self.builder.tool_result(call_id, text, parts=parts, where=where)
            elif role == "function":
                self._function_result(message, text, where)
            else:
                self.builder.unknown(f"role:{role}")

    def _assistant(self, message: dict[str, Any], text: str, where: str) -> None:
        calls = openai_tool_calls(message.get("tool_calls"), self.source, where)
        legacy = message.get("function_call")
        if isinstance(legacy, dict):
            call_id = f"function-call-{len(self.legacy_calls) + 1}"
            name = str(legacy.get("name") or "")
            self.legacy_calls[name] = call_id
            calls.append(ToolCall(id=call_id, name=name, arguments=parse_arguments(legacy.get("arguments"))))
        thinking = reasoning_blocks(message)
        model = message.get("model")
        model = model if isinstance(model, str) else ""
        self.builder.assistant(text=text, thinking=thinking, tool_calls=calls, model=model)
        usage = openai_chat_usage(message.get("usage"))
        if usage is not None:
            self.builder.usage(usage, model=model)

    def _function_result(self, message: dict[str, Any], text: str, where: str) -> None:
        name = opt_str(message, "name", self.source, where)
        call_id = self.legacy_calls.pop(name, None)
        if call_id is None:
            self.builder.warn(f"dropped a function result for {name!r} with no function_call at {where}")
            return
        self.builder.tool_result(call_id, text, where=where)


class _AnthropicReader:
    def __init__(self, builder: TranscriptBuilder, source: str) -> None:
        self.builder = builder
        self.source = source

    def read(self, messages: Located) -> None:
        for where, raw in messages:
            message = as_dict(raw, self.source, where)
            role = opt_str(message, "role", self.source, where)
            if role == "user":
                self._user(message, where)
            elif role == "assistant":
                self._assistant(message, where)
            elif role == "system":
                self.builder.instruction(system_text(message.get("content"), self.source, where))
            else:
                self.builder.unknown(f"role:{role}")

    def _user(self, message: dict[str, Any], where: str) -> None:
        content = user_content(message.get("content"), self.source, where)
        for here, block in content.results:
            call_id = opt_str(block, "tool_use_id", self.source, here)
            output, parts = text_and_parts(block.get("content"), self.source, here)
            is_error = bool(block.get("is_error"))
            self.builder.tool_result(call_id, output, is_error=is_error, parts=parts, where=here)
        self.builder.user(content.text, parts=content.parts)

    def _assistant(self, message: dict[str, Any], where: str) -> None:
        content = assistant_content(message.get("content"), self.source, where, self.builder.skip)
        model = message.get("model")
        model = model if isinstance(model, str) else ""
        add_assistant(self.builder, message, content, model=model)
