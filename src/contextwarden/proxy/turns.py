"""Answers the client already has whose turn is not yet in the log: the next request waits for them.

The assistant turn is filed after the last byte reached the client, so filing it adds nothing to the
client's wait. The client's next request of the same session must still find it in the log (else
the mirror would take the reply from the client's copy and the late filing would add it twice), so
that request waits here until the turns of its session are filed. The wait is usually nil: filing
one turn takes well under a millisecond and the client first has to read the answer and reply.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter

log = logging.getLogger("contextwarden.proxy")

WAIT_SECONDS = 30.0
"""How long a request waits for its session's pending turns before it goes on without them."""


class PendingTurns:
    """A count of unfiled turns per session, with a wait for a session's count to reach zero."""

    def __init__(self) -> None:
        """No turn pending."""
        self._count: Counter[str] = Counter()
        self._changed = threading.Condition()

    def start(self, session_id: str) -> None:
        """A turn of ``session_id`` is answered and will be filed."""
        with self._changed:
            self._count[session_id] += 1

    def done(self, session_id: str) -> None:
        """One turn of ``session_id`` is filed (or given up on)."""
        with self._changed:
            self._count[session_id] -= 1
            if self._count[session_id] <= 0:
                del self._count[session_id]
            self._changed.notify_all()

    def any_pending(self) -> bool:
        """Whether a turn of any session is still to be filed (a request could then have to wait)."""
        with self._changed:
            return bool(self._count)

    def wait(self, session_id: str, timeout: float = WAIT_SECONDS) -> bool:
        """Block until no turn of ``session_id`` is pending; ``False`` if ``timeout`` ran out first."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while self._count[session_id] > 0:
                left = deadline - time.monotonic()
                if left <= 0:
                    log.warning("contextwarden proxy went on without a pending turn of %s", session_id)
                    return False
                self._changed.wait(left)
        return True
