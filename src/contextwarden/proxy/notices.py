"""The proxy's one-line log notices: a window restarted by the client, an unknown model.

A fall-back is logged where it happens (:mod:`.app`), with the exception that caused it.
"""

from __future__ import annotations

import logging
import threading

from ..mirror import MirrorResult
from ..models import ModelProfile

log = logging.getLogger("contextwarden.proxy")


class Notices:
    """Logs what an operator should know about, each unknown model once per process."""

    def __init__(self) -> None:
        """Start with nothing logged."""
        self._models: set[str] = set()
        self._lock = threading.Lock()

    def mirrored(self, session_id: str, mirrored: MirrorResult) -> None:
        """One line when the client's history no longer extends the log and the window starts over."""
        event = mirrored.window_event
        if event is not None:
            how = event.details.get("mirror", mirrored.outcome)
            log.info("contextwarden proxy restarted the window of %s (%s): %s", session_id, how, event.summary)

    def profile(self, requested: str, profile: ModelProfile) -> None:
        """One line the first time a request names a model without a profile."""
        if profile.known:
            return
        with self._lock:
            if requested in self._models:
                return
            self._models.add(requested)
        window = f"a {profile.context_window:,}-token window" if profile.context_window else "a default window"
        log.warning(
            "contextwarden proxy met an unknown model %r: planning with the generic profile (%s, no prices); "
            "register a profile for it",
            requested,
            window,
        )
