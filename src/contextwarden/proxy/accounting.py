"""The ledger's arithmetic, off the request path: tokens and cache-aware cost of both arms.

Counting a 2,000-message body and pricing it under the cache rules takes longer than the rest of a
request, and the agent does not need it to proceed, so a single background thread does it in order
of arrival (each session's simulated caches see its requests in sequence). :meth:`Accountant.flush`
waits for it (the stats endpoint and ``proxy stats`` read a complete ledger).

The thread accounts every job already queued, and those that come within :data:`GATHER_SECONDS`
of the first (up to :data:`BATCH`), before it writes, and writes the rows with one INSERT per batch:
under load the ledger costs a statement per batch, not per request. A row the database refuses for
itself (a value it cannot store) is lost alone: when a batch fails so, its rows are written one by
one.

A row the database cannot take now (PostgreSQL restarting, another process holding SQLite's write
lock) waits in memory, in order, and is written as soon as the database answers again: the thread
tries again every :data:`RETRY_SECONDS` and before each new batch.
"""

from __future__ import annotations

import itertools
import logging
import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ..errors import StoreError
from ..log.events import UsageReport
from ..models import ModelProfile
from ..replay.costmodel import CacheSimulator
from ..tokens import TokenCounter
from ..wire.blocks import BlockMeter
from ._db import ValuesRefused
from .ledger import Ledger, LedgerRow
from .modelnote import endpoint_profile

log = logging.getLogger("contextwarden.proxy")

RETRY_SECONDS = 0.5
"""How often rows waiting for the database are tried again."""
BATCH = 100
"""Jobs the thread accounts before it writes their rows, and rows per INSERT at most."""
GATHER_SECONDS = 0.05
"""How long the thread waits for more jobs after a batch's first before it writes (``flush`` and
``close`` cut it short): under load the requests answered this close together share one INSERT, and
a lone row reaches the ledger this much later."""
MAX_WAITING_ROWS = 100_000
"""Rows kept while the database is away; beyond this the oldest are dropped (and counted in the log)."""


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
        self._waiting: deque[LedgerRow] = deque()
        """Rows computed but not yet written (the database did not take them), oldest first."""
        self._writing = threading.Lock()
        self._reported: LedgerRow | None = None
        """The waiting row the log last told about (one line per outage, not one per retry)."""
        self._jobs: queue.Queue[Job | Literal["flush"] | None] = queue.Queue()
        """Jobs in order of arrival; ``"flush"`` ends the batch being gathered, ``None`` stops the thread."""
        self._thread = threading.Thread(target=self._run, name="contextwarden-ledger", daemon=True)
        self._thread.start()

    def submit(self, job: Job) -> None:
        """Queue a job."""
        self._jobs.put(job)

    @property
    def waiting(self) -> int:
        """Rows waiting for the database."""
        return len(self._waiting)

    def flush(self) -> None:
        """Wait until every queued job is accounted for, and try once more to write the waiting rows."""
        if self._thread.is_alive():  # else it was closed: nothing to wait for
            self._jobs.put("flush")
            self._jobs.join()
        self._write_waiting()

    def close(self) -> None:
        """Finish the queue and stop the thread."""
        self._jobs.put(None)
        self._thread.join(timeout=30)
        if self._waiting:
            log.warning("contextwarden proxy closed with %d ledger rows the database did not take", self.waiting)

    def _run(self) -> None:
        while True:
            try:
                jobs = [self._jobs.get(timeout=RETRY_SECONDS if self._waiting else None)]
            except queue.Empty:
                self._write_waiting()
                continue
            try:
                until = time.monotonic() + GATHER_SECONDS
                while isinstance(jobs[-1], Job):  # this one and those that come soon, written together
                    self._account(jobs[-1])
                    if len(jobs) == BATCH:
                        break
                    try:
                        jobs.append(self._jobs.get(timeout=max(0.0, until - time.monotonic())))
                    except queue.Empty:
                        break
                self._write_waiting()
            except Exception as exc:  # a failure in the writing must not stop the thread
                log.warning("contextwarden proxy could not write the ledger: %s: %s", type(exc).__name__, exc)
            finally:
                for _ in jobs:
                    self._jobs.task_done()
            if jobs[-1] is None:
                return

    def _account(self, job: Job) -> None:
        try:
            row = self.row(job)
        except Exception as exc:  # a row that cannot be computed must not stop the rows after it
            log.warning("contextwarden proxy could not account a request: %s: %s", type(exc).__name__, exc)
            return
        with self._writing:
            if len(self._waiting) >= MAX_WAITING_ROWS:
                self._waiting.popleft()
                log.warning("contextwarden proxy dropped a ledger row: %d rows wait for the database", MAX_WAITING_ROWS)
            self._waiting.append(row)

    def _write_waiting(self) -> None:
        """Write waiting rows in order, many per INSERT, until the database cannot take one (it stays first in line)."""
        with self._writing:
            size = min(BATCH, self.ledger.rows_per_insert)
            singly = 0  # rows still to write one per INSERT, to find the one of a failed batch the database refuses
            while self._waiting:
                batch = list(itertools.islice(self._waiting, 1 if singly else size))
                try:
                    self.ledger.record_many(batch)
                except Exception as exc:
                    if isinstance(exc, StoreError) and not isinstance(exc, ValuesRefused):
                        self._wait(batch[0], exc)  # the database cannot take it now
                        return
                    if len(batch) > 1:
                        singly = len(batch)
                        continue
                    # a row the database refuses for itself is lost alone
                    log.warning("contextwarden proxy could not write a ledger row: %s: %s", type(exc).__name__, exc)
                    self._waiting.popleft()
                else:
                    self._written(len(batch))
                singly = max(0, singly - 1)

    def _wait(self, row: LedgerRow, exc: StoreError) -> None:
        if row is not self._reported:
            self._reported = row
            log.warning("contextwarden proxy ledger rows wait for the database: %s", exc)

    def _written(self, count: int) -> None:
        rows = [self._waiting.popleft() for _ in range(count)]
        if self.on_row is not None:
            for row in rows:
                self.on_row(row)

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
