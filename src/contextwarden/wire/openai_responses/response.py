"""Read an OpenAI Responses response body (``output`` items, ``status`` and ``usage``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...errors import MalformedResponse
from .._response_common import assistant_response, mapping
from .._types import ParsedResponse
from ..usage import openai_responses_usage
from .request import assistant_turn


def parse_openai_responses_response(body: Mapping[str, Any]) -> ParsedResponse:
    """Parse a Responses API response (``output`` items, ``status`` and ``usage``)."""
    output = mapping(body, "response body").get("output")
    if not isinstance(output, list):
        raise MalformedResponse("OpenAI Responses body has no 'output' list")
    status = str(body.get("status") or "completed")
    incomplete = body.get("incomplete_details")
    if status == "incomplete" and isinstance(incomplete, Mapping):
        status = str(incomplete.get("reason") or status)
    return assistant_response(
        body,
        assistant_turn([mapping(raw, "output[]") for raw in output]),
        model=str(body.get("model", "")),
        reason=status,
        usage=openai_responses_usage(body.get("usage")),
    )
