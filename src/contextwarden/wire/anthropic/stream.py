"""Accumulate an Anthropic Messages stream (server-sent events) into the response body it amounts to.

``message_start`` carries the message shell and the input usage; ``content_block_start`` /
``content_block_delta`` (``text_delta``, ``input_json_delta``, ``thinking_delta``,
``signature_delta``, ``citations_delta``) / ``content_block_stop`` build each block; ``message_delta``
carries the stop reason and the output usage. The result is read by the non-streamed parser, so
both paths give the same events.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .._types import ParsedResponse
from .response import parse_anthropic_response


class AnthropicStream:
    """One streamed Messages response, fed event by event."""

    def __init__(self) -> None:
        self.message: dict[str, Any] = {"content": []}
        self._json: dict[int, list[str]] = {}

    def feed(self, event_type: str, data: Mapping[str, Any]) -> None:
        """Take one SSE event (its ``type`` field names it when ``event_type`` is empty)."""
        kind = event_type or str(data.get("type", ""))
        if kind == "message_start" and isinstance(data.get("message"), Mapping):
            self.message = {**data["message"], "content": list(data["message"].get("content") or [])}
        elif kind == "content_block_start" and isinstance(data.get("content_block"), Mapping):
            index = _index(data, len(self.message["content"]))
            block = dict(data["content_block"])
            if block.get("type") in ("tool_use", "server_tool_use") and block.get("input") == {}:
                self._json[index] = []
            self._put(index, block)
        elif kind == "content_block_delta" and isinstance(data.get("delta"), Mapping):
            self._delta(_index(data, len(self.message["content"]) - 1), data["delta"])
        elif kind == "content_block_stop":
            index = _index(data, len(self.message["content"]) - 1)
            pieces = self._json.pop(index, None)
            if pieces:
                self.message["content"][index]["input"] = json.loads("".join(pieces))
        elif kind == "message_delta":
            delta = data.get("delta")
            if isinstance(delta, Mapping):
                self.message.update({k: v for k, v in delta.items() if v is not None})
            usage = data.get("usage")
            if isinstance(usage, Mapping):
                self.message["usage"] = {**(self.message.get("usage") or {}), **usage}

    def result(self) -> ParsedResponse:
        """The response so far."""
        return parse_anthropic_response(self.message)

    def _put(self, index: int, block: dict[str, Any]) -> None:
        content: list[dict[str, Any]] = self.message["content"]
        while len(content) <= index:
            content.append({})
        content[index] = block

    def _delta(self, index: int, delta: Mapping[str, Any]) -> None:
        if index < 0 or index >= len(self.message["content"]):
            return
        block = self.message["content"][index]
        kind = delta.get("type")
        if kind == "text_delta":
            block["text"] = block.get("text", "") + str(delta.get("text", ""))
        elif kind == "thinking_delta":
            block["thinking"] = block.get("thinking", "") + str(delta.get("thinking", ""))
        elif kind == "signature_delta":
            block["signature"] = block.get("signature", "") + str(delta.get("signature", ""))
        elif kind == "input_json_delta":
            self._json.setdefault(index, []).append(str(delta.get("partial_json", "")))
        elif kind == "citations_delta" and "citation" in delta:
            block.setdefault("citations", []).append(delta["citation"])


def _index(data: Mapping[str, Any], default: int) -> int:
    index = data.get("index")
    return index if isinstance(index, int) and not isinstance(index, bool) else default
