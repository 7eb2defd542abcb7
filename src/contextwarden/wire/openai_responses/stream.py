"""Accumulate an OpenAI Responses stream (semantic server-sent events) into a response body.

``response.created`` / ``response.in_progress`` carry the response shell; each finished output item
arrives whole in ``response.output_item.done``; ``response.completed`` (or ``response.incomplete`` /
``response.failed``) carries the final response with its ``usage``, which wins. Text deltas are
collected too, so a stream cut off before its items finish still yields the text seen so far. The
result is read by the non-streamed parser.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._types import ParsedResponse
from .response import parse_openai_responses_response

_FINAL = frozenset({"response.completed", "response.incomplete", "response.failed"})


class OpenAIResponsesStream:
    """One streamed Responses response, fed event by event."""

    def __init__(self) -> None:
        self.response: dict[str, Any] = {}
        self.items: dict[int, dict[str, Any]] = {}
        self._text: dict[int, str] = {}
        self._final = False

    def feed(self, event_type: str, data: Mapping[str, Any]) -> None:
        """Take one SSE event (its ``type`` field names it when ``event_type`` is empty)."""
        kind = event_type or str(data.get("type", ""))
        response = data.get("response")
        if isinstance(response, Mapping) and (kind in _FINAL or not self._final):
            self.response = dict(response)
            self._final = kind in _FINAL
        index = data.get("output_index")
        if not isinstance(index, int):
            return
        if kind in ("response.output_item.added", "response.output_item.done") and isinstance(
            data.get("item"), Mapping
        ):
            self.items[index] = dict(data["item"])
        elif kind == "response.output_text.delta":
            self._text[index] = self._text.get(index, "") + str(data.get("delta", ""))

    def result(self) -> ParsedResponse:
        """The response so far (the final response's own ``output`` when it came)."""
        body = dict(self.response)
        if not self._final or not isinstance(body.get("output"), list):
            output = []
            for index in sorted(set(self.items) | set(self._text)):
                item = self.items.get(index, {"type": "message", "role": "assistant", "content": []})
                if item.get("type") == "message" and not item.get("content") and index in self._text:
                    item = {**item, "content": [{"type": "output_text", "text": self._text[index]}]}
                output.append(item)
            body["output"] = output
        return parse_openai_responses_response(body)
