"""The one seam every token counter implements."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

__all__ = ["TokenCounter"]


@runtime_checkable
class TokenCounter(Protocol):
    """Counts the tokens of a text for one tokenizer family.

    Implementations must accept any ``str``, including NUL bytes and lone surrogates (text decoded
    from undecodable bytes with ``surrogateescape``), and never raise on content. ``count("")`` is 0.
    """

    @property
    def name(self) -> str:
        """A stable name, for example ``"o200k_base"`` or ``"heuristic"``; caches key counts by it."""
        ...

    @property
    def exact(self) -> bool:
        """Whether counts equal the tokenizer's own (``False`` for estimates)."""
        ...

    def count(self, text: str) -> int:
        """Count the tokens in ``text``."""
        ...
