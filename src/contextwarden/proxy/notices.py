"""The proxy's one-line log notice of a window the client restarted.

A fall-back is logged where it happens (:mod:`.app`), with the exception that caused it; a model
planned with a stand-in profile is logged once by :mod:`.modelnote`.
"""

from __future__ import annotations

import logging

from ..mirror import MirrorResult

log = logging.getLogger("contextwarden.proxy")


def log_restart(session_id: str, mirrored: MirrorResult) -> None:
    """One line when the client's history no longer extends the log and the window starts over."""
    event = mirrored.window_event
    if event is not None:
        how = event.details.get("mirror", mirrored.outcome)
        log.info("contextwarden proxy restarted the window of %s (%s): %s", session_id, how, event.summary)
