"""What the window has saved against the raw history so far: the credit a voluntary batch may spend.

A voluntary batch rewrites the request from its first change: if the session ended right after it,
that request would cost ``write * (P - X) - read * P`` more than keeping the cache (``P`` the tokens
rewritten, ``X`` the tokens saved). The payback horizon is a guess about the future; that loss is not.
A plain bound on it never lets the first evicting batch through (it rewrites the whole request), so
the bound is a credit instead: what the window has really saved against the raw history so far, plus
``RAW_MARGIN`` of the raw history's cost so far. A batch whose loss fits in it leaves the session within
1.01x raw if the session ends right after it; one whose loss does not must pay back quickly (the
planner's ``uncovered_payback_turns``). Batches under pressure are never held back.

The saving is counted per request, in tokens at the uncached input price: a reduction made when an
output arrives (truncation at ingestion, a reference to a visible twin) saves its tokens at the write
price on that request (raw would have written them) and at the read price on every later one; a recorded
batch saves its tokens at the read price on every later request and costs its own loss once. It is kept
per window and updated from the decisions new since the last request, so a build costs O(new decisions).
A window opened afresh (from a checkpoint or the log, in a new process) starts a new account, which errs
low. The retrieval tools an output cut at arrival needs join the tool list, which opens the cached
prefix, so they rewrite the whole request for no saving of their own (:func:`rewrite_loss`): they join
only when the credit covers that, or with the next batch.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..context import Decision
from ..models import ModelProfile
from .planner import batch_loss, cache_prices

__all__ = ["Credit", "rewrite_loss"]

RAW_MARGIN = 0.01
"""The share of the raw history's cost so far a batch may lose beyond what the window saved."""
ARRIVAL = frozenset({"truncate", "reference"})
"""Actions of reductions made as an output arrives (a cut, a reference to a visible twin); every other
reducing decision is a batch edit."""


@dataclass
class Credit:
    """One window's running account of its saving against the raw history."""

    saved: float = 0.0
    """What the window saved against raw so far, less the losses of its batches (uncached-price tokens)."""
    raw_cost: float = 0.0
    """What the raw history cost so far, every request reading the one before from the cache."""
    reduced: int = 0
    """Tokens the window holds fewer than the raw history (arrival reductions and batch edits)."""
    raw_tokens: int = 0
    """The raw history's request at the last request counted."""
    seen: int = 0
    """Decisions of ``source`` already counted."""
    source: list[Decision] | None = None
    """The decision list counted (a new one: the window was re-opened, after a compaction)."""

    def observe(self, decisions: list[Decision], total: int, profile: ModelProfile) -> float:
        """Count one request whose conversation is ``total`` tokens; the credit a batch may spend on it.

        ``decisions`` are the window's so far (append-only). The raw history's cost leaves out the
        system text and tool schemas, which both send alike, so its margin errs low.
        """
        write, read = cache_prices(profile)
        if decisions is not self.source:
            # A re-opened window: its standing reductions are already in effect, not new savings.
            self.source, self.seen, self.reduced = decisions, len(decisions), _reduction(decisions)
        new = decisions[self.seen :]
        self.seen = len(decisions)
        arrived = _reduction(d for d in new if d.action in ARRIVAL)
        self.reduced += _reduction(d for d in new if d.action not in ARRIVAL)
        self.saved += read * self.reduced + write * arrived
        self.reduced += arrived
        raw = total + self.reduced
        self.raw_cost += read * min(raw, self.raw_tokens) + write * max(raw - self.raw_tokens, 0)
        self.raw_tokens = raw
        return self.available

    @property
    def available(self) -> float:
        """The credit a batch may spend now: the saving so far plus the raw history's margin."""
        return self.saved + RAW_MARGIN * self.raw_cost

    def spend(self, loss: float) -> None:
        """Charge a recorded batch's loss (what its request cost more than keeping the cache)."""
        self.saved -= loss


def _reduction(decisions: Iterable[Decision]) -> int:
    return sum(max(d.tokens_saved, 0) for d in decisions)


def rewrite_loss(tokens: int, profile: ModelProfile) -> float:
    """What rewriting a whole request of ``tokens`` for no saving costs more than keeping the cache."""
    write, read = cache_prices(profile)
    return batch_loss(rewritten=tokens, saved=0, write=write, read=read)
