"""The names a ``--strategy`` spec starts with, as types mypy checks.

A spec is a family name, optionally followed by ``:options`` (``mask-last-n:10``,
``contextwarden:keep=3``); :func:`contextwarden.replay.catalog.parse_strategy` reads it.
"""

from __future__ import annotations

from typing import Literal, TypeGuard, get_args

PeerName = Literal["langchain-context-editing", "openai-agents-trimmer", "openhands-condenser"]
"""The peers: other systems' context management, run through their own code (:mod:`.peers`)."""

StrategyFamily = Literal["raw", "mask-last-n", "contextwarden", PeerName]
"""Every strategy family: the part of a spec before ``:``."""

PEER_NAMES: tuple[PeerName, ...] = get_args(PeerName)
"""Every peer name, in declaration order."""


def is_peer(name: str) -> TypeGuard[PeerName]:
    """Whether ``name`` is a peer's name."""
    return name in PEER_NAMES
