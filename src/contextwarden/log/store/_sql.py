"""The SQL core of the SQLite and PostgreSQL stores: every query and row mapping, written once.

The two stores differ only in their :class:`Dialect` (placeholder, table names, row locks,
schema) and in three hooks: how a transaction opens and maps driver errors, and how a duplicate
event id is named. Everything else (the gapless seq check, windows, forks, restores, paging)
is :class:`SQLStore` here, on top of the rules in :mod:`._shared`.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from functools import cache
from itertools import chain
from typing import Any, TypeVar

from ...errors import ConflictError, SessionExists, SessionNotFound, StoreError, UsageError
from ..events import Event, JSONValue
from . import _shared as sh
from ._dialect import Dialect
from ._protocol import SessionInfo
from ._sql_checkpoints import CheckpointSQL

Cursor = Any
"""A DB-API cursor (``sqlite3.Cursor`` or ``psycopg.Cursor``): both return themselves from ``execute``."""

_SESSION_COLUMNS = "id, created_at, last_seq, window_start_seq, parent_session_id, fork_seq, metadata"


_Store = TypeVar("_Store", bound="SQLStore")

_ASYNCHRONOUS: ContextVar[bool] = ContextVar("contextwarden_asynchronous_commits", default=False)


@contextmanager
def asynchronous_commits() -> Iterator[None]:
    """Appends made inside the block commit without waiting for the disk.

    Each is visible to every reader at once and survives a crash of the process that made it. It
    is on disk once any later commit that waits is (the database's log is flushed in order); on
    PostgreSQL the WAL writer flushes it within a fraction of a second anyway. A crash of the
    database server or of the machine before then loses it. For writes that can be made again: the
    proxy appends what a client sent and the answer it got this way, and the client's next request
    brings both back (it sends the whole history), while the ledger row written after each answer
    waits for the disk and takes them with it (its session index writes the history a session is
    found by the same way). SQLite stores opened with ``synchronous="NORMAL"`` commit this way
    always; the memory store keeps nothing on disk.
    """
    token = _ASYNCHRONOUS.set(True)
    try:
        yield
    finally:
        _ASYNCHRONOUS.reset(token)


def committing_asynchronously() -> bool:
    """Whether the caller is inside :func:`asynchronous_commits`."""
    return _ASYNCHRONOUS.get()


class DuplicateSeq(Exception):
    """Internal: the ``(session_id, seq)`` key refused a row; ``append`` reports a conflict."""


class SQLStore(CheckpointSQL):
    """A :class:`~contextwarden.log.store.SessionStore` over a SQL connection; subclasses add the hooks.

    One connection per store object, shared by threads under the subclass's lock.
    """

    dialect: Dialect

    def __enter__(self: _Store) -> _Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ hooks

    def close(self) -> None:
        """Close the connection (idempotent)."""
        raise NotImplementedError

    def _transaction(self, *, write: bool, asynchronous: bool = False) -> AbstractContextManager[Cursor]:
        """Open a transaction (``write`` ones hold the write lock the append check relies on).

        ``asynchronous``: a write transaction commits without waiting for the disk (:func:`asynchronous_commits`).

        Raises :class:`StoreError` for driver errors and :class:`DuplicateSeq` for the seq key.
        """
        raise NotImplementedError

    def _is_duplicate_id(self, exc: BaseException) -> bool:
        """Whether ``exc`` is the driver refusing an event id that is already stored."""
        raise NotImplementedError

    def _duplicate_id(self, cur: Cursor, exc: BaseException, rows: Sequence[sh.Row]) -> str:
        """Name the already stored id that ``exc`` refused among ``rows``."""
        raise NotImplementedError

    def _info_and_page(
        self, cur: Cursor, session_id: str, since_seq: int | None
    ) -> tuple[SessionInfo, list[tuple[int, str]] | None]:
        """The header, and the first page of the session's own rows after ``since_seq`` if read with it."""
        return self._get_info(cur, session_id), None

    def _append_at_once(self, session_id: str, batch: sh.Batch, expected_last_seq: int, *, asynchronous: bool) -> bool:
        """Append ``batch`` in one statement if the database can; whether it did (else the general path runs)."""
        return False

    # ------------------------------------------------------------------ sessions

    def create_session(
        self,
        session_id: str | None = None,
        *,
        metadata: dict[str, JSONValue] | None = None,
        parent_session_id: str | None = None,
    ) -> SessionInfo:
        """Create an empty session (a new id when none is given); ``SessionExists`` if taken."""
        info = sh.new_session_info(session_id, metadata, parent_session_id)
        # one statement: where that commits on its own it needs no transaction block around it
        with self._transaction(write=not self.dialect.statement_commits) as cur:
            self._insert_session(cur, info)
        return info

    def get_session(self, session_id: str) -> SessionInfo:
        """Return the session's header; ``SessionNotFound`` if absent."""
        with self._transaction(write=False) as cur:
            return self._get_info(cur, session_id)

    def list_sessions(self) -> list[SessionInfo]:
        """All sessions, oldest first."""
        d = self.dialect
        with self._transaction(write=False) as cur:
            rows = cur.execute(
                f"SELECT {_SESSION_COLUMNS} FROM {d.sessions} ORDER BY created_at, {d.creation_order}"
            ).fetchall()
        return [_info_from_row(r) for r in rows]

    def delete_session(self, session_id: str) -> None:
        """Delete a session and its own events; refused while forks still read its events."""
        d, p = self.dialect, self.dialect.param
        with self._transaction(write=True) as cur:
            self._get_info(cur, session_id, lock=d.lock_append)
            forks = cur.execute(
                f"SELECT id FROM {d.sessions} WHERE parent_session_id = {p} AND fork_seq > 0", (session_id,)
            ).fetchall()
            if forks:
                names = [r[0] for r in forks]
                raise UsageError(f"session {session_id!r} has forks that share its events: {names}; delete them first")
            self._delete_checkpoints(cur, session_id)
            cur.execute(f"DELETE FROM {d.events} WHERE session_id = {p}", (session_id,))
            cur.execute(f"DELETE FROM {d.sessions} WHERE id = {p}", (session_id,))

    # ------------------------------------------------------------------ events

    def append(self, session_id: str, events: Sequence[Event], *, expected_last_seq: int) -> list[Event]:
        """Append events atomically after ``expected_last_seq``; return them as stored (seq assigned)."""
        sh.check_id(session_id)
        sh.check_seq(expected_last_seq, "expected_last_seq")
        batch = sh.prepare_append(session_id, events, expected_last_seq=expected_last_seq)
        d, p = self.dialect, self.dialect.param
        asynchronous = committing_asynchronously()
        try:
            if batch.rows and self._append_at_once(session_id, batch, expected_last_seq, asynchronous=asynchronous):
                return batch.events
            with self._transaction(write=True, asynchronous=asynchronous) as cur:
                # the write lock (BEGIN IMMEDIATE, or the row lock) keeps last_seq still until commit
                row = cur.execute(
                    f"SELECT last_seq, window_start_seq FROM {d.sessions} WHERE id = {p}{d.lock_append}", (session_id,)
                ).fetchone()
                if row is None:
                    raise SessionNotFound(f"no session {session_id!r}")
                if row[0] != expected_last_seq:
                    raise ConflictError(session_id, expected_last_seq, row[0])
                if not batch.rows:
                    return []
                self._insert_events(cur, batch.rows)
                window_start = batch.window_start if batch.window_start is not None else row[1]
                self._set_position(cur, session_id, batch.rows[-1][1], window_start)
        except DuplicateSeq:
            # only reachable if a writer skipped the lock; the key still keeps the log gapless
            raise ConflictError(session_id, expected_last_seq, self.get_session(session_id).last_seq) from None
        return batch.events

    def read(self, session_id: str, *, since_seq: int = 0) -> list[Event]:
        """Events with seq > ``since_seq``, in order (a fork's shared prefix included)."""
        return list(self.iter_events(session_id, since_seq=since_seq))

    def iter_events(self, session_id: str, *, since_seq: int = 0) -> Iterator[Event]:
        """Like :meth:`read`, streaming a page of rows at a time."""
        return self.header_and_events(session_id, since_seq=since_seq)[1]

    def header_and_events(self, session_id: str, *, since_seq: int = 0) -> tuple[SessionInfo, Iterator[Event]]:
        """The session's header and :meth:`iter_events`, the header read with the first page if it can be."""
        sh.check_seq(since_seq, "since_seq")
        return self._events(session_id, since_seq)

    def read_window(self, session_id: str) -> list[Event]:
        """Events from the current window's start on; only those rows are read."""
        return list(self._events(session_id, None)[1])

    def _events(self, session_id: str, since_seq: int | None) -> tuple[SessionInfo, Iterator[Event]]:
        # ``since_seq`` None: from the window's start
        with self._transaction(write=False) as cur:
            info, page = self._info_and_page(cur, session_id, since_seq)
            since = info.window_start_seq - 1 if since_seq is None else since_seq
            segments = sh.lineage(info, lambda sid: self._get_info(cur, sid), since_seq=since)
        first = {(info.id, since): page} if page is not None else {}

        def fetch(segment: sh.Segment, after: int) -> list[tuple[int, str]]:
            rows = first.pop((segment.session_id, after), None)
            return self._fetch(segment, after) if rows is None else rows

        return info, sh.iter_segments(segments, fetch)

    def fork(self, session_id: str, *, at_seq: int, new_session_id: str | None = None) -> SessionInfo:
        """Branch a session after ``at_seq``; the branch shares the prefix without copying it."""
        sh.check_seq(at_seq, "at_seq")
        new_id = sh.check_new_session_id(new_session_id if new_session_id is not None else sh.new_session_id())
        marker = sh.fork_marker(session_id, new_id, at_seq)
        with self._transaction(write=True) as cur:
            # locked, so the parent cannot be deleted until the fork is recorded
            parent = self._get_info(cur, session_id, lock=self.dialect.lock_fork)
            if at_seq > parent.last_seq:
                raise UsageError(f"cannot fork {session_id!r} at seq {at_seq}: it has {parent.last_seq} events")
            segments = sh.lineage(parent, lambda sid: self._get_info(cur, sid), upto_seq=at_seq)
            info = SessionInfo(
                id=new_id,
                created_at=time.time(),
                last_seq=at_seq + 1,
                window_start_seq=sh.fork_window_start(segments, lambda seg: self._latest_compaction(cur, seg)),
                parent_session_id=session_id,
                fork_seq=at_seq,
                metadata=parent.metadata,
            )
            self._insert_session(cur, info)
            self._insert_events(cur, [marker])
        return info

    # ------------------------------------------------------------------ extras

    def kind_counts(self, session_id: str) -> dict[str, int]:
        """Count the events of each kind in the session (a fork's shared prefix included)."""
        d, p = self.dialect, self.dialect.param
        counts: dict[str, int] = {}
        with self._transaction(write=False) as cur:
            info = self._get_info(cur, session_id)
            for seg in sh.lineage(info, lambda sid: self._get_info(cur, sid)):
                rows = cur.execute(
                    f"SELECT kind, count(*) FROM {d.events} WHERE session_id = {p} AND seq > {p} AND seq <= {p} "
                    "GROUP BY kind",
                    (seg.session_id, seg.after_seq, seg.upto_seq),
                ).fetchall()
                for kind, n in rows:
                    counts[kind] = counts.get(kind, 0) + int(n)
        return counts

    def restore_session(self, header: SessionInfo, events: Iterable[Event]) -> SessionInfo:
        """Create ``header.id`` holding ``events`` at seq 1..n; nothing is stored if anything fails.

        ``events`` is consumed inside the transaction, so a decoding error raised by a lazy
        iterable (a JSONL file read line by line) rolls everything back.
        """
        tracker = sh.RestoreTracker(sh.check_new_session_id(header.id))
        with self._transaction(write=True) as cur:
            self._insert_session(cur, tracker.info(header))
            page: list[sh.Row] = []
            for row in tracker.feed(events):
                page.append(row)
                if len(page) >= sh.PAGE_SIZE:
                    self._insert_events(cur, page)
                    page = []
            self._insert_events(cur, page)
            info = tracker.info(header)
            self._set_position(cur, info.id, info.last_seq, info.window_start_seq)
        return info

    # ------------------------------------------------------------------ internals

    def _migrate(self) -> None:
        d, p = self.dialect, self.dialect.param
        with self._transaction(write=True) as cur:
            if d.migration_lock is not None:
                cur.execute(d.migration_lock)
            cur.execute(
                f"CREATE TABLE IF NOT EXISTS {d.migrations_table} "
                "(version INTEGER PRIMARY KEY, applied_at DOUBLE PRECISION)"
            )
            current = int(cur.execute(f"SELECT coalesce(max(version), 0) FROM {d.migrations_table}").fetchone()[0])
            latest = d.migrations[-1][0]
            if current > latest:
                raise StoreError(
                    f"the {d.name} store has schema version {current}, newer than this contextwarden reads "
                    f"({latest}); upgrade contextwarden"
                )
            for version, statements in d.migrations:
                if version > current:
                    for statement in statements:
                        cur.execute(statement)
                    cur.execute(f"INSERT INTO {d.migrations_table} VALUES ({p}, {p})", (version, time.time()))

    def _get_info(self, cur: Cursor, session_id: str, *, lock: str = "") -> SessionInfo:
        d = self.dialect
        row = cur.execute(
            f"SELECT {_SESSION_COLUMNS} FROM {d.sessions} WHERE id = {d.param}{lock}", (session_id,)
        ).fetchone()
        if row is None:
            raise SessionNotFound(f"no session {session_id!r}")
        return _info_from_row(row)

    def _insert_session(self, cur: Cursor, info: SessionInfo) -> None:
        d, p = self.dialect, self.dialect.param
        # one statement (no read first): a taken id inserts no row
        inserted = cur.execute(
            f"INSERT INTO {d.sessions} ({_SESSION_COLUMNS}) VALUES ({', '.join([p] * 7)}) ON CONFLICT (id) DO NOTHING",
            (
                info.id,
                info.created_at,
                info.last_seq,
                info.window_start_seq,
                info.parent_session_id,
                info.fork_seq,
                sh.dumps_metadata(info.metadata),
            ),
        ).rowcount
        if inserted != 1:
            raise SessionExists(f"session {info.id!r} already exists")

    def _insert_events(self, cur: Cursor, rows: Sequence[sh.Row]) -> None:
        if not rows:
            return
        d = self.dialect
        try:
            # runs of full statements go through one executemany; a short one (the tail, or one cut by
            # the byte budget) runs alone
            statements = _statements(rows, d.rows_per_insert)
            start = 0
            while start < len(statements):
                size = len(statements[start])
                end = start
                while end < len(statements) and len(statements[end]) == size:
                    end += 1
                sql = _insert_sql(d.events, d.param, size)
                if end - start > 1:
                    cur.executemany(sql, [_flat(group) for group in statements[start:end]])
                else:
                    cur.execute(sql, _flat(statements[start]))
                start = end
        except Exception as exc:
            if self._is_duplicate_id(exc):
                duplicate = self._duplicate_id(cur, exc, rows)
                raise UsageError(f"event id {duplicate!r} is already stored; event ids must be unique") from None
            raise

    def _set_position(self, cur: Cursor, session_id: str, last_seq: int, window_start: int) -> None:
        p = self.dialect.param
        cur.execute(
            f"UPDATE {self.dialect.sessions} SET last_seq = {p}, window_start_seq = {p} WHERE id = {p}",
            (last_seq, window_start, session_id),
        )

    def _fetch(self, segment: sh.Segment, after: int) -> list[tuple[int, str]]:
        d, p = self.dialect, self.dialect.param
        with self._transaction(write=False) as cur:
            rows = cur.execute(
                f"SELECT seq, data FROM {d.events} WHERE session_id = {p} AND seq > {p} AND seq <= {p} "
                f"ORDER BY seq LIMIT {p}",
                (segment.session_id, after, segment.upto_seq, sh.PAGE_SIZE),
            ).fetchall()
        return [(int(seq), str(data)) for seq, data in rows]

    def _latest_compaction(self, cur: Cursor, segment: sh.Segment) -> str | None:
        d, p = self.dialect, self.dialect.param
        row = cur.execute(
            f"SELECT data FROM {d.events} WHERE session_id = {p} AND kind = 'compaction' "
            f"AND seq > {p} AND seq <= {p} ORDER BY seq DESC LIMIT 1",
            (segment.session_id, segment.after_seq, segment.upto_seq),
        ).fetchone()
        return None if row is None else str(row[0])


STATEMENT_BYTES = 4 * 1024 * 1024
"""Event text bound into one multi-row statement at most (a row larger than this goes alone).

The database copies every bound value; binding a whole batch of large events at once held a
second copy of all of them (a 200 MB import peaked at 3.4x its size).
"""


def _statements(rows: Sequence[sh.Row], per_statement: int) -> list[Sequence[sh.Row]]:
    """``rows`` cut, in order, into groups of at most ``per_statement`` rows and :data:`STATEMENT_BYTES`."""
    groups: list[Sequence[sh.Row]] = []
    start, size = 0, 0
    for index, row in enumerate(rows):
        length = len(row[4])
        if index > start and (index - start == per_statement or size + length > STATEMENT_BYTES):
            groups.append(rows[start:index])
            start, size = index, 0
        size += length
    groups.append(rows[start:])
    return groups


def _flat(rows: Sequence[sh.Row]) -> tuple[Any, ...]:
    return tuple(chain.from_iterable(rows))


@cache
def _insert_sql(events: str, param: str, count: int) -> str:
    """``INSERT`` of ``count`` event rows in one statement (cached: every append asks)."""
    values = ", ".join([f"({param}, {param}, {param}, {param}, {param})"] * count)
    return f"INSERT INTO {events} (session_id, seq, id, kind, data) VALUES {values}"


def _info_from_row(row: Sequence[Any]) -> SessionInfo:
    sid, created_at, last_seq, window_start, parent, fork_seq, metadata = row
    return SessionInfo(
        id=str(sid),
        created_at=float(created_at),
        last_seq=int(last_seq),
        window_start_seq=int(window_start),
        parent_session_id=None if parent is None else str(parent),
        fork_seq=int(fork_seq),
        metadata=sh.loads_metadata(str(metadata)),
    )


__all__ = ["Cursor", "Dialect", "DuplicateSeq", "SQLStore"]
