"""The last resort of a build a little over budget with nothing left to compact: cut, don't fail.

Compaction sizes its summary from measured sizes, and the kept tail grows by whole turns, so a
window can open a few tokens over the usable input with nothing old enough left to compact. Raising
then stops the agent for want of a few tokens. Instead :func:`degrade_to_fit` cuts, in this order,

1. the newest tool output (head, tail and error lines kept, the marker saying how much went: the
   truncation of ingestion, tighter), then the one before it, while the cut is not enough;
2. the text of the assistant's messages, newest first (their tool calls stay whole);
3. the summary (its middle, between the goal and progress at its head and the latest intent at its
   tail).

Each cut is a :class:`~contextwarden.context.Decision` of the build (``truncate``, naming the item
and the tokens saved), so the build says what it did. Nothing is written to the log: the next build
starts from the same window and cuts again only if it is still over. A request over by more than
:data:`MAX_DEGRADE_SHARE` of the budget is not degraded: that is a configuration problem (a system
prompt or tool list too large for the window) and the build raises ``BudgetExceededError``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import NamedTuple

from ..context import Decision, Message
from ..tokens import TokenCounter
from ..window.policies.truncate import truncate_output

MAX_DEGRADE_SHARE = 0.1
"""A request over its budget by at most this share of the budget is cut to fit; more raises."""
MIN_KEPT_TOKENS = 64
"""An item keeps at least this many tokens; one of at most twice that is not cut."""
MARGIN_TOKENS = 8
"""Cut this many tokens more than needed: a marker's size is estimated before it is counted."""


def _candidates(messages: Sequence[Message]) -> list[int]:
    newest_first = range(len(messages) - 1, -1, -1)
    tools = [n for n in newest_first if messages[n].role == "tool"]
    said = [n for n in newest_first if messages[n].role == "assistant" and messages[n].text]
    return [*tools, *said, *(n for n, m in enumerate(messages) if m.section == "summary")]


class Degraded(NamedTuple):
    """What :func:`degrade_to_fit` returns."""

    messages: tuple[Message, ...]
    """The messages, cut (or unchanged when nothing could be cut)."""
    decisions: tuple[Decision, ...]
    """One ``truncate`` decision per item cut."""
    saved: dict[str, int]
    """Section → tokens cut from it."""


def degrade_to_fit(
    messages: Sequence[Message], *, over: int, budget: int, counter: TokenCounter, retrievable: bool
) -> Degraded:
    """``messages`` with ``over`` tokens cut (see the module docstring), and the decisions saying so.

    Returns the messages unchanged and no decision when ``over`` is above :data:`MAX_DEGRADE_SHARE`
    of ``budget`` or no item is large enough; the caller then raises.
    """
    unchanged = Degraded(tuple(messages), (), {})
    if over <= 0 or over > budget * MAX_DEGRADE_SHARE:
        return unchanged
    out = list(messages)
    need = over + MARGIN_TOKENS
    decisions: list[Decision] = []
    saved: dict[str, int] = {}
    for n in _candidates(out):
        m = out[n]
        size = m.tokens or counter.count(m.text)
        if size <= 2 * MIN_KEPT_TOKENS:
            continue
        target = m.source_ids[0] if m.source_ids else ""
        keep = max(size - need, MIN_KEPT_TOKENS)
        cut = truncate_output(m.text, max_tokens=keep, counter=counter, artifact_id=target, retrievable=retrievable)
        tokens = counter.count(cut.text)
        if tokens >= size:
            continue
        out[n] = replace(m, text=cut.text, tokens=tokens)
        what = {"tool": f"tool output ({m.tool_name})", "assistant": "assistant message"}.get(m.role, m.section)
        decisions.append(
            Decision(
                action="truncate",
                target=target,
                reason=f"over budget by {over} tokens with nothing left to compact: cut the newest oversized "
                f"{what} from {size} to {tokens} tokens",
                tokens_saved=size - tokens,
            )
        )
        saved[m.section] = saved.get(m.section, 0) + size - tokens
        need -= size - tokens
        if need <= MARGIN_TOKENS:
            break
    if need > MARGIN_TOKENS:
        return unchanged
    return Degraded(tuple(out), tuple(decisions), saved)
