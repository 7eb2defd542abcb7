"""A spending limit per proxied task: once reached, the proxy answers with an error instead of forwarding.

The weights are :class:`~contextwarden.plan.spend.SpendLimit`'s (output tokens plus
uncached input at a quarter). The tree behind a proxy is the client's own session: every lane the
proxy files under one client session id (Claude Code's ``x-claude-code-session-id``, Codex's
``session_id``, ``metadata.user_id``, ``prompt_cache_key``), so the main conversation, its subagents
and its title requests count against one limit. A request with no client session id is counted alone,
as its own session.

What counts is the provider's real usage of every answer, the same report the ledger gets, in both
modes (a request the proxy fell back on before it knew the session cannot be counted). Each worker
keeps the sums in memory, fed as each answer arrives (before its last byte reaches the client, so
the task's next request sees it); the first request of a task in a process starts from the ledger's
rows of it, so a restarted proxy keeps what was spent. With several workers, a task can overspend by
what the other workers record after this one first saw it.

No reminders: the library's 50/25/10% notices are instructions added to the log, and the proxy
forwards the client's own history, so a notice would change the request outside a window event.
The check before forwarding is a dictionary lookup.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from ..log.events import UsageReport
from ..plan.spend import SpendLimit
from ._db import ProxyDB
from .forward import error_body
from .identity import Identity

REFUSED = "budget_exhausted"
"""The outcome (ledger, metrics) of a request refused at the spend limit (the stored value keeps its
first spelling, so older ledgers read the same)."""

REFUSAL_STATUS = 400
"""The status of a refusal: a client error that SDKs do not retry (Anthropic answers a spent credit
balance with a 400 too), so the agent stops and shows the message."""


@dataclass(frozen=True, kw_only=True)
class Spent:
    """What one task has spent, as its spend limit weighs it."""

    task: str
    """The key spending is counted under (:attr:`Identity.task`)."""
    weighted: float
    """Weighted tokens spent."""
    limit: int
    """The spend limit (weighted tokens)."""

    @property
    def exhausted(self) -> bool:
        """Whether nothing is left."""
        return self.weighted >= self.limit

    @property
    def message(self) -> str:
        """What the agent is told when a request is refused."""
        return (
            f"contextwarden proxy: this task reached its spend limit ({self.weighted:,.0f} of {self.limit:,} "
            "weighted tokens: output plus uncached input, across the client session and its subagents). "
            "The request was not sent to the model. Finish with what you have, or restart the proxy "
            "with a larger --spend-limit."
        )


class TaskSpending:
    """The sums of one proxy process, checked before each request and fed after each answer."""

    def __init__(self, policy: SpendLimit, db: ProxyDB) -> None:
        """Enforce ``policy``'s limit and weights; ``db`` holds the ledger a task's sum starts from."""
        self.policy = policy
        self.db = db
        self._spent: dict[str, float] = {}
        self._lock = threading.Lock()

    def check(self, identity: Identity) -> Spent:
        """What the request's task has spent (``.exhausted``: refuse it)."""
        task = identity.task
        with self._lock:
            weighted = self._spent.get(task)
        if weighted is None:
            weighted = self._from_ledger(identity)
            with self._lock:  # a concurrent first request may have started it: keep one sum
                weighted = self._spent.setdefault(task, weighted)
        return Spent(task=task, weighted=weighted, limit=self.policy.limit)

    def record(self, identity: Identity, usage: UsageReport) -> None:
        """Add one answer's usage to its task."""
        weighted = self.policy.weigh(usage)
        with self._lock:
            if identity.task in self._spent:  # else the next check reads it from the ledger
                self._spent[identity.task] += weighted

    def _from_ledger(self, identity: Identity) -> float:
        uncached = "CASE WHEN input_tokens > cache_read_tokens THEN input_tokens - cache_read_tokens ELSE 0 END"
        sums = f"SELECT SUM(output_tokens), SUM({uncached}) FROM contextwarden_proxy_ledger WHERE session_id "
        if identity.task == identity.session_id:
            rows = self.db.execute(sums + "= ?", (identity.session_id,))
        else:
            lanes = "SELECT session_id FROM contextwarden_proxy_lanes WHERE scope = ?"
            rows = self.db.execute(sums + f"IN ({lanes})", (identity.scope,))
        output, uncached_input = rows[0] if rows else (0, 0)
        usage = UsageReport(input_tokens=int(uncached_input or 0), output_tokens=int(output or 0))
        return self.policy.weigh(usage)


def refusal_body(fmt: str, spent: Spent) -> bytes:
    """The error body of a refused request, in the shape the client's protocol uses for errors."""
    return error_body(fmt, spent.message, kind="invalid_request_error", code=REFUSED, status=REFUSAL_STATUS)
