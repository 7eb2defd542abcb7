"""An Anthropic Messages API client.

``POST {base_url}/v1/messages``, the body rendered by the Anthropic wire codec
(:func:`contextwarden.wire.render_anthropic`: system blocks, ``tool_use`` / ``tool_result`` blocks,
calls and results paired, cache markers at the context's breakpoints). Anthropic reports uncached
input, cache writes and cache reads as three separate counts; the codec adds them up so
``input_tokens`` is the total like every other provider's.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

import httpx

from ..chat import CallOptions
from ..context import ModelContext
from ..errors import MalformedResponse
from ..log.events import AssistantMessage, JSONValue, UsageReport
from ..wire._render_args import profile_max_tokens
from ..wire.anthropic import parse_anthropic_response, render_anthropic
from ._http import HTTPProvider
from .retry import make_error

ANTHROPIC_VERSION = "2023-06-01"
"""The ``anthropic-version`` header value this client speaks."""

THINKING_BUDGETS: dict[str, int] = {"minimal": 1024, "low": 4096, "medium": 10_000, "high": 32_000}
"""Extended-thinking token budgets for each reasoning level (1,024 is the API's minimum)."""

_MIN_THINKING_BUDGET = 1024


class AnthropicProvider(HTTPProvider):
    """A :class:`~contextwarden.providers.Provider` for the Anthropic Messages API."""

    path = "/v1/messages"

    def __init__(
        self,
        api_key: str,
        base_url: str = "https://api.anthropic.com",
        *,
        timeout: float = 120.0,
        max_retries: int = 3,
        backoff_base: float = 0.5,
        backoff_max: float = 30.0,
        transport: httpx.BaseTransport | None = None,
        name: str = "anthropic",
        headers: Mapping[str, str] | None = None,
    ) -> None:
        """Create a client; ``transport`` replaces the network in tests, ``headers`` add beta flags."""
        super().__init__(
            base_url,
            headers={"x-api-key": api_key, "anthropic-version": ANTHROPIC_VERSION, **dict(headers or {})},
            timeout=timeout,
            max_retries=max_retries,
            backoff_base=backoff_base,
            backoff_max=backoff_max,
            transport=transport,
            name=name,
        )

    def render(self, context: ModelContext, options: CallOptions) -> dict[str, JSONValue]:
        """The Messages API body (see :func:`render_request`)."""
        return render_request(context, options)

    def parse(self, data: dict[str, JSONValue]) -> tuple[AssistantMessage, UsageReport | None]:
        """The answer of a Messages API body (see :func:`parse_response`)."""
        return parse_response(data, provider=self.name)


def render_request(context: ModelContext, options: CallOptions | None = None) -> dict[str, JSONValue]:
    """Render ``context`` as a Messages API JSON body, with the Anthropic wire codec."""
    options = options or CallOptions()
    max_tokens = options.max_tokens or profile_max_tokens(context.model)
    extra: dict[str, JSONValue] = {}
    if options.temperature is not None:
        extra["temperature"] = options.temperature
    if options.stop:
        extra["stop_sequences"] = list(options.stop)
    thinking = _thinking_config(options.thinking, max_tokens)
    if thinking is not None:
        extra["thinking"] = thinking
    body: dict[str, JSONValue] = render_anthropic(
        context, model=options.model or None, max_tokens=max_tokens, extra=extra
    )
    return body


def _thinking_config(level: str | None, max_tokens: int) -> JSONValue:
    if level is None or level in ("off", ""):
        return None
    # The budget must be below max_tokens; a budget under the API minimum means no room to think.
    budget = min(THINKING_BUDGETS.get(level, THINKING_BUDGETS["medium"]), max_tokens - 1)
    if budget < _MIN_THINKING_BUDGET:
        return None
    return {"type": "enabled", "budget_tokens": budget}


def parse_response(data: dict[str, JSONValue], *, provider: str) -> tuple[AssistantMessage, UsageReport | None]:
    """Read a decoded Messages API body (``MalformedResponse`` if it is not one, the classified error if an error).

    ``end_turn``, ``max_tokens`` and ``tool_use`` are the neutral stop reasons; others pass through lowercased.
    """
    if data.get("type") == "error":
        raise make_error(provider, None, json.dumps(data))
    try:
        return parse_anthropic_response(data)
    except MalformedResponse as exc:
        detail = "the response has no content list" if not isinstance(data.get("content"), list) else str(exc)
        raise MalformedResponse(f"{provider}: {detail}: {json.dumps(data)[:200]}", body=json.dumps(data)) from None
