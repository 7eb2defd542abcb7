"""The profile a proxied request is planned and priced with, and the one warning when it is a stand-in.

The model table never lists every name a client sends (a model released after it, a platform's own
spelling). Such a name gets its family's profile, or, failing that, the default profile of the
provider whose endpoint the request came in on (:func:`contextwarden.models.get_profile`), so a
request to an Anthropic or OpenAI endpoint is always planned under that provider's cache rules. The
proxy says so once per model and process in its log, counts it on ``/metrics`` and ``proxy stats``
shows it from the ledger.
"""

from __future__ import annotations

import logging
import threading
from typing import Final

from ..models import ModelProfile, Provider, get_profile

__all__ = ["ENDPOINT_PROVIDERS", "ModelNotes", "endpoint_profile", "stand_in_note"]

log = logging.getLogger("contextwarden.proxy")

ENDPOINT_PROVIDERS: Final[dict[str, Provider]] = {
    "anthropic": "anthropic",
    "openai_chat": "openai",
    "openai_responses": "openai",
    "gemini": "google",
}
"""Who serves each wire format's endpoint."""


def endpoint_profile(model: str, fmt: str) -> ModelProfile:
    """The profile for ``model`` requested on the ``fmt`` endpoint."""
    return get_profile(model, provider=ENDPOINT_PROVIDERS.get(fmt))


def stand_in_note(profile: ModelProfile) -> str:
    """One sentence saying which listed profile stands in for ``profile``'s name ("" when none does)."""
    if profile.family_match is None:
        return ""
    return (
        f"model {profile.name!r} is not in the model table: planned and priced as {profile.family_match!r} "
        f"(window {profile.context_window or 'unknown'}, {profile.cache_style} caching); "
        "add a profile (contextwarden models --profiles FILE) if its figures differ"
    )


class ModelNotes:
    """Profiles per (model, endpoint), warning once per model the first time a stand-in is used."""

    def __init__(self) -> None:
        """Start with no model seen."""
        self._warned: set[str] = set()
        self._lock = threading.Lock()

    def profile(self, model: str, fmt: str) -> ModelProfile:
        """The profile to plan ``model`` with on the ``fmt`` endpoint; log a stand-in once."""
        profile = endpoint_profile(model, fmt)
        if profile.family_match is not None:
            with self._lock:
                first = model not in self._warned
                self._warned.add(model)
            if first:
                log.warning("contextwarden proxy: %s", stand_in_note(profile))
        return profile
