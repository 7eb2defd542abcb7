"""The ledger's rows go to the database in batches: the jobs queued together cost one INSERT, not one each.

The accountant's thread is held at its first row (by the ``on_row`` hook) while more jobs queue up
behind it, as they do under load; then it is let go. Jobs that come one at a time, soon after one
another, share an INSERT too. Rows keep their order, every written row reaches
``on_row``, and a row the database refuses for itself is lost alone, the rest of its batch written.
"""

from __future__ import annotations

import dataclasses
import math
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from _statements import Counted
from contextwarden.proxy import accounting
from contextwarden.proxy._db import ProxyDB
from contextwarden.proxy.accounting import BATCH, Accountant, Job
from contextwarden.proxy.ledger import Ledger, LedgerRow
from contextwarden.tokens import HeuristicCounter

SMALL = "claude-haiku-4-5"
INSERT = "INSERT INTO contextwarden_proxy_ledger"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ProxyDB]:
    """The proxy's tables on a SQLite file, or on PostgreSQL (a schema of their own)."""
    url = str(tmp_path / "p.db") if request.param == "sqlite" else request.getfixturevalue("pg_schema_dsn")
    db = ProxyDB(url, connections=2)
    yield db
    db.close()


def _job(n: int, *, status: int = 200) -> Job:
    said = {"role": "user", "content": f"question {n}"}
    return Job(
        session_id=f"s{n % 3}",
        model=SMALL,
        fmt="anthropic",
        mode="manage",
        outcome="projected",
        status=status,
        note=str(n),
        added_ms=1.0,
        at=1_000_000.0 + n,
        client_body={"model": SMALL, "max_tokens": 16, "messages": [said]},
        projected_body={"model": SMALL, "max_tokens": 16, "messages": [said]},
        usage=None,
    )


class _Held:
    """An accountant whose thread stops at its first written row until the jobs behind it are queued."""

    def __init__(self, ledger: Ledger) -> None:
        self.seen: list[LedgerRow] = []
        self.entered, self.released = threading.Event(), threading.Event()
        self.accountant = Accountant(ledger, HeuristicCounter(), on_row=self._on_row)

    def _on_row(self, row: LedgerRow) -> None:
        self.seen.append(row)
        self.entered.set()
        assert self.released.wait(30)

    def queue_behind_the_first(self, jobs: list[Job]) -> None:
        """Submit the first job, wait until its row is written, queue the others, let the thread go, flush."""
        self.accountant.submit(jobs[0])
        assert self.entered.wait(30)
        for job in jobs[1:]:
            self.accountant.submit(job)
        self.released.set()
        self.accountant.flush()
        self.accountant.close()


@pytest.mark.parametrize("queued", [60, 250])
def test_the_jobs_queued_together_are_written_with_one_insert_per_batch(db: ProxyDB, queued: int) -> None:
    ledger = Ledger(db)
    counted = Counted(db)
    held = _Held(ledger)
    held.queue_behind_the_first([_job(n) for n in range(queued + 1)])
    inserts = [s for s in counted.sent if s.startswith(INSERT)]
    # the first row alone, then the queued ones BATCH at a time
    assert len(inserts) == 1 + math.ceil(queued / BATCH)
    assert [row.note for row in ledger.rows()] == [str(n) for n in range(queued + 1)]
    assert [row.note for row in held.seen] == [str(n) for n in range(queued + 1)]
    assert all(row.client_tokens > 0 and row.client_cost_usd > 0 for row in held.seen)  # accounted, not just stored


def test_the_jobs_that_come_soon_after_the_first_share_its_insert_and_flush_does_not_wait_for_more(
    db: ProxyDB, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(accounting, "GATHER_SECONDS", 5.0)
    ledger = Ledger(db)
    counted = Counted(db)
    accountant = Accountant(ledger, HeuristicCounter())
    started = time.monotonic()
    for n in range(20):  # one at a time, as answers come
        accountant.submit(_job(n))
        time.sleep(0.005)
    accountant.flush()
    flushed = time.monotonic() - started
    accountant.close()
    assert len([s for s in counted.sent if s.startswith(INSERT)]) == 1
    assert [row.note for row in ledger.rows()] == [str(n) for n in range(20)]
    assert flushed < accounting.GATHER_SECONDS  # flush ended the gathering, it did not wait it out


def test_a_batch_never_holds_more_parameters_than_the_database_allows(tmp_path: Path) -> None:
    db = ProxyDB(str(tmp_path / "p.db"))
    ledger = Ledger(db)
    db.max_parameters = 7 * len(dataclasses.fields(LedgerRow)) + 3  # seven rows' worth
    assert ledger.rows_per_insert == 7
    rows = [LedgerRow(session_id="s", model=SMALL, format="anthropic", mode="manage", outcome="projected", status=200)]
    with pytest.raises(ValueError, match="8 ledger rows in one INSERT: at most 7"):
        ledger.record_many(rows * 8)
    counted = Counted(db)
    held = _Held(ledger)
    held.queue_behind_the_first([_job(n) for n in range(21)])
    inserts = [s for s in counted.sent if s.startswith(INSERT)]
    assert len(inserts) == 1 + math.ceil(20 / 7)
    assert [row.note for row in ledger.rows()] == [str(n) for n in range(21)]
    db.close()


def test_a_row_the_database_refuses_is_lost_alone_and_the_rest_of_its_batch_is_written(db: ProxyDB) -> None:
    ledger = Ledger(db)
    held = _Held(ledger)
    # a status no INTEGER column holds: SQLite's driver and PostgreSQL refuse the row, and with it its batch's INSERT
    jobs = [_job(n, status=2**70 if n == 3 else 200) for n in range(7)]
    held.queue_behind_the_first(jobs)
    written = ["0", "1", "2", "4", "5", "6"]
    assert [row.note for row in ledger.rows()] == written
    assert [row.note for row in held.seen] == written
    assert held.accountant.waiting == 0
