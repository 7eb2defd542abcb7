"""A counter that learns, per session, how far its base counter is from the provider's counts."""

from __future__ import annotations

from ._protocol import TokenCounter

__all__ = ["CalibratedCounter"]


class CalibratedCounter:
    """``base``'s counts times a factor learnt from (estimated, reported) token pairs.

    Each :meth:`observe` moves the factor toward ``reported / estimated`` by ``smoothing`` (an
    exponential moving average), clamped to ``[min_factor, max_factor]`` so one odd report (a
    provider that counts images or tool schemas differently) cannot swing it far. Pairs whose
    estimate is under ``min_sample_tokens`` are ignored: a few tokens of formatting overhead would
    dominate their ratio. :func:`~contextwarden.tokens.calibrate_from_events` finds the pairs in
    a session log.

    The name carries the current factor (``heuristic*1.083``), so caches keyed by name never serve
    a count made with an older factor; :class:`~contextwarden.tokens.EventTokenCache` instead
    caches the base counts and scales them.
    """

    exact: bool = False

    def __init__(
        self,
        base: TokenCounter,
        *,
        factor: float = 1.0,
        smoothing: float = 0.3,
        min_factor: float = 0.5,
        max_factor: float = 2.5,
        min_sample_tokens: int = 256,
    ) -> None:
        if not 0.0 < smoothing <= 1.0:
            raise ValueError("smoothing must be in (0, 1]")
        if not 0.0 < min_factor <= max_factor:
            raise ValueError("need 0 < min_factor <= max_factor")
        self.base = base
        self.smoothing = smoothing
        self.min_factor = min_factor
        self.max_factor = max_factor
        self.min_sample_tokens = min_sample_tokens
        self.factor = self._clamp(factor)
        self.samples = 0
        """How many pairs moved the factor."""

    def _clamp(self, value: float) -> float:
        return min(self.max_factor, max(self.min_factor, value))

    @property
    def name(self) -> str:
        """``<base name>*<factor>``, for example ``heuristic*1.083``."""
        return f"{self.base.name}*{self.factor:.3f}"

    def __repr__(self) -> str:
        return f"CalibratedCounter({self.base!r}, factor={self.factor:.4f}, samples={self.samples})"

    def observe(self, estimated: int, reported: int) -> bool:
        """Learn from one pair: ``estimated`` by the base counter, ``reported`` by the provider.

        Returns whether the pair was used (it is skipped when the estimate is too small to be
        informative or the report is not positive).
        """
        if estimated < self.min_sample_tokens or reported <= 0:
            return False
        ratio = self._clamp(reported / estimated)
        self.factor = self._clamp((1.0 - self.smoothing) * self.factor + self.smoothing * ratio)
        self.samples += 1
        return True

    def scale(self, base_tokens: int) -> int:
        """Convert a base count with the current factor (a non-empty count stays at least 1)."""
        if base_tokens <= 0:
            return 0
        return max(1, int(base_tokens * self.factor + 0.5))

    def count(self, text: str) -> int:
        """Count ``text`` with the base counter, times the factor."""
        return self.scale(self.base.count(text))
