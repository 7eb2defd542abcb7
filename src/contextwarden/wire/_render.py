"""``render(context, format)``: one entry from a :class:`ModelContext` to a provider request body."""

from __future__ import annotations

from typing import Any

from ..context import ModelContext
from . import WireFormat, get_codec


def render(context: ModelContext, format: WireFormat | str, *, max_tokens: int | None = None) -> dict[str, Any]:
    """The complete request body of ``context`` in ``format`` (see :data:`contextwarden.wire.FORMATS`).

    ``max_tokens`` caps the answer (default: what the codec derives from the model profile). An
    unknown format is a :class:`~contextwarden.errors.UsageError` naming the known ones.
    """
    return get_codec(format).render_request(context, max_tokens=max_tokens)
