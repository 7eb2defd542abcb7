"""The context-failure taxonomy (:mod:`contextwarden.governance.taxonomy`) over the proxy's sessions.

Each proxied session records, per build, the model, the tools and the policy it was planned with,
so :func:`~contextwarden.governance.classify.classify_session` rebuilds its requests under them and
tags what it finds. It reads the store and writes nothing (the rebuild runs on a copy in memory).
"""

from __future__ import annotations

from typing import Any

from ..errors import SessionNotFound
from ..governance.classify import classify_session
from ..log.store import SessionStore
from ..tokens import TokenCounter


def with_taxonomy(store: SessionStore, stats: dict[str, Any], *, counter: TokenCounter | None = None) -> dict[str, Any]:
    """``stats`` (:meth:`.ledger.Ledger.stats`) with each session's tags under ``taxonomy``.

    A session the store no longer holds (removed, or a request that never had one) gets ``None``.
    """
    sessions = []
    for entry in stats["sessions"]:
        report = None
        if entry["session_id"]:
            try:
                report = classify_session(store, entry["session_id"], counter=counter).to_dict()
            except SessionNotFound:
                report = None
        sessions.append({**entry, "taxonomy": report})
    return {**stats, "sessions": sessions}
