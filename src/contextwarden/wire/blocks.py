"""A provider request body as the prompt cache sees it: a list of blocks, some of them breakpoints.

The cache model (:mod:`contextwarden.replay.costmodel`) prices a request as a sequence of
:class:`Block` s. :class:`BlockMeter` cuts a request body of each wire format into those blocks,
in the order the provider assembles the prompt, and is the one measure of a request everywhere:
the offline replay (which renders OpenAI Chat), the scripted upstream (which bills the simulated
cache for what it receives) and the proxy's ledger (which prices the client's own request as the
counterfactual). One meter means the same body costs the same wherever it is measured.

- OpenAI Chat: the tools (one block), then each message.
- OpenAI Responses: the tools (one block), the instructions, then each input item the API bills: a
  ``reasoning`` item before the last user message is stripped by the API (only the current turn's
  reasoning is read and billed), so it is no block, unless the request asks for
  ``reasoning.context: "all_turns"`` (GPT-5.6 models' default; earlier ones default to the current turn).
- Anthropic Messages: each tool, each system block, then each content block of each message (a
  string content is one text block). ``cache_control`` is left out of a block's key, since moving a
  breakpoint does not change the cached bytes; the blocks carrying it are the breakpoints.

A block's key digests its JSON in the body's own key order (a real cache compares bytes, so a
reordered body must miss). Its tokens count what the model reads, not the JSON around it: text,
tool names and arguments, images by their pixel size (:func:`~contextwarden.tokens.image_tokens`),
plus the framing of one message (:data:`~contextwarden.tokens.MESSAGE_OVERHEAD`) or call
(:data:`~contextwarden.tokens.TOOL_CALL_OVERHEAD`). The same conversation therefore measures the
same in every format, to the framing: an Anthropic tool result is framed like the OpenAI tool
message it would be.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..tokens import (
    IMAGE_TOKENS,
    MESSAGE_OVERHEAD,
    TOOL_CALL_OVERHEAD,
    TokenCounter,
    base64_image_tokens,
    data_url_image_tokens,
)


@dataclass(frozen=True, kw_only=True)
class Block:
    """One rendered message (or content block, or the tool definitions) of a request, as the cache sees it."""

    key: str
    """A digest of the block's JSON: equal keys mean byte-equal blocks."""
    tokens: int
    """Its tokens by the meter's counter."""


MAX_LANES = 512
"""Lanes (sequences of requests that extend each other) whose last cut :meth:`BlockMeter.cut` keeps."""

_Cut = list[tuple[Block, bool]]
"""One message's blocks, each with whether it carries a breakpoint."""

_UNKNOWN_PART_TOKENS = 16
"""An OpenAI Chat content part that is neither text nor an image (audio, a file reference)."""


_DIGEST_SLICE = 1 << 20
"""Characters hashed at a time (UTF-8 encodes code point by code point, so the digest is the same)."""


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _content_tokens(content: Any, counter: TokenCounter) -> int:
    if isinstance(content, str):
        return counter.count(content)
    total = 0
    for part in _list(content):
        if not isinstance(part, Mapping):
            continue
        kind = part.get("type")
        if kind in ("text", "input_text", "output_text"):
            total += counter.count(str(part.get("text", "")))
        elif kind in ("image_url", "image", "input_image"):
            total += _image_tokens(part)
        else:
            total += _UNKNOWN_PART_TOKENS
    return total


def message_block_tokens(message: Mapping[str, Any], counter: TokenCounter) -> int:
    """Tokens of one rendered OpenAI Chat message: content, tool calls and framing."""
    tokens = MESSAGE_OVERHEAD + _content_tokens(message.get("content"), counter)
    for call in _list(message.get("tool_calls")):
        function = call.get("function", {}) if isinstance(call, Mapping) else {}
        tokens += TOOL_CALL_OVERHEAD + counter.count(str(function.get("name", "")))
        tokens += counter.count(str(function.get("arguments", "")))
    return tokens


class BlockMeter:
    """Cuts request bodies into cache blocks, counting each distinct block's tokens once.

    Given a ``lane``, the messages a request shares with the lane's previous request (equal JSON
    values, compared in C) reuse that request's blocks, so a lane's requests cost their new
    messages, not their whole history: the proxy's ledger then barely competes with the request
    path for the interpreter.
    """

    def __init__(self, counter: TokenCounter) -> None:
        """Count with ``counter``."""
        self.counter = counter
        self._tokens: dict[str, int] = {}
        self._lanes: OrderedDict[Hashable, tuple[list[Any], list[_Cut]]] = OrderedDict()

    def blocks(self, body: Mapping[str, Any]) -> list[Block]:
        """The blocks of an OpenAI Chat request body: the tools (if any), then each message."""
        return self.cut("openai_chat", body)[0]

    def cut(self, fmt: str, body: Mapping[str, Any], *, lane: Hashable = None) -> tuple[list[Block], list[int]]:
        """The blocks of ``body`` (a request of format ``fmt``) and the indices of its breakpoints.

        ``lane`` names a sequence of requests that extend each other (see the class docstring).
        Only Anthropic bodies have breakpoints; the other formats are cached automatically.
        """
        head: _Cut = []
        if fmt == "anthropic":
            head = [self._anthropic_head(tool) for tool in _list(body.get("tools"))]
            system = body.get("system")
            parts = [{"type": "text", "text": system}] if isinstance(system, str) and system else _list(system)
            head += [self._anthropic_part(p, "system", first=i == 0) for i, p in enumerate(parts)]
            items: Sequence[Any] = _list(body.get("messages"))
            one: Callable[[Any], _Cut] = self._anthropic_message
        elif fmt == "gemini":
            head = self._gemini_head(body)
            items = _list(body.get("contents"))
            one = self._gemini_content
        else:
            if body.get("tools"):
                head.append((self._block(body["tools"], lambda: self.counter.count(_compact(body["tools"]))), False))
            if fmt == "openai_responses":
                instructions = body.get("instructions")
                if instructions:
                    text = instructions if isinstance(instructions, str) else _compact(instructions)
                    head.append((self._block(instructions, lambda: MESSAGE_OVERHEAD + self.counter.count(text)), False))
                raw = body.get("input")
                reasoning = body.get("reasoning")
                every_turn = isinstance(reasoning, Mapping) and reasoning.get("context") == "all_turns"
                items = [raw] if isinstance(raw, str) else _billed_responses_items(_list(raw), every_turn)
                one = self._responses_item
            else:
                items = _list(body.get("messages"))
                one = self._chat_message
        cuts = self._lane_cuts(list(items), lane, one)
        blocks: list[Block] = []
        points: list[int] = []
        for block, point in [*head, *(b for cut in cuts for b in cut)]:
            if point:
                points.append(len(blocks))
            blocks.append(block)
        return blocks, points

    # ------------------------------------------------------------------ per item

    def _lane_cuts(self, items: list[Any], lane: Hashable, one: Callable[[Any], _Cut]) -> list[_Cut]:
        previous, cuts = self._lanes.pop(lane, ([], [])) if lane is not None else ([], [])
        same = _common_prefix(previous, items)
        cuts = cuts[:same] + [one(item) for item in items[same:]]
        if lane is not None:
            self._lanes[lane] = (items, cuts)
            while len(self._lanes) > MAX_LANES:
                self._lanes.popitem(last=False)
        return cuts

    def _block(self, value: Any, tokens_of: Callable[[], int]) -> Block:
        text, digest = _compact(value), hashlib.sha1()
        for start in range(0, len(text), _DIGEST_SLICE):  # a slice at a time: no second copy of a huge message
            digest.update(text[start : start + _DIGEST_SLICE].encode("utf-8", "surrogatepass"))
        key = digest.hexdigest()
        tokens = self._tokens.get(key)
        if tokens is None:
            tokens = self._tokens[key] = tokens_of()
        return Block(key=key, tokens=tokens)

    def _chat_message(self, message: Any) -> _Cut:
        if not isinstance(message, Mapping):
            return [(self._block(message, lambda: self.counter.count(_compact(message))), False)]
        return [(self._block(message, lambda: message_block_tokens(message, self.counter)), False)]

    def _responses_item(self, item: Any) -> _Cut:
        return [(self._block(item, lambda: self._responses_tokens(item)), False)]

    def _responses_tokens(self, item: Any) -> int:
        if isinstance(item, str):
            return MESSAGE_OVERHEAD + self.counter.count(item)
        if not isinstance(item, Mapping):
            return self.counter.count(_compact(item))
        kind = item.get("type", "message")
        if kind == "message":
            return MESSAGE_OVERHEAD + _content_tokens(item.get("content"), self.counter)
        if kind in ("function_call", "custom_tool_call"):
            arguments = item.get("arguments", item.get("input", ""))
            return (
                TOOL_CALL_OVERHEAD
                + self.counter.count(str(item.get("name", "")))
                + self.counter.count(arguments if isinstance(arguments, str) else _compact(arguments))
            )
        if kind in ("function_call_output", "custom_tool_call_output"):
            output = item.get("output", "")
            return MESSAGE_OVERHEAD + (
                self.counter.count(output) if isinstance(output, str) else _content_tokens(output, self.counter)
            )
        return self.counter.count(_compact(item))  # reasoning, compaction and unknown items: as sent

    def _gemini_head(self, body: Mapping[str, Any]) -> _Cut:
        """Gemini's cached prefix: the tools and the system instruction.

        An explicit ``cachedContent`` lives at the provider: its tokens are billed from the usage the
        response reports, and they are the same in both arms of the ledger.
        """
        head: _Cut = []
        if body.get("tools"):
            head.append((self._block(body["tools"], lambda: self.counter.count(_compact(body["tools"]))), False))
        system = body.get("systemInstruction")
        if system:
            head.append((self._block(system, lambda: self._gemini_tokens(system)), False))
        return head

    def _gemini_content(self, content: Any) -> _Cut:
        return [(self._block(content, lambda: self._gemini_tokens(content)), False)]

    def _gemini_tokens(self, content: Any) -> int:
        if not isinstance(content, Mapping):
            return self.counter.count(_compact(content))
        tokens = MESSAGE_OVERHEAD
        for part in _list(content.get("parts")):
            if not isinstance(part, Mapping):
                continue
            if isinstance(part.get("text"), str):
                tokens += self.counter.count(part["text"])
            elif isinstance(part.get("functionCall"), Mapping):
                call = part["functionCall"]
                tokens += TOOL_CALL_OVERHEAD + self.counter.count(str(call.get("name", "")))
                tokens += self.counter.count(_compact(call.get("args", {})))
            elif isinstance(part.get("functionResponse"), Mapping):
                response = part["functionResponse"].get("response")
                output = response.get("output") if isinstance(response, Mapping) else None
                tokens += self.counter.count(output if isinstance(output, str) else _compact(response))
            else:  # media and parts of newer kinds, as sent (a signature is not input)
                tokens += self.counter.count(_compact({k: v for k, v in part.items() if k != "thoughtSignature"}))
        return tokens

    def _anthropic_head(self, tool: Any) -> tuple[Block, bool]:
        value = _unmarked(tool)
        return self._block(value, lambda: self.counter.count(_compact(value))), _marked(tool)

    def _anthropic_message(self, message: Any) -> _Cut:
        content = message.get("content") if isinstance(message, Mapping) else None
        role = str(message.get("role", "")) if isinstance(message, Mapping) else ""
        # a string content is the same prompt as one text block, so it caches the same
        parts = [{"type": "text", "text": content}] if isinstance(content, str) else _list(content)
        out: _Cut = []
        framed = False  # the message's framing goes with its first block that is not a tool result
        for part in parts:
            is_result = isinstance(part, Mapping) and part.get("type") == "tool_result"
            out.append(self._anthropic_part(part, role, first=not framed and not is_result))
            framed = framed or not is_result
        return out

    def _anthropic_part(self, part: Any, role: str, *, first: bool) -> tuple[Block, bool]:
        # the role is part of what the model sees: the same text as user and as assistant differ
        value = {"role": role, **_unmarked(part)} if isinstance(part, Mapping) else {"role": role, "value": part}
        overhead = MESSAGE_OVERHEAD if first else 0
        return self._block(value, lambda: overhead + self._anthropic_tokens(part)), _marked(part)

    def _anthropic_tokens(self, part: Any) -> int:
        count = self.counter.count
        if not isinstance(part, Mapping):
            return count(_compact(part))
        kind = part.get("type")
        if kind == "text":
            return count(str(part.get("text", "")))
        if kind == "thinking":
            return count(str(part.get("thinking", "")))
        if kind in ("tool_use", "server_tool_use"):
            return TOOL_CALL_OVERHEAD + count(str(part.get("name", ""))) + count(_compact(part.get("input", {})))
        if kind == "tool_result":
            content = part.get("content", "")
            parts = [{"type": "text", "text": content}] if isinstance(content, str) else _list(content)
            # framed like the OpenAI tool message it would be; images inside are priced as images
            return MESSAGE_OVERHEAD + sum(self._anthropic_tokens(p) for p in parts)
        if kind == "image":
            return _image_tokens(part)
        return count(_compact(_unmarked(part)))  # redacted thinking and unknown blocks: as sent


def _billed_responses_items(items: Sequence[Any], every_turn: bool) -> Sequence[Any]:
    """Responses input items but the reasoning items of earlier turns, which the API strips unread.

    OpenAI keeps the reasoning items after the last user message (the current turn's tool loop) and
    drops earlier ones before the model reads the prompt: they cost nothing, and the prompt without
    them stops sharing the cache from where the first of them sat (``replay/reasoning.py``). With
    ``every_turn`` (``reasoning.context: "all_turns"``) every item is kept.
    """
    if every_turn:
        return items
    last_user = max((i for i, item in enumerate(items) if _is_user_message(item)), default=-1)
    return [item for i, item in enumerate(items) if i > last_user or not _is_reasoning(item)]


def _is_user_message(item: Any) -> bool:
    return isinstance(item, Mapping) and item.get("role") == "user" and item.get("type", "message") == "message"


def _is_reasoning(item: Any) -> bool:
    return isinstance(item, Mapping) and item.get("type") == "reasoning"


def _image_tokens(part: Mapping[str, Any]) -> int:
    """An image part by its pixel size: Anthropic's base64 ``source``, OpenAI's (data) URL; else flat."""
    source = part.get("source")
    if isinstance(source, Mapping) and source.get("type") == "base64":
        return base64_image_tokens(str(source.get("data", "")))
    url = part.get("image_url")
    if isinstance(url, Mapping):
        url = url.get("url")
    return data_url_image_tokens(url) if isinstance(url, str) else IMAGE_TOKENS


def _unmarked(value: Any) -> Any:
    if isinstance(value, Mapping) and "cache_control" in value:
        return {k: v for k, v in value.items() if k != "cache_control"}
    return value


def _marked(value: Any) -> bool:
    return bool(isinstance(value, Mapping) and value.get("cache_control"))


def _common_prefix(a: Sequence[Any], b: Sequence[Any]) -> int:
    n = min(len(a), len(b))
    if a[:n] == b[:n]:  # the usual case: one comparison in C
        return n
    return next(i for i in range(n) if a[i] != b[i])


def _list(value: object) -> Sequence[Any]:
    return value if isinstance(value, list) else ()
