"""A small pool of PostgreSQL connections shared by threads.

Each statement or transaction takes a connection of its own, so concurrent callers wait for each
other's round trips only when every connection is busy. Connections open as they are needed, up to
the pool's size. A connection a server restart broke is never handed out again: the first caller to
find one broken makes the pool drop every connection opened before it (they went down with the same
server), so a restart costs one failed statement, not one per pooled connection.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any

from ...errors import StoreError, UsageError


class ConnectionPool:
    """Up to ``size`` connections made by ``connect``, lent one per caller (re-entrant within a thread)."""

    def __init__(self, connect: Callable[[], Any], *, size: int) -> None:
        """Lend at most ``size`` connections; ``connect()`` opens one (its errors reach the caller)."""
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise UsageError(f"a connection pool needs at least one connection, got {size!r}")
        self.size = size
        self._connect = connect
        self._cond = threading.Condition()
        self._idle: list[tuple[int, Any]] = []
        self._open = 0
        self._generation = 0
        """Raised when a broken connection is found: connections of earlier generations are dropped."""
        self._closed = False
        self._held = threading.local()

    @property
    def opened(self) -> int:
        """Connections open now (lent or idle)."""
        with self._cond:
            return self._open

    @contextmanager
    def connection(self) -> Iterator[Any]:
        """A connection for the caller's statements; a nested call in the same thread gets the same one."""
        held = getattr(self._held, "conn", None)
        if held is not None:
            yield held
            return
        generation, conn = self._take()
        self._held.conn = conn
        try:
            yield conn
        finally:
            self._held.conn = None
            self._give(generation, conn)

    def _take(self) -> tuple[int, Any]:
        with self._cond:
            while True:
                if self._closed:
                    raise StoreError("the PostgreSQL store is closed")
                if self._idle:
                    return self._idle.pop()
                if self._open < self.size:
                    self._open += 1
                    generation = self._generation
                    break
                self._cond.wait()
        try:
            return generation, self._connect()
        except BaseException:
            with self._cond:
                self._open -= 1
                self._cond.notify()
            raise

    def _give(self, generation: int, conn: Any) -> None:
        with self._cond:
            if conn.broken or conn.closed:
                # the server went away: every connection opened before now went with it
                self._generation += 1
                drop = [conn] + [old for _, old in self._idle]
                self._idle = []
            elif self._closed or generation < self._generation:
                drop = [conn]
            else:
                self._idle.append((generation, conn))
                self._cond.notify()
                return
            self._open -= len(drop)
            self._cond.notify_all()
        for old in drop:
            _close(old)

    def close(self) -> None:
        """Close the idle connections now and the lent ones when they come back; lend no more."""
        with self._cond:
            self._closed = True
            for _, conn in self._idle:
                _close(conn)
            self._open -= len(self._idle)
            self._idle = []
            self._cond.notify_all()


def _close(conn: Any) -> None:
    with suppress(Exception):
        conn.close()
