"""Read an Anthropic Messages response body (``content`` blocks, ``stop_reason`` and ``usage``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...errors import MalformedResponse
from .._response_common import assistant_response, mapping
from .._types import ParsedResponse
from ..usage import anthropic_usage
from .request import assistant_content


def parse_anthropic_response(body: Mapping[str, Any]) -> ParsedResponse:
    """Parse a Messages API response (``content`` blocks, ``stop_reason`` and ``usage``)."""
    content = mapping(body, "response body").get("content")
    if not isinstance(content, list):
        raise MalformedResponse("Anthropic body has no 'content' list")
    return assistant_response(
        body,
        assistant_content([mapping(raw, "content[]") for raw in content]),
        model=str(body.get("model", "")),
        reason=str(body.get("stop_reason") or ""),
        usage=anthropic_usage(body.get("usage")),
    )
