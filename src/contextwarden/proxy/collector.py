"""Python's cyclic garbage collector, kept off the request path while the proxy serves.

CPython runs a collection whenever 700 more container objects are alive than at its last one. One
proxied request allocates that many several times over, so collections fell inside requests: about
0.5-1 ms of the 4.5-5.5 ms a 500-message request added (measured with the collector off, docs/proxy.md).
While the proxy serves, the youngest generation's threshold is raised far enough that a request
does not reach it, and the recorder thread runs the collections that are due after each answer has
been sent and filed, while the client reads it. The threshold still applies, so a process that
only passes requests through is collected as before, only less often. The objects alive when the
proxy starts (modules, tokenizer tables) are frozen: no full collection walks them again.
"""

from __future__ import annotations

import contextlib
import gc
import sys
import threading
from collections.abc import Iterator

YOUNG_THRESHOLD = 50_000
"""Net container allocations before a collection runs by itself while the proxy serves (CPython: 700)."""


_serving = 0
_restore: tuple[int, ...] = ()
_lock = threading.Lock()


@contextlib.contextmanager
def between_requests() -> Iterator[None]:
    """Raise the young threshold and freeze the startup heap while the block runs.

    Both are the process's: with several proxies in one process (tests, workers on threads) the first
    to start sets them and the last to stop restores CPython's settings.
    """
    global _serving, _restore
    with _lock:
        if not _serving:
            _restore = gc.get_threshold()
            gc.freeze()
            gc.set_threshold(YOUNG_THRESHOLD, *_restore[1:])
        _serving += 1
    try:
        yield
    finally:
        with _lock:
            _serving -= 1
            if not _serving:
                gc.set_threshold(*_restore)
                gc.unfreeze()


FULL_GROWTH = 0.25
"""Growth of the heap since the last full collection before the next one is due (CPython's own rule)."""

_heap_at_full = 0
"""The heap's size (allocated memory blocks) after the last full collection :func:`collect_due` ran."""


def collect_due() -> int:
    """Collect now the generations CPython would have collected by now; the oldest one collected.

    A full collection walks the whole heap (tens of milliseconds for a proxy's caches), so CPython runs
    one only once the objects that reached the oldest generation since the last one are a quarter of
    those it holds; ``gc.collect(2)`` skips that rule, so it is applied here, with the heap's size in
    memory blocks (``sys.getallocatedblocks``, free to read) as the measure of what is long-lived.
    """
    global _heap_at_full
    counts, thresholds = gc.get_count(), gc.get_threshold()
    generation = 0
    # an older generation is due once enough collections of the one below it have run
    while generation < 2 and counts[generation + 1] >= thresholds[generation + 1]:
        generation += 1
    if generation == 2 and sys.getallocatedblocks() < _heap_at_full * (1 + FULL_GROWTH):
        generation = 1
    gc.collect(generation)
    if generation == 2:
        _heap_at_full = sys.getallocatedblocks()
    return generation
