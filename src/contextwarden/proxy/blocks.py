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
from collections import OrderedDict
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

from ..replay.costmodel import Block
from ..tokens import TokenCounter


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


MAX_LANES = 512
"""Lanes (a session's client or forwarded requests) whose last cut :meth:`BlockCutter.cut` keeps."""

_Cut = list[tuple[Block, bool]]
"""One message's blocks, each with whether it carries a breakpoint."""


class BlockCutter:
    """Cuts request bodies into cache blocks, counting each distinct block's tokens once.

    Given a ``lane``, the messages a request shares with the lane's previous request (equal JSON
    values, compared in C) reuse that request's blocks, so a lane's requests cost their new
    messages, not their whole history: the ledger's accounting then barely competes with the
    request path for the interpreter.
    """

    def __init__(self, counter: TokenCounter) -> None:
        """Count with ``counter``."""
        self.counter = counter
        self._tokens: dict[str, int] = {}
        self._lanes: OrderedDict[Hashable, tuple[list[Any], list[_Cut]]] = OrderedDict()

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

    def cut(self, fmt: str, body: Mapping[str, Any], *, lane: Hashable = None) -> tuple[list[Block], list[int]]:
        """The blocks of ``body`` (a request of format ``fmt``) and the indices of its breakpoints.

        ``lane`` names a sequence of requests that extend each other (see the class docstring).
        """
        if fmt == "anthropic":
            return self._anthropic(body, lane)
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

    def _anthropic(self, body: Mapping[str, Any], lane: Hashable) -> tuple[list[Block], list[int]]:
        head: _Cut = [self._marked(tool) for tool in _list(body.get("tools"))]
        system = body.get("system")
        head += [self._marked(part) for part in ([system] if isinstance(system, str) and system else _list(system))]
        messages = list(_list(body.get("messages")))
        previous, cuts = self._lanes.pop(lane, ([], [])) if lane is not None else ([], [])
        same = _common_prefix(previous, messages)
        cuts = cuts[:same] + [self._message(m) for m in messages[same:]]
        if lane is not None:
            self._lanes[lane] = (messages, cuts)
            while len(self._lanes) > MAX_LANES:
                self._lanes.popitem(last=False)
        blocks: list[Block] = []
        points: list[int] = []
        for block, point in [*head, *(b for cut in cuts for b in cut)]:
            if point:
                points.append(len(blocks))
            blocks.append(block)
        return blocks, points

    def _marked(self, value: Any) -> tuple[Block, bool]:
        return self._block(value), bool(isinstance(value, Mapping) and value.get("cache_control"))

    def _message(self, message: Any) -> _Cut:
        content = message.get("content") if isinstance(message, Mapping) else None
        role = message.get("role", "") if isinstance(message, Mapping) else ""
        # a string content is the same prompt as one text block, so it caches the same
        parts = [{"type": "text", "text": content}] if isinstance(content, str) else _list(content)
        # the role is part of what the model sees: the same text as user and as assistant differ
        return [
            self._marked({"role": role, **p} if isinstance(p, Mapping) else {"role": role, "value": p}) for p in parts
        ]


def _common_prefix(a: Sequence[Any], b: Sequence[Any]) -> int:
    n = min(len(a), len(b))
    if a[:n] == b[:n]:  # the usual case: one comparison in C
        return n
    return next(i for i in range(n) if a[i] != b[i])


def _list(value: object) -> Sequence[Any]:
    return value if isinstance(value, list) else ()
