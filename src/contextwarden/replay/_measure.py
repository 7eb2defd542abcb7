"""Measuring helpers shared by the engine and the optimum: block alignment, send times, output tokens."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

from ..context import Message, ModelContext
from ..log.events import AssistantMessage, Event
from ..tokens import MESSAGE_OVERHEAD, TokenCounter
from ..window.projection import message_tokens


def _expected_role(m: Message) -> str:
    return "system" if m.role in ("system", "developer") else m.role


def align(ctx: ModelContext, body: Mapping[str, Any]) -> tuple[list[str], dict[int, int]]:
    """The section of every rendered block, and where each of ``ctx.messages`` landed among the blocks.

    Rendering drops empty messages and may add a user message carrying tool images, so the two
    lists are walked together by role (and call id for tool messages).
    """
    sections: list[str] = []
    if body.get("tools"):
        sections.append("tools")
    rendered = list(body.get("messages", ()))
    r = 0
    if ctx.system and rendered:
        sections.append("system")
        r = 1
    landed: dict[int, int] = {-1: len(sections) - 1}
    for j, m in enumerate(ctx.messages):
        if (
            r < len(rendered)
            and rendered[r].get("role") == _expected_role(m)
            and (m.role != "tool" or rendered[r].get("tool_call_id") == m.tool_call_id)
        ):
            sections.append(m.section)
            r += 1
        landed[j] = len(sections) - 1
        while (
            r < len(rendered)
            and m.role == "tool"
            and rendered[r].get("role") == "user"
            and isinstance(rendered[r].get("content"), list)
        ):
            sections.append(m.section)  # the images of a run of tool results
            r += 1
    sections.extend("conversation" for _ in rendered[r:])
    return sections, landed


def block_breakpoints(ctx: ModelContext, landed: Mapping[int, int]) -> list[int]:
    """The context's cache breakpoints as block indices."""
    return sorted({landed[b] for b in ctx.cache_breakpoints if landed.get(b, -1) >= 0})


class Clock:
    """The send time of each request: the transcript's own timestamps when it has them, else ``interval`` apart.

    ``stamped`` is what the importer found (``metadata["timestamps"]``): ``"transcript"`` when every
    response carries its recorded time, ``"none"`` or ``"partial"`` when not (the events then carry
    their import time, microseconds apart, which must not pass for request times). Without it
    (events built in code), increasing times spanning at least a second per request count as real.
    """

    def __init__(self, events: Sequence[Event], interval: float, *, stamped: str | None = None) -> None:
        stamps = [e.created_at for e in events if isinstance(e, AssistantMessage)]
        increasing = len(stamps) > 1 and stamps[-1] > stamps[0] and all(b >= a for a, b in itertools.pairwise(stamps))
        if stamped is None:
            real = increasing and stamps[-1] - stamps[0] >= len(stamps) - 1
        else:
            real = stamped == "transcript" and increasing
        self.times = [s - stamps[0] for s in stamps] if real else [i * interval for i in range(len(stamps))]
        self.real = real
        self.interval = interval

    @property
    def label(self) -> str:
        """Which times were used, for the report."""
        return "the transcript's timestamps" if self.real else f"{self.interval:g} s apart (--interval)"

    def __call__(self, index: int) -> float:
        return self.times[index] if index < len(self.times) else index * self.interval


def output_tokens(event: AssistantMessage, counter: TokenCounter) -> int:
    """Tokens the model wrote for ``event``: text, reasoning and tool calls."""
    message = Message(role="assistant", text=event.text, thinking=event.thinking, tool_calls=event.tool_calls)
    return max(message_tokens(message, counter) - MESSAGE_OVERHEAD, 0)
