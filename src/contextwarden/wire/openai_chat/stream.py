"""Accumulate an OpenAI Chat Completions stream (``chat.completion.chunk`` events) into a response body.

Each chunk's ``choices[0].delta`` adds ``content``, ``refusal``, ``reasoning_content`` and
``tool_calls`` fragments (joined by their ``index``); ``finish_reason`` ends the choice; the last chunk
carries ``usage`` when the request asked for it (``stream_options.include_usage``). The stream's
``[DONE]`` sentinel is not JSON and is not fed. The result is read by the non-streamed parser.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._types import ParsedResponse
from .response import parse_openai_chat_response


class OpenAIChatStream:
    """One streamed Chat Completions response, fed chunk by chunk."""

    def __init__(self) -> None:
        self.body: dict[str, Any] = {}
        self.message: dict[str, Any] = {"role": "assistant"}
        self.finish_reason: str | None = None
        self._calls: dict[int, dict[str, Any]] = {}

    def feed(self, event_type: str, data: Mapping[str, Any]) -> None:
        """Take one chunk (Chat Completions streams do not name their events)."""
        del event_type
        for key in ("id", "model", "created"):
            if key in data and key not in self.body:
                self.body[key] = data[key]
        if isinstance(data.get("usage"), Mapping):
            self.body["usage"] = data["usage"]
        choices = data.get("choices")
        choice = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], Mapping) else None
        if choice is None:
            return
        if choice.get("finish_reason"):
            self.finish_reason = str(choice["finish_reason"])
        delta = choice.get("delta")
        if not isinstance(delta, Mapping):
            return
        for key in ("content", "refusal", "reasoning_content"):
            if isinstance(delta.get(key), str):
                self.message[key] = self.message.get(key, "") + delta[key]
        for raw in delta.get("tool_calls") or ():
            if isinstance(raw, Mapping):
                self._call(raw)

    def result(self) -> ParsedResponse:
        """The response so far."""
        message = dict(self.message)
        if self._calls:
            message["tool_calls"] = [self._calls[i] for i in sorted(self._calls)]
        body = {**self.body, "choices": [{"index": 0, "message": message, "finish_reason": self.finish_reason}]}
        return parse_openai_chat_response(body)

    def _call(self, raw: Mapping[str, Any]) -> None:
        index = raw.get("index", len(self._calls))
        index = index if isinstance(index, int) else len(self._calls)
        call = self._calls.setdefault(index, {"id": "", "type": "function", "function": {"name": "", "arguments": ""}})
        if raw.get("id"):
            call["id"] = str(raw["id"])
        function = raw.get("function")
        if isinstance(function, Mapping):
            if function.get("name"):
                call["function"]["name"] += str(function["name"])
            if function.get("arguments"):
                call["function"]["arguments"] += str(function["arguments"])
