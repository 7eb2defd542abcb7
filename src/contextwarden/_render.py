"""``render(context, format)``: one entry from a :class:`ModelContext` to a provider request body.

The entry stays the same whatever package holds the codecs; callers pick a wire format by name.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, get_args

from .context import ModelContext
from .errors import UsageError

WireFormat = Literal["openai_chat", "openai_responses", "anthropic", "gemini"]
"""The request formats :func:`render` writes."""

FORMATS: tuple[str, ...] = get_args(WireFormat)
"""Every :data:`WireFormat` name, for help texts and errors."""


def _renderers() -> dict[str, Callable[[ModelContext], dict[str, Any]]]:
    from .render import render_anthropic, render_gemini, render_openai_chat, render_openai_responses

    return {
        "openai_chat": render_openai_chat,
        "openai_responses": render_openai_responses,
        "anthropic": render_anthropic,
        "gemini": render_gemini,
    }


def render(context: ModelContext, format: WireFormat | str) -> dict[str, Any]:
    """The request body of ``context`` in ``format`` (one of :data:`FORMATS`), ready to POST."""
    renderer = _renderers().get(format)
    if renderer is None:
        raise UsageError(f"unknown wire format {format!r}; choose one of {', '.join(FORMATS)}")
    return renderer(context)
