"""A provider request body as the prompt cache sees it: a list of blocks with breakpoints.

The cache model (:mod:`contextwarden.replay.costmodel`) prices a request as a sequence of
:class:`~contextwarden.replay.costmodel.Block` s. This module cuts a raw request body of each wire
format into those blocks, in the order the provider assembles the prompt:

- Anthropic Messages: each tool, each system block, then each content block of each message
  (a string content is one block). ``cache_control`` is left out of a block's key, because moving
  a breakpoint does not change the cached bytes; the blocks carrying it are the breakpoints.
- OpenAI Chat: the tools (one block), then each message.
- OpenAI Responses: the tools (one block), the instructions, then each input item.

Both the scripted upstream (which bills the simulated cache) and the proxy's ledger (which prices
the client's own request as the counterfactual) use this one cut, so the two arms are measured alike.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from ..replay.costmodel import Block
from ..tokens import TokenCounter


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


class BlockCutter:
    """Cuts request bodies into cache blocks, counting each distinct block's tokens once."""

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self._tokens: dict[str, int] = {}

    def _block(self, value: Any) -> Block:
        if isinstance(value, Mapping) and "cache_control" in value:
            value = {k: v for k, v in value.items() if k != "cache_control"}
        text = _compact(value)
        key = hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()
        tokens = self._tokens.get(key)
        if tokens is None:
            tokens = self.counter.count(text)
            self._tokens[key] = tokens
        return Block(key=key, tokens=tokens)

    def cut(self, fmt: str, body: Mapping[str, Any]) -> tuple[list[Block], list[int]]:
        """The blocks of ``body`` (a request of format ``fmt``) and the indices of its breakpoints."""
        if fmt == "anthropic":
            return self._anthropic(body)
        blocks: list[Block] = []
        tools = body.get("tools")
        if tools:
            blocks.append(self._block(tools))
        if fmt == "openai_responses":
            if body.get("instructions"):
                blocks.append(self._block(body["instructions"]))
            items = body.get("input")
            if isinstance(items, str):
                items = [items]
            blocks += [self._block(item) for item in _list(items)]
        else:
            blocks += [self._block(message) for message in _list(body.get("messages"))]
        return blocks, []

    def _anthropic(self, body: Mapping[str, Any]) -> tuple[list[Block], list[int]]:
        blocks: list[Block] = []
        points: list[int] = []

        def add(value: Any) -> None:
            if isinstance(value, Mapping) and value.get("cache_control"):
                points.append(len(blocks))
            blocks.append(self._block(value))

        for tool in _list(body.get("tools")):
            add(tool)
        system = body.get("system")
        for part in [system] if isinstance(system, str) and system else _list(system):
            add(part)
        for message in _list(body.get("messages")):
            content = message.get("content") if isinstance(message, Mapping) else None
            role = message.get("role", "") if isinstance(message, Mapping) else ""
            # a string content is the same prompt as one text block, so it caches the same
            for part in [{"type": "text", "text": content}] if isinstance(content, str) else _list(content):
                # the role is part of what the model sees: the same text as user and as assistant differ
                add({"role": role, **part} if isinstance(part, Mapping) else {"role": role, "value": part})
        return blocks, points


def _list(value: object) -> Sequence[Any]:
    return value if isinstance(value, list) else ()
