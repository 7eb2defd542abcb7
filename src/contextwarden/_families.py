"""Which registered profile stands in for a model name the table does not hold.

A provider ships a new model (``claude-opus-4-8``, ``gpt-5.4``, ``gemini-3.5-pro``) before any table
lists it, and platforms spell the old ones their own way (Bedrock's ``global.anthropic.…-v1:0``,
Vertex's ``…@20250101``, OpenRouter's ``anthropic/claude-sonnet-4.5``). This module reads such a name
as a family (vendor, tier, variant) and a version, and picks the registered profile of the same
family whose version is the nearest at or below it (the nearest above when there is none), so the
request gets that family's window, cache rules and prices instead of a blank profile.
:func:`contextwarden.models.get_profile` marks the result with ``family_match``; the caller says so.

Pure functions over names: the registry passes its own names in.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

__all__ = ["PROVIDER_DEFAULTS", "bare_name", "family_stand_in", "stand_in_name"]

PROVIDER_DEFAULTS: Final = {"anthropic": "claude-sonnet-4-5", "openai": "gpt-5", "google": "gemini-2.5-pro"}
"""The profile a name no family matches gets when the endpoint says who serves it: a request to an
Anthropic or OpenAI endpoint is planned under that provider's cache rules, never as uncached."""

# Bedrock cross-region prefixes (us., eu., apac., global., us-gov., …) and the vendor namespace.
_PLATFORM: Final = re.compile(r"^(?:[a-z]{2,6}(?:-[a-z]+)?\.)?(?:anthropic|openai|google|meta|amazon)\.")
# Snapshots and platform versions: -20250929, @20250929, -2025-08-06, -v1:0, :0, -preview-06-05,
# -preview-09-2025, -latest.
_TAIL: Final = re.compile(
    r"(?:[-@](?:\d{4}-\d{2}-\d{2}|\d{8}|\d{2}-\d{4}|\d{2}-\d{2}|\d{3,4}|latest|preview|exp|v\d+)|:\d+)+$"
)
# One pattern per vendor: the family key is (vendor, tier/variant), the version a tuple of ints.
_CLAUDE_NEW: Final = re.compile(r"^claude-(opus|sonnet|haiku)-(\d+)(?:[-.](\d{1,2}))?(?![\d.])")
_CLAUDE_OLD: Final = re.compile(r"^claude-(\d+)(?:[-.](\d))?-(opus|sonnet|haiku)")
_GPT: Final = re.compile(r"^gpt-(\d+)(?:\.(\d+))?((?:-[a-z]+)*)$")
_O_SERIES: Final = re.compile(r"^o(\d+)((?:-[a-z]+)*)$")
_GEMINI: Final = re.compile(r"^gemini-(\d+)(?:\.(\d+))?-(pro|flash-lite|flash)((?:-[a-z]+)*)$")
_GEMINI_EXTRAS: Final = re.compile(r"-(?:preview|exp|latest|thinking)")


def bare_name(name: str) -> str:
    """``name`` without platform prefixes, dots in Claude versions and snapshot suffixes, lowercased."""
    key = name.strip().lower()
    key = key.rsplit("/", 1)[-1]  # openrouter's vendor/, Gemini's models/, openai/…
    key = _PLATFORM.sub("", key)
    key = re.sub(r"^(claude-(?:opus|sonnet|haiku)-\d+)\.(\d)", r"\1-\2", key)  # OpenRouter's claude-opus-4.1
    key = re.sub(r"^(claude-\d+)\.(\d)", r"\1-\2", key)  # claude-3.5-sonnet
    return _TAIL.sub("", key)


def _family(name: str) -> tuple[tuple[str, str], tuple[int, ...]] | None:
    """(family key, version) of a bare name, or ``None`` when it follows no known pattern."""
    if m := _CLAUDE_NEW.match(name):
        return ("claude", m.group(1)), (int(m.group(2)), int(m.group(3) or 0))
    if m := _CLAUDE_OLD.match(name):
        return ("claude", m.group(3)), (int(m.group(1)), int(m.group(2) or 0))
    if m := _GPT.match(name):
        return ("gpt", m.group(3)), (int(m.group(1)), int(m.group(2) or 0))
    if m := _O_SERIES.match(name):
        return ("o", m.group(2)), (int(m.group(1)),)
    if m := _GEMINI.match(_GEMINI_EXTRAS.sub("", name)):
        return ("gemini", m.group(3) + m.group(4)), (int(m.group(1)), int(m.group(2) or 0))
    return None


def family_stand_in(name: str, registered: Iterable[str]) -> str | None:
    """The registered name of ``name``'s family nearest in version (at or below first), or ``None``."""
    wanted = _family(bare_name(name))
    if wanted is None:
        return None
    key, version = wanted
    below: list[tuple[tuple[int, ...], str]] = []
    above: list[tuple[tuple[int, ...], str]] = []
    for candidate in registered:
        found = _family(candidate)
        if found is None or found[0] != key:
            continue
        (below if found[1] <= version else above).append((found[1], candidate))
    if below:
        return max(below)[1]
    return min(above)[1] if above else None


def stand_in_name(requested: str, provider: str | None, registered: Iterable[str]) -> str | None:
    """The registered name to plan an unregistered ``requested`` with: its family's, else the provider's default."""
    found = family_stand_in(requested, registered)
    if found is None and provider is not None:
        found = PROVIDER_DEFAULTS.get(provider)
    return found
