"""The ledger's arithmetic, off the request path: tokens and cache-aware cost of both arms.

Counting a 2,000-message body and pricing it under the cache rules takes longer than the rest of a
request, and the agent does not need it to proceed, so a single background thread does it in order
of arrival (each session's simulated caches see its requests in sequence). :meth:`Accountant.flush`
waits for it (the stats endpoint and ``proxy stats`` read a complete ledger).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..log.events import UsageReport
from ..models import ModelProfile
from ..replay.costmodel import CacheSimulator
from ..tokens import TokenCounter
from ..wire.blocks import BlockMeter
from .ledger import Ledger, LedgerRow
from .modelnote import endpoint_profile

log = logging.getLogger("contextwarden.proxy")


@dataclass(frozen=True, kw_only=True)
class Job:
    """One answered request to account for."""

    session_id: str
    model: str
    fmt: str
    mode: str
    outcome: str
    status: int
    note: str
    added_ms: float
    at: float
    client_body: Mapping[str, Any] | None
    """The client's parsed body (``None`` when it was not JSON)."""
    projected_body: Mapping[str, Any] | None
    """What contextwarden sent, or would have sent in observe mode."""
    usage: UsageReport | None


class Accountant:
    """Turns answered requests into ledger rows on a background thread."""

    def __init__(
        self, ledger: Ledger, counter: TokenCounter, *, on_row: Callable[[LedgerRow], None] | None = None
    ) -> None:
        """Write rows to ``ledger``, counting with ``counter``; ``on_row`` sees each row written."""
        self.ledger = ledger
        self.meter = BlockMeter(counter)
        self.on_row = on_row
        self._simulators: dict[tuple[str, str], CacheSimulator] = {}
        self._jobs: queue.Queue[Job | None] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="contextwarden-ledger", daemon=True)
        self._thread.start()

    def submit(self, job: Job) -> None:
        """Queue a job."""
        self._jobs.put(job)

    def flush(self) -> None:
        """Wait until every queued job is in the ledger."""
        self._jobs.join()

    def close(self) -> None:
        """Finish the queue and stop the thread."""
        self._jobs.put(None)
        self._thread.join(timeout=30)

    def _run(self) -> None:
        while True:
            job = self._jobs.get()
            try:
                if job is None:
                    return
                row = self.row(job)
                self.ledger.record(row)
                if self.on_row is not None:
                    self.on_row(row)
            except Exception as exc:  # a lost row must not stop the rows after it
                log.warning("contextwarden proxy could not write a ledger row: %s: %s", type(exc).__name__, exc)
            finally:
                self._jobs.task_done()

    def row(self, job: Job) -> LedgerRow:
        """The ledger row of one job (advances the session's simulated caches)."""
        profile = endpoint_profile(job.model, job.fmt) if job.model else None
        usage = job.usage
        output = usage.output_tokens if usage else 0
        client_tokens = forwarded = 0
        client_cost = projected_cost = billed = 0.0
        if profile is not None:
            output_cost = output * (profile.output_price or 0) / 1_000_000
            if usage is not None:
                billed = (
                    profile.cost(
                        input_tokens=usage.input_tokens,
                        output_tokens=usage.output_tokens,
                        cache_read_tokens=usage.cache_read_tokens,
                        cache_write_tokens=usage.cache_write_tokens,
                    )
                    or 0.0
                )
            if job.client_body is not None:
                client_tokens, client_cost = self._price(job, "client", job.client_body, profile)
                client_cost += output_cost
            if job.projected_body is not None:
                projected, projected_cost = self._price(job, "projected", job.projected_body, profile)
                projected_cost += output_cost
                forwarded = client_tokens if job.mode == "observe" else projected
            else:
                forwarded, projected_cost = client_tokens, client_cost
        return LedgerRow(
            session_id=job.session_id,
            model=job.model,
            format=job.fmt,
            mode=job.mode,
            outcome=job.outcome,
            status=job.status,
            client_tokens=client_tokens,
            forwarded_tokens=forwarded,
            input_tokens=usage.input_tokens if usage else 0,
            cache_read_tokens=usage.cache_read_tokens if usage else 0,
            cache_write_tokens=usage.cache_write_tokens if usage else 0,
            output_tokens=output,
            cost_usd=billed,
            client_cost_usd=client_cost,
            projected_cost_usd=projected_cost,
            added_ms=job.added_ms,
            note=job.note,
            at=job.at,
        )

    def _price(self, job: Job, arm: str, body: Mapping[str, Any], profile: ModelProfile) -> tuple[int, float]:
        key = (job.session_id, arm)
        blocks, points = self.meter.cut(job.fmt, body, lane=key)
        sim = self._simulators.get(key)
        if sim is None or sim.profile.name != profile.name:
            sim = self._simulators[key] = CacheSimulator(profile)
        cost = sim.observe(blocks, at=job.at or time.time(), breakpoints=points)
        return cost.input_tokens, cost.cost_usd
