"""The request-level fields every renderer adds the same way: model, output limit, extra settings."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import UsageError
from ..models import get_profile

OPENING_TEXT = "[conversation start]"
"""The user text sent first when a conversation would otherwise start with the assistant or be empty
(Anthropic and Gemini require the first turn to be the user's)."""


def profile_max_tokens(model: str) -> int:
    """The output limit of the model profile named ``model`` (the generic profile's for an unknown name)."""
    return get_profile(model).max_output_tokens


def finish(body: dict[str, Any], extra: Mapping[str, Any] | None, *, protected: frozenset[str]) -> dict[str, Any]:
    """Add ``extra`` settings to a rendered body; a key the renderer owns (``protected``) is an error."""
    if not extra:
        return body
    clash = sorted(set(extra) & protected)
    if clash:
        raise UsageError(f"extra settings may not set {', '.join(clash)}: the renderer writes them from the context")
    body.update(extra)
    return body
