"""Re-sent reasoning: what a Responses API request pays for the reasoning items it passes back.

An agent on OpenAI's Responses API without server-side state (Codex: ``store: false``, with
``include: ["reasoning.encrypted_content"]``) sends every earlier ``reasoning`` item back with the
rest of its history. The API keeps only those of the current turn, the ones after the last user
message, and bills them as input, as many tokens as the model spent producing them; reasoning items
of earlier turns are stripped before the model reads the prompt, so they cost nothing, and the
prompt they leave is shorter, so the cache misses from where the first of them sat (OpenAI cookbook,
"Better performance from reasoning models using the Responses API", section Caching). The transcript
shows a reasoning item only as its summary and its ciphertext; its size is the response's own
``reasoning_tokens`` in the usage report (Codex: ``reasoning_output_tokens``).

So each request of a turn carries, on each earlier response of that turn that still holds its
reasoning item, the reasoning tokens that response reported; the block of that response changes key
while it does, and returns to its plain key once the turn is over, as the prompt the API builds does.
A strategy that dropped the item (contextwarden's ``drop_thinking``) pays nothing for it.

That is the API's ``reasoning.context: "current_turn"``, the default of the models before GPT-5.6 (every
profile bundled today). A request with ``"all_turns"`` (GPT-5.6's default) keeps every turn's
reasoning; a rollout does not record which the agent asked for, so the replay assumes the current turn.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..context import Message
from ..log.events import AssistantMessage, Event, Steering, UsageReport, UserMessage
from ..wire.blocks import Block

REASONING_ITEM = "reasoning"
"""The Responses API item kind whose re-sent copies are billed within their turn."""
_FORMAT = "openai_responses"


def holds_reasoning(message: Message | AssistantMessage) -> bool:
    """Whether ``message`` still carries a Responses ``reasoning`` item to send back."""
    return any(part.kind == REASONING_ITEM and part.format == _FORMAT for part in message.opaque)


def resent_reasoning(requests: Sequence[AssistantMessage], usage: Mapping[int, UsageReport]) -> dict[str, int]:
    """Response id → the reasoning tokens it reported, for responses that carry a reasoning item to send back."""
    out: dict[str, int] = {}
    for index, response in enumerate(requests):
        report = usage.get(index)
        if report is not None and report.reasoning_tokens > 0 and holds_reasoning(response):
            out[response.id] = report.reasoning_tokens
    return out


class TurnReasoning:
    """The reasoning the next request of the current turn is billed for, followed event by event."""

    def __init__(self, sizes: Mapping[str, int]) -> None:
        """Follow the responses of ``sizes`` (from :func:`resent_reasoning`)."""
        self.sizes = sizes
        self.live: dict[str, int] = {}
        """Response id → its reasoning tokens, for the current turn's responses so far."""

    def observe(self, event: Event) -> None:
        """A user message starts a new turn; a response with reasoning joins the current one."""
        if not self.sizes:
            return
        if isinstance(event, (UserMessage, Steering)):
            self.live.clear()
        elif isinstance(event, AssistantMessage) and event.id in self.sizes:
            self.live[event.id] = self.sizes[event.id]

    def carry(self, messages: Sequence[Message], blocks: list[Block], landed: Mapping[int, int]) -> list[Block]:
        """``blocks`` with each live response's reasoning added to the block its message landed in."""
        if not self.live:
            return blocks
        out = list(blocks)
        for j, message in enumerate(messages):
            if message.role != "assistant" or not holds_reasoning(message):
                continue
            extra = sum(self.live.get(i, 0) for i in message.source_ids)
            k = landed.get(j, -1)
            if extra and k >= 0:
                out[k] = with_reasoning(out[k], extra)
        return out


def with_reasoning(block: Block, tokens: int) -> Block:
    """``block`` carrying ``tokens`` of re-sent reasoning (another key: the prompt differs without it)."""
    return Block(key=f"{block.key}+reasoning:{tokens}", tokens=block.tokens + tokens)
