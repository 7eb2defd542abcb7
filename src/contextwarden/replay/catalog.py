"""Strategies by name: the one place a ``--strategy`` spec becomes a :class:`Strategy`.

It sits above the strategy kinds it names (the built-in ones, contextwarden's variants and the
peers), so none of them needs to know the others.
"""

from __future__ import annotations

from ..errors import UsageError
from .names import is_peer
from .peers import PEERS, peer_strategy
from .strategies import MaskLastN, RawStrategy, Strategy, convert_option
from .warden import contextwarden_variant


def parse_strategy(spec: str) -> Strategy:
    """The strategy a name stands for: ``raw``, ``mask-last-n[:N]``, ``contextwarden[:options]`` or a peer."""
    spec = spec.strip()
    head, _, tail = spec.partition(":")
    if spec == "raw":
        return RawStrategy()
    if head == "mask-last-n":
        keep = convert_option(tail, 0, spec) if tail else 10
        if keep < 0:
            raise UsageError(f"{spec}: N must not be negative")
        return MaskLastN(keep)
    if head == "contextwarden":
        return contextwarden_variant(tail, name=spec)
    if is_peer(head):
        return peer_strategy(head)
    raise UsageError(
        f"unknown strategy {spec!r}; known: raw, mask-last-n:N, contextwarden[:options], {', '.join(PEERS)}"
    )
