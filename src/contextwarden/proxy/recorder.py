"""Filing answers off the event loop: each session's turns in order, different sessions side by side.

An answer is filed once its last byte is out (:class:`Sent`), so the filing never competes with the
answer for the interpreter, and a slow client holds up only its own session's filing. Sessions are
spread over a few recorder threads by their id, one thread per session: its turns go into the log in
the order they completed. On PostgreSQL each filing is several round trips, so several threads keep
one session's wait for the network from holding up the others; on SQLite (local, a few hundred
microseconds) one thread suffices and more would only contend for the file.
"""

from __future__ import annotations

import threading
import zlib
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

RECORDER_THREADS = 4
"""Recorder threads on a PostgreSQL store (SQLite files with one)."""

SENT_WAIT_SECONDS = 60.0
"""How long :meth:`Recorder.settle` waits for answers still being sent before it settles without them."""


class Sent:
    """Set once a response's last byte is sent (or its sending ended otherwise); runs what waited for it."""

    def __init__(self) -> None:
        """Not sent yet."""
        self._lock = threading.Lock()
        self._done = False
        self._waiting: list[Callable[[], object]] = []

    def set(self) -> None:
        """The response is out: run what :meth:`then` queued, in order."""
        with self._lock:
            self._done = True
            waiting, self._waiting = self._waiting, []
        for action in waiting:
            action()

    def then(self, action: Callable[[], object]) -> None:
        """Run ``action`` once the response is out (at once if it already is)."""
        with self._lock:
            if not self._done:
                self._waiting.append(action)
                return
        action()


class Recorder:
    """``threads`` single-threaded executors; a session's jobs always go to the same one."""

    def __init__(self, threads: int) -> None:
        """Start ``threads`` recorder threads."""
        self._shards = [
            ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"contextwarden-recorder-{n}") for n in range(threads)
        ]
        self._unsent = 0
        """Jobs waiting for their answer to be sent (:meth:`after`)."""
        self._changed = threading.Condition()

    def submit(self, session_id: str, fn: Callable[..., object], *args: Any) -> Future[Any]:
        """Run ``fn(*args)`` on the thread of ``session_id``, after that session's earlier jobs."""
        shard = zlib.crc32(session_id.encode()) % len(self._shards) if len(self._shards) > 1 else 0
        return self._shards[shard].submit(fn, *args)

    def after(self, sent: Sent, session_id: str, fn: Callable[..., object], *args: Any) -> None:
        """Submit ``fn(*args)`` for ``session_id`` once ``sent`` is set; :meth:`settle` waits for it too."""
        with self._changed:
            self._unsent += 1

        def submit() -> None:
            self.submit(session_id, fn, *args)
            with self._changed:
                self._unsent -= 1
                self._changed.notify_all()

        sent.then(submit)

    def settle(self, timeout: float = SENT_WAIT_SECONDS) -> None:
        """Wait until every job submitted so far is done, those waiting for their answer's last byte too.

        An answer still being sent after ``timeout`` seconds is not waited for.
        """
        with self._changed:
            self._changed.wait_for(lambda: self._unsent == 0, timeout)
        for future in [shard.submit(lambda: None) for shard in self._shards]:
            future.result()

    def close(self) -> None:
        """Run the queued jobs, then stop the threads."""
        for shard in self._shards:
            shard.shutdown(wait=True)
