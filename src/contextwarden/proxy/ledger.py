"""The ledger: one row per proxied request, with the money told truthfully.

Each row holds the tokens the client sent, the tokens forwarded, the provider's real usage
(input, cache read, cache write, output) and its cost at the model's prices, and two estimates under
the same simulated cache rules (:mod:`contextwarden.replay.costmodel`): what the client's own
request would have cost (``client_cost_usd``) and what the projection costs (``projected_cost_usd``).
In manage mode the saving is ``client_cost_usd - cost_usd``: billed money against the direct
counterfactual, net of cache effects. In observe mode the client's bytes went upstream, and the
saving contextwarden *would* have made is ``client_cost_usd - projected_cost_usd``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from typing import Any

from ._db import ProxyDB
from .modelnote import endpoint_profile, stand_in_note


@dataclass(frozen=True, kw_only=True)
class LedgerRow:
    """One proxied request."""

    session_id: str
    """The store session it belongs to."""
    model: str
    """The model the client asked for."""
    format: str
    """Its wire format."""
    mode: str
    """``manage`` or ``observe``."""
    outcome: str
    """``projected``, ``unchanged``, ``observed``, ``fallback``, ``passthrough``, ``interrupted``,
    ``upstream_error`` or ``budget_exhausted`` (refused at the task's spend limit, nothing forwarded)."""
    status: int
    """The upstream's HTTP status (0 when there was no answer)."""
    client_tokens: int = 0
    """Input tokens of the request as the client sent it."""
    forwarded_tokens: int = 0
    """Input tokens of the request as forwarded."""
    input_tokens: int = 0
    """The provider's reported input, cached tokens included."""
    cache_read_tokens: int = 0
    """The provider's reported cache reads."""
    cache_write_tokens: int = 0
    """The provider's reported cache writes."""
    output_tokens: int = 0
    """The provider's reported output tokens."""
    cost_usd: float = 0.0
    """What the provider's reported usage costs at the model's prices."""
    client_cost_usd: float = 0.0
    """The client's own request under the simulated cache, same output."""
    projected_cost_usd: float = 0.0
    """The projected request under the simulated cache, same output."""
    added_ms: float = 0.0
    """Time the proxy spent before forwarding."""
    note: str = ""
    """Why a request fell back or passed through."""
    at: float = 0.0
    """Unix time (set on record)."""

    @property
    def effective_cost_usd(self) -> float:
        """What the request costs with contextwarden: billed when managed, estimated when only observed."""
        return self.projected_cost_usd if self.mode == "observe" else self.cost_usd


_COLUMNS = [f.name for f in fields(LedgerRow)]
_AT = _COLUMNS.index("at")


class Ledger:
    """Rows in the proxy's ledger table."""

    def __init__(self, db: ProxyDB) -> None:
        """Keep rows in ``db``."""
        self.db = db

    @property
    def rows_per_insert(self) -> int:
        """The most rows one INSERT may carry: the database's limit on a statement's parameters allows this many."""
        return self.db.max_parameters // len(_COLUMNS)

    def record(self, row: LedgerRow) -> None:
        """Append one row."""
        self.record_many([row])

    def record_many(self, rows: Sequence[LedgerRow]) -> None:
        """Append rows in order with one INSERT: all of them or, when it fails, none.

        At most :attr:`rows_per_insert` rows (a ``ValueError`` beyond).
        """
        if len(rows) > self.rows_per_insert:
            raise ValueError(f"{len(rows)} ledger rows in one INSERT: at most {self.rows_per_insert}")
        if not rows:
            return
        params: list[Any] = []
        for row in rows:
            values = [getattr(row, c) for c in _COLUMNS]
            values[_AT] = row.at or time.time()
            params += values
        one = f"({','.join('?' * len(_COLUMNS))})"
        self.db.execute(
            f"INSERT INTO contextwarden_proxy_ledger ({','.join(_COLUMNS)}) VALUES {','.join([one] * len(rows))}",
            params,
        )

    def rows(self, session_id: str | None = None) -> list[LedgerRow]:
        """Rows, oldest first (of one session when given)."""
        sql = f"SELECT {','.join(_COLUMNS)} FROM contextwarden_proxy_ledger"
        params: tuple[Any, ...] = ()
        if session_id:
            sql += " WHERE session_id = ?"
            params = (session_id,)
        return [LedgerRow(**dict(zip(_COLUMNS, r, strict=True))) for r in self.db.execute(sql + " ORDER BY at", params)]

    def stats(self, session_id: str | None = None, *, visible: Callable[[str], bool] | None = None) -> dict[str, Any]:
        """Totals per session and overall: requests, fall-backs, tokens, billed cost and saving.

        ``visible``: only the sessions it accepts (by id) count, in the sessions and in the total.
        """
        per: dict[str, dict[str, Any]] = {}
        models: set[tuple[str, str]] = set()
        for row in self.rows(session_id):
            if visible is not None and not visible(row.session_id):
                continue
            s = per.get(row.session_id)
            if s is None:
                s = per[row.session_id] = _empty(row.session_id, row.model, row.mode)
                s["model_note"] = stand_in_note(endpoint_profile(row.model, row.format)) if row.model else ""
            _add(s, row)
            models.add((row.model, row.format))
        total = _empty("", "", "")
        for s in per.values():
            for key in _SUMS:
                total[key] += s[key]
        for s in [*per.values(), total]:
            s["saving_usd"] = round(s["client_cost_usd"] - s["effective_cost_usd"], 6)
            s["cost_ratio"] = round(s["effective_cost_usd"] / s["client_cost_usd"], 4) if s["client_cost_usd"] else None
        notes = sorted({stand_in_note(endpoint_profile(m, f)) for m, f in models if m} - {""})
        return {"sessions": list(per.values()), "total": total, "model_notes": notes}


_SUMS = (
    "requests",
    "fallbacks",
    "passthrough",
    "refused",
    "client_tokens",
    "forwarded_tokens",
    "input_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "output_tokens",
    "cost_usd",
    "client_cost_usd",
    "effective_cost_usd",
)


def _empty(session_id: str, model: str, mode: str) -> dict[str, Any]:
    s: dict[str, Any] = {"session_id": session_id, "model": model, "mode": mode}
    s.update(dict.fromkeys(_SUMS, 0))
    return s


def _add(s: dict[str, Any], row: LedgerRow) -> None:
    s["requests"] += 1
    s["fallbacks"] += row.outcome == "fallback"
    s["passthrough"] += row.outcome == "passthrough"
    s["refused"] += row.outcome == "budget_exhausted"
    for key in ("client_tokens", "forwarded_tokens", "input_tokens", "cache_read_tokens", "cache_write_tokens"):
        s[key] += getattr(row, key)
    s["output_tokens"] += row.output_tokens
    s["cost_usd"] += row.cost_usd
    s["client_cost_usd"] += row.client_cost_usd
    s["effective_cost_usd"] += row.effective_cost_usd
