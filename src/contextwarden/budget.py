"""Budget math: how much input fits, when to compact, how long a summary may be.

All pure functions of a :class:`~contextwarden.models.ModelProfile` and a few numbers, from
``docs/behaviours.md``, rows 6, 13 and 18 (after Ink's ``compaction.ts``):

- usable input = window − reserved output − tool schema tokens − safety margin (the hard limit a
  request must never exceed);
- compaction trigger = min(floor(0.85 · window), window − reserve), compared *strictly*: a context
  exactly at the trigger does not compact. The reserve scales with the model: its max output, at
  least 8,192 and at most 32,768 (Ink's fixed figure), so a 64K model with 4,096 tokens of output
  compacts at 55,705 (0.85 of its window) rather than at 32,768;
- a window no larger than the reserve gets max(1, floor(0.85 · window)): it fixes when to
  compact, not whether a summary request fits in so small a window;
- an unknown window has no trigger (``None``); a caller that has a window from elsewhere (a
  fallback, a server's report) uses window − reserve. :class:`BudgetPolicy` does exactly that
  with its ``fallback_window``;
- summary output = min(floor(0.8 · reserve), the model's max output).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Final

from ._deprecated import renamed_method
from .errors import UsageError
from .models import ModelProfile

__all__ = [
    "DEFAULT_RESERVED_OUTPUT",
    "DEFAULT_RESERVE_TOKENS",
    "DEFAULT_TRIGGER_RATIO",
    "FALLBACK_CONTEXT_WINDOW",
    "BudgetPolicy",
    "compaction_trigger",
    "default_safety_margin",
    "should_compact",
    "summary_max_tokens",
    "usable_input_budget",
]

DEFAULT_RESERVE_TOKENS: Final = 32_768
"""Room kept free below the window for the next response and for the summary request (Ink)."""

DEFAULT_TRIGGER_RATIO: Final = 0.85
"""Compact at this fraction of the window at the latest, so large windows keep a margin too."""

FALLBACK_CONTEXT_WINDOW: Final = 128_000
"""The window assumed for a model whose window is unknown."""

DEFAULT_RESERVED_OUTPUT: Final = 8_192
"""Output room reserved per request when the caller does not say what ``max_tokens`` it sends
(capped by the model's max output)."""

SUMMARY_RESERVE_SHARE: Final = Decimal("0.8")
"""The share of the reserve a summary may fill (Ink's ``summarizerMaxTokens``)."""


def _floor_fraction(value: int, ratio: float | Decimal) -> int:
    """floor(value · ratio) without binary floating-point error (0.85 is not exact in binary)."""
    return int(Decimal(value) * Decimal(str(ratio)))


def default_safety_margin(window: int) -> int:
    """2% of the window, at most 2,048 tokens: slack for counting error and message framing."""
    return min(2_048, window // 50)


def usable_input_budget(
    profile: ModelProfile,
    *,
    reserved_output: int,
    tool_schema_tokens: int = 0,
    safety_margin: int | None = None,
    fallback_window: int = FALLBACK_CONTEXT_WINDOW,
) -> int:
    """Return the most input tokens (messages and system) one request may carry; never negative.

    window − reserved output − tool schema tokens − safety margin, where the window is the
    profile's (``fallback_window`` when unknown) and is further capped by the profile's input
    limit (``max_input_tokens``) when it sets one. ``safety_margin`` defaults to
    :func:`default_safety_margin` of the window.
    """
    if reserved_output < 0 or tool_schema_tokens < 0 or (safety_margin or 0) < 0:
        raise UsageError("reserved_output, tool_schema_tokens and safety_margin must not be negative")
    window = profile.context_window or fallback_window
    margin = default_safety_margin(window) if safety_margin is None else safety_margin
    room = window - reserved_output
    if profile.max_input_tokens is not None:
        room = min(room, profile.max_input_tokens)
    return max(0, room - tool_schema_tokens - margin)


def compaction_trigger(
    window: int | None,
    *,
    reserve: int = DEFAULT_RESERVE_TOKENS,
    ratio: float = DEFAULT_TRIGGER_RATIO,
) -> int | None:
    """Return the context size above which to compact, or ``None`` when the window is unknown.

    min(floor(ratio · window), window − reserve) when the window is larger than the reserve;
    max(1, floor(ratio · window)) otherwise, so the trigger is never zero or negative.
    """
    if window is None:
        return None
    if window < 1 or reserve < 0 or not 0.0 < ratio <= 1.0:
        raise UsageError(f"need window >= 1, reserve >= 0 and 0 < ratio <= 1 (got {window}, {reserve}, {ratio})")
    proportional = _floor_fraction(window, ratio)
    if window <= reserve:
        return max(1, proportional)
    return min(proportional, window - reserve)


def should_compact(tokens: int, trigger: int | None) -> bool:
    """Whether a context of ``tokens`` must be compacted: strictly above the trigger.

    Exactly at the trigger does not compact. Without a trigger (unknown window) nothing compacts;
    derive one from a known or fallback window first (:meth:`BudgetPolicy.trigger_for` does).
    """
    return trigger is not None and tokens > trigger


def summary_max_tokens(profile: ModelProfile, reserve: int = DEFAULT_RESERVE_TOKENS) -> int:
    """Return a summary request's output budget: min(floor(0.8 · reserve), the model's max output)."""
    return max(1, min(_floor_fraction(reserve, SUMMARY_RESERVE_SHARE), profile.max_output_tokens))


@dataclass(frozen=True, kw_only=True)
class BudgetPolicy:
    """Budget settings for one agent; vary it with :func:`dataclasses.replace`."""

    reserve_tokens: int | None = None
    """Room kept below the window for the response and the summary request; ``None``: the model's max
    output, at least ``DEFAULT_RESERVED_OUTPUT`` (8,192) and at most ``DEFAULT_RESERVE_TOKENS`` (32,768)."""
    trigger_ratio: float = DEFAULT_TRIGGER_RATIO
    """Compact at this fraction of the window at the latest."""
    trigger_tokens: int | None = None
    """An absolute trigger that replaces the computed one (Ink's ``triggerTokens``)."""
    reserved_output: int | None = None
    """Output tokens reserved per request; ``None``: min(max output, 8,192). Set it to the
    ``max_tokens`` you send."""
    safety_margin: int | None = None
    """Tokens kept free for counting error; ``None``: 2% of the window, at most 2,048."""
    fallback_window: int = FALLBACK_CONTEXT_WINDOW
    """The window assumed when a profile's is unknown."""

    def __post_init__(self) -> None:
        if (self.reserve_tokens or 0) < 0 or self.fallback_window < 1 or not 0.0 < self.trigger_ratio <= 1.0:
            raise UsageError("need reserve_tokens >= 0, fallback_window >= 1 and 0 < trigger_ratio <= 1")
        if self.trigger_tokens is not None and self.trigger_tokens < 1:
            raise UsageError("trigger_tokens must be at least 1")

    window_for = renamed_method("window_for", "input_window_for")  # deprecated

    def input_window_for(self, profile: ModelProfile) -> int:
        """Return the input window the budget works with: the profile's (input-capped) or the fallback."""
        return profile.input_window or self.fallback_window

    def trigger_for(self, profile: ModelProfile) -> int:
        """Return the compaction trigger for ``profile``: the override, else the computed one.

        An unknown window uses ``fallback_window − reserve`` (at least 1), for a model known only
        through a fallback value (``docs/behaviours.md``, row 6).
        """
        if self.trigger_tokens is not None:
            return self.trigger_tokens
        window = profile.input_window
        if window is None:  # a guessed window keeps the whole reserve
            return max(1, self.fallback_window - self._fixed_reserve)
        trigger = compaction_trigger(window, reserve=self.reserve_for(profile), ratio=self.trigger_ratio)
        assert trigger is not None
        if self.reserve_tokens is None:
            # a reserve scaled down from 32,768 must not make a small window compact earlier than the full
            # one did: just above the reserve, ``window - reserve`` is a sliver (1,808 of a 10K window)
            fixed = compaction_trigger(window, reserve=DEFAULT_RESERVE_TOKENS, ratio=self.trigger_ratio)
            assert fixed is not None
            trigger = max(trigger, fixed)
        return trigger

    def compaction_threshold(self, profile: ModelProfile) -> int:
        """The window size above which ``profile``'s window compacts: the trigger, never above the usable input.

        The one size trigger every compaction path compares with (a build's planner, the agent
        loop's hook) and the kept tail is sized by.
        """
        return min(self.trigger_for(profile), self.usable_input(profile))

    @property
    def _fixed_reserve(self) -> int:
        """The reserve where no model scales it: a guessed window, a summary's length."""
        return DEFAULT_RESERVE_TOKENS if self.reserve_tokens is None else self.reserve_tokens

    def reserve_for(self, profile: ModelProfile) -> int:
        """The room kept below ``profile``'s window: the setting, else scaled with the model's max output."""
        if self.reserve_tokens is not None:
            return self.reserve_tokens
        return min(DEFAULT_RESERVE_TOKENS, max(profile.max_output_tokens, DEFAULT_RESERVED_OUTPUT))

    def should_compact(self, tokens: int, profile: ModelProfile) -> bool:
        """Whether a context of ``tokens`` must be compacted for ``profile`` (strictly above)."""
        return should_compact(tokens, self.trigger_for(profile))

    def output_reserve(self, profile: ModelProfile) -> int:
        """Return the output tokens reserved per request for ``profile``."""
        if self.reserved_output is not None:
            return self.reserved_output
        return min(profile.max_output_tokens, DEFAULT_RESERVED_OUTPUT)

    def usable_input(self, profile: ModelProfile, *, tool_schema_tokens: int = 0) -> int:
        """Return the hard input limit for ``profile`` with ``tool_schema_tokens`` of tool definitions."""
        return usable_input_budget(
            profile,
            reserved_output=self.output_reserve(profile),
            tool_schema_tokens=tool_schema_tokens,
            safety_margin=self.safety_margin,
            fallback_window=self.fallback_window,
        )

    def summary_max_tokens(self, profile: ModelProfile) -> int:
        """Return the output budget of a summary request for ``profile``."""
        return summary_max_tokens(profile, self._fixed_reserve)

    def summary_share(self) -> int:
        """floor(0.8 · reserve): a summary's output budget before the summarizing model's max output caps it."""
        return max(1, _floor_fraction(self._fixed_reserve, SUMMARY_RESERVE_SHARE))
