"""Accumulate a Gemini ``streamGenerateContent`` stream (``alt=sse``) into one response body.

Each event is a whole ``GenerateContentResponse`` holding the next parts of ``candidates[0]``;
consecutive text parts of one kind (thought or answer) are joined, other parts kept in order. The last
``finishReason`` and ``usageMetadata`` win. The result is read by the non-streamed parser.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._types import ParsedResponse
from .response import parse_gemini_response


class GeminiStream:
    """One streamed Gemini response, fed chunk by chunk."""

    def __init__(self) -> None:
        self.body: dict[str, Any] = {}
        self.parts: list[dict[str, Any]] = []
        self.candidate: dict[str, Any] = {}

    def feed(self, event_type: str, data: Mapping[str, Any]) -> None:
        """Take one chunk (Gemini streams do not name their events)."""
        del event_type
        for key, value in data.items():
            if key != "candidates":
                self.body[key] = value
        candidates = data.get("candidates")
        if not isinstance(candidates, list) or not candidates or not isinstance(candidates[0], Mapping):
            return
        candidate = candidates[0]
        self.candidate.update({k: v for k, v in candidate.items() if k != "content"})
        content = candidate.get("content")
        for part in content.get("parts") or () if isinstance(content, Mapping) else ():
            if isinstance(part, Mapping):
                self._add(dict(part))

    def result(self) -> ParsedResponse:
        """The response so far."""
        if not self.parts and not self.candidate:
            return parse_gemini_response(self.body)
        candidate = {**self.candidate, "content": {"role": "model", "parts": self.parts}}
        return parse_gemini_response({**self.body, "candidates": [candidate]})

    def _add(self, part: dict[str, Any]) -> None:
        last = self.parts[-1] if self.parts else None
        joinable = set(part) - {"thought", "thoughtSignature"} == {"text"}
        if (
            last is not None
            and joinable
            and set(last) - {"thought", "thoughtSignature"} == {"text"}
            and bool(last.get("thought")) == bool(part.get("thought"))
            and "thoughtSignature" not in last
        ):
            last["text"] += part["text"]
            if "thoughtSignature" in part:
                last["thoughtSignature"] = part["thoughtSignature"]
            return
        self.parts.append(part)
