"""Cache breakpoints of a request: the message boundaries whose prefix stays put until a window event."""

from __future__ import annotations

from collections.abc import Sequence

from ..context import Message
from ..models import ModelProfile
from ..plan.policy import ContextPolicy
from ..window.projection import Projection

__all__ = ["breakpoints"]


def breakpoints(
    messages: Sequence[Message], projection: Projection, *, fixed: int, profile: ModelProfile, policy: ContextPolicy
) -> tuple[int, ...]:
    """Stable boundaries of the request, as message indices.

    After system and tools; after a compacted window's opening; just before the frontier (the first
    item any pending or possible edit can change, so a batch re-writes only from there) and just
    before where it stood until the latest batch (so the request after a batch reads the prefix
    cached up to there: the frontier moves further than the provider looks back); at the end.
    Every stable one lies at or before the frontier, so its prefix holds until the next compaction.
    A stable boundary whose prefix (measured: system, tools and the items before it) is below the
    model's minimum cacheable length would cache nothing, so it is left out.
    """
    thinking = policy.planner.mask and policy.planner.drop_old_thinking
    frontier = projection.frontier(thinking=thinking)
    minimum = profile.min_cacheable_tokens if profile.cache_style != "none" else 0
    stable: list[tuple[int, int]] = [(-1, fixed)]  # (message index, prefix tokens)
    opening = 0  # a compacted window opens with its pinned block and summary
    while opening < len(messages) and messages[opening].section in ("pinned", "summary"):
        opening += 1
    if opening:
        stable.append((opening - 1, fixed + sum(m.tokens for m in messages[:opening])))
    held = projection.held_frontier.get(thinking)
    held_at = projection.list.find(held) if held is not None else None
    for position in (held_at, frontier):
        if position is None or (frontier is not None and position > frontier):
            continue
        found = _message_index(messages, projection.items[position].id, position)
        if found:
            stable.append((found - 1, fixed + projection.total - projection.tail_tokens(position)))
    points = {index for index, prefix in stable if prefix >= minimum and (frontier is None or index < len(messages))}
    if messages:
        points.add(len(messages) - 1)
    return tuple(sorted(points))


def _message_index(messages: Sequence[Message], item_id: str, guess: int) -> int | None:
    """Index of the message rendering ``item_id``, searched outwards from ``guess``.

    Pairing normalization drops orphans and adds aborted results, so the item's message sits a few
    places from its item position; the search is exact, and short in practice.
    """
    count = len(messages)
    start = min(max(guess, 0), count - 1) if count else 0
    for step in range(count + 1):
        for n in (start - step, start + step) if step else (start,):
            if 0 <= n < count and item_id in messages[n].source_ids:
                return n
    return None
