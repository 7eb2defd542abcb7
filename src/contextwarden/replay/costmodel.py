"""The cache-aware cost model: what a sequence of requests costs once the provider's prompt cache is counted.

A request is measured as a list of :class:`Block` s, one per rendered message (the tool
definitions, when any, form the first block), each with a content key and a token count. Two
requests share a prefix up to the first block whose key differs; that is the granularity the
model compares at (real caches compare tokens, so a shared prefix may in truth reach a few tokens
into the first differing message; the model ignores that sliver).

Two cache mechanics, chosen by the profile's ``cache_style``:

- **automatic** (``openai-auto``, ``gemini-implicit``): every request is cached; a later request
  reads the longest prefix it shares with any earlier request still within the cache lifetime,
  counted only from ``min_cacheable_tokens`` (OpenAI: 1,024) and in steps of ``cache_granularity``
  (OpenAI: 128; Gemini 3: 2,048). Reads cost ``cache_read_price``; there is no write surcharge. Use
  refreshes the lifetime. Gemini's implicit cache serves only a measured share of what is eligible
  (:data:`IMPLICIT_HIT_SHARE`), so the model expects that share.
- **explicit breakpoints** (``anthropic-breakpoints``): only prefixes ending at a breakpoint (at
  most 4 per request) are written, at 1.25x input for the 5-minute lifetime or 2x for the 1-hour
  one; a later request reads the longest written prefix that ends at most 20 blocks before one of
  its own breakpoints (Anthropic's lookback), at 0.1x; a hit refreshes the entry's lifetime. The
  tokens between the hit and the last breakpoint are written; the rest are plain input.

``none`` caches nothing. Output tokens are billed at ``output_price``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from ..models import ModelProfile

# the one measure of a request body, shared with the proxy (it cuts every wire format)
from ..wire.blocks import Block as Block
from ..wire.blocks import BlockMeter as BlockMeter

CacheTTL = Literal["5m", "1h"]
CacheMechanics = Literal["automatic", "breakpoints", "none"]

IMPLICIT_HIT_SHARE: dict[str, float] = {"openai-auto": 1.0, "gemini-implicit": 0.93}
"""The share of an eligible cached prefix an automatic cache is expected to serve. Gemini's implicit
cache does not serve every eligible prefix: over the 4,093 calls of the shared mini-swe-agent Gemini 3
Pro runs, the tokens it read were 0.931 of the whole 2,048-token blocks of the prefix each call shared
with the one before it (0.933 and 0.929 on alternate halves of the runs): 7% of eligible calls read
nothing, 13% read an older, shorter entry. OpenAI's is taken to serve every eligible prefix."""
MAX_BREAKPOINTS = 4
"""Anthropic accepts at most this many ``cache_control`` breakpoints per request."""
LOOKBACK_BLOCKS = 20
"""Anthropic looks for an earlier cache entry at most this many blocks before a breakpoint."""
_TTL_SECONDS: dict[str, float] = {"5m": 300.0, "1h": 3600.0}


@dataclass(frozen=True, kw_only=True)
class RequestCost:
    """What one request costs under the cache model."""

    input_tokens: int
    """All input tokens of the request."""
    cache_read_tokens: int
    """Input tokens served from the cache."""
    cache_write_tokens: int
    """Input tokens written to the cache at the write price (explicit caching only)."""
    output_tokens: int
    """Output tokens billed."""
    cost_usd: float
    """The whole request, cache-adjusted, in USD (0 when the profile has no prices)."""
    shared_prefix_tokens: int
    """Tokens of the longest prefix shared with a live earlier request, before minimum and steps."""

    @property
    def uncached_tokens(self) -> int:
        """Input tokens billed at the plain input price."""
        return self.input_tokens - self.cache_read_tokens - self.cache_write_tokens


def mechanics_of(profile: ModelProfile) -> CacheMechanics:
    """How the profile's provider caches prompts."""
    if profile.cache_style == "anthropic-breakpoints":
        return "breakpoints"
    if profile.cache_style in ("openai-auto", "gemini-implicit") and profile.cache_read_price is not None:
        return "automatic"
    return "none"


# --------------------------------------------------------------------------- the cache


class _Node:
    __slots__ = ("children", "entry_expires", "last_used")

    def __init__(self) -> None:
        self.children: dict[str, _Node] = {}
        self.last_used = float("-inf")
        self.entry_expires = float("-inf")


@dataclass(frozen=True, kw_only=True)
class CostSettings:
    """How the cache model prices a replay."""

    ttl: CacheTTL = "5m"
    """Explicit caching: which lifetime breakpoints are written with (5 minutes at 1.25x, 1 hour at 2x)."""
    mechanics: CacheMechanics | None = None
    """Force a cache mechanic instead of the profile's (for what-if comparisons)."""


class CacheSimulator:
    """Prices a sequence of requests for one profile, keeping the provider's cache state between them."""

    def __init__(self, profile: ModelProfile, settings: CostSettings | None = None) -> None:
        self.profile = profile
        self.settings = settings or CostSettings()
        self.mechanics: CacheMechanics = self.settings.mechanics or mechanics_of(profile)
        if self.mechanics == "automatic":
            self.ttl = float(profile.cache_ttl_seconds or 300)
        else:
            self.ttl = _TTL_SECONDS[self.settings.ttl]
        self._root = _Node()

    def seed(self, blocks: Sequence[Block], *, at: float) -> None:
        """Start with the prefix ``blocks`` cached at time ``at``, as an earlier session left it."""
        path = self._path(blocks, create=True)
        for node in path:
            if node is not None:
                node.last_used = at
        last = path[-1] if path else None
        if last is not None:
            last.entry_expires = at + self.ttl

    def forget(self, blocks: Sequence[Block], *, keep_tokens: int) -> None:
        """The provider lost its cache: keep only the first ``keep_tokens`` of ``blocks``' prefix.

        What a request's usage says it really read (a reset, see
        :func:`~contextwarden.replay.reference.cache_resets`); everything else cached is dropped.
        """
        old, self._root = self._root, _Node()
        node, kept, total = old, self._root, 0
        for block in blocks:
            child = node.children.get(block.key)
            total += block.tokens
            if child is None or total > keep_tokens:
                break
            fresh = _Node()
            fresh.last_used, fresh.entry_expires = child.last_used, child.entry_expires
            kept.children[block.key] = fresh
            node, kept = child, fresh

    def observe(
        self,
        blocks: Sequence[Block],
        *,
        at: float,
        output_tokens: int = 0,
        breakpoints: Sequence[int] = (),
    ) -> RequestCost:
        """Price one request sent at time ``at`` (seconds) and update the cache.

        ``breakpoints`` are block indices whose prefix (that block included) is marked for
        explicit caching; only the last :data:`MAX_BREAKPOINTS` count. Ignored by automatic caching.
        """
        return self._request(blocks, at, output_tokens, breakpoints, commit=True)

    def peek(
        self,
        blocks: Sequence[Block],
        *,
        at: float,
        output_tokens: int = 0,
        breakpoints: Sequence[int] = (),
    ) -> RequestCost:
        """What :meth:`observe` would charge, leaving the cache as it is."""
        return self._request(blocks, at, output_tokens, breakpoints, commit=False)

    def _request(
        self, blocks: Sequence[Block], at: float, output_tokens: int, breakpoints: Sequence[int], *, commit: bool
    ) -> RequestCost:
        path = self._path(blocks, create=commit)
        cum = [0]
        for block in blocks:
            cum.append(cum[-1] + block.tokens)
        total = cum[-1]
        shared = self._shared(path, cum, at, commit=commit)
        if self.mechanics == "automatic":
            read, write = self._automatic(shared), 0
        elif self.mechanics == "breakpoints":
            read, write = self._explicit(path, cum, at, breakpoints, commit=commit)
        else:
            read, write = 0, 0
        return RequestCost(
            input_tokens=total,
            cache_read_tokens=read,
            cache_write_tokens=write,
            output_tokens=output_tokens,
            cost_usd=self._price(total, read, write, output_tokens),
            shared_prefix_tokens=shared,
        )

    def _path(self, blocks: Sequence[Block], *, create: bool) -> list[_Node | None]:
        """The trie nodes of every prefix of the request (created where new, or None when not creating)."""
        node: _Node | None = self._root
        path: list[_Node | None] = []
        for block in blocks:
            child = node.children.get(block.key) if node is not None else None
            if child is None and create:
                child = _Node()
                assert node is not None
                node.children[block.key] = child
            path.append(child)
            node = child
        return path

    def _shared(self, path: Sequence[_Node | None], cum: Sequence[int], at: float, *, commit: bool) -> int:
        shared = 0
        for depth, node in enumerate(path):
            if node is None or at - node.last_used > self.ttl:
                break
            shared = cum[depth + 1]
        if commit:
            for node in path:
                if node is not None:
                    node.last_used = at
        return shared

    def _automatic(self, shared: int) -> int:
        if shared < max(self.profile.min_cacheable_tokens, 1):
            return 0
        step = max(self.profile.cache_granularity, 1)
        return int((shared // step) * step * IMPLICIT_HIT_SHARE.get(self.profile.cache_style, 1.0))

    def _explicit(
        self, path: Sequence[_Node | None], cum: Sequence[int], at: float, breakpoints: Sequence[int], *, commit: bool
    ) -> tuple[int, int]:
        points = sorted({p for p in breakpoints if 0 <= p < len(path)})[-MAX_BREAKPOINTS:]
        if not points:
            return 0, 0
        hit = -1
        for point in points:
            for depth in range(point, max(point - LOOKBACK_BLOCKS - 1, hit), -1):
                node = path[depth]
                if node is not None and node.entry_expires >= at:
                    hit = depth
                    break
        read = cum[hit + 1] if hit >= 0 else 0
        minimum = self.profile.min_cacheable_tokens
        written = [p for p in points if p > hit and cum[p + 1] >= minimum]
        if commit:
            # Every live entry inside the prefix just read was used, so its lifetime restarts; every
            # breakpoint marks an entry (free inside the read prefix, paid for beyond it).
            for node in path[: hit + 1]:
                if node is not None and node.entry_expires >= at:
                    node.entry_expires = at + self.ttl
            for depth in points:
                node = path[depth]
                if node is not None and cum[depth + 1] >= minimum and (depth <= hit or depth in written):
                    node.entry_expires = at + self.ttl
        write = cum[written[-1] + 1] - read if written else 0
        return read, write

    def _price(self, total: int, read: int, write: int, output: int) -> float:
        p = self.profile
        one_hour = self.mechanics == "breakpoints" and self.settings.ttl == "1h"
        cost = p.cost(
            input_tokens=total,
            output_tokens=output,
            cache_read_tokens=read,
            cache_write_tokens=0 if one_hour else write,
            cache_write_1h_tokens=write if one_hour else 0,
        )
        if cost is None:
            # A profile without some price: fall back to what is known, treating unknown as free.
            cost = (
                max(total - read - write, 0) * (p.input_price or 0)
                + output * (p.output_price or 0)
                + read * (p.cache_read_price or p.input_price or 0)
                + write * ((p.cache_write_1h_price if one_hour else p.cache_write_price) or p.input_price or 0)
            ) / 1_000_000
        return cost


def price_call(profile: ModelProfile, *, input_tokens: int, output_tokens: int) -> float:
    """USD of one uncached call (a summarizer's), 0 where the profile has no prices."""
    cost = profile.cost(input_tokens=input_tokens, output_tokens=output_tokens)
    return cost if cost is not None else 0.0
