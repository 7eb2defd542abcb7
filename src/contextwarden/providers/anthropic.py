"""An Anthropic Messages API client.

``POST {base_url}/v1/messages``, the body rendered by the Anthropic wire codec
(:func:`contextwarden.wire.render_anthropic`: system blocks, ``tool_use`` / ``tool_result`` blocks,
calls and results paired, a cache marker on the last system block). Anthropic
reports uncached input, cache writes and cache reads as three separate counts; :class:`Usage`
adds them up so ``input_tokens`` is the total like every other provider's.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from types import TracebackType

import httpx

from ..chat import CallOptions, ChatRequest, ChatResponse, request_context, usage_of
from ..errors import MalformedResponse
from ..log.events import JSONValue
from ..wire.anthropic import parse_anthropic_response, render_anthropic
from .retry import HttpCall, RetryPolicy, make_error, post_json, resolve_call_settings

ANTHROPIC_VERSION = "2023-06-01"
"""The ``anthropic-version`` header value this client speaks."""

THINKING_BUDGETS: dict[str, int] = {"minimal": 1024, "low": 4096, "medium": 10_000, "high": 32_000}
"""Extended-thinking token budgets for each reasoning level (1,024 is the API's minimum)."""

_MIN_THINKING_BUDGET = 1024


class AnthropicProvider:
    """A :class:`~contextwarden.providers.Provider` for the Anthropic Messages API."""

    name: str

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
        self.name = name
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.policy = RetryPolicy(max_retries=max_retries, backoff_base=backoff_base, backoff_max=backoff_max)
        self._headers = {"x-api-key": api_key, "anthropic-version": ANTHROPIC_VERSION, **dict(headers or {})}
        self._client = httpx.Client(transport=transport, timeout=timeout)

    def complete(self, request: ChatRequest, *, options: CallOptions | None = None) -> ChatResponse:
        """Send ``request`` to ``/v1/messages`` and return the parsed answer."""
        timeout, policy, cancel = resolve_call_settings(options, timeout=self.timeout, policy=self.policy)
        call = HttpCall(
            provider=self.name,
            url=f"{self.base_url}/v1/messages",
            payload=render_request(request),
            headers=self._headers,
            timeout=timeout,
            policy=policy,
            cancel=cancel,
        )
        return parse_response(post_json(self._client, call), request, provider=self.name)

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._client.close()

    def __enter__(self) -> AnthropicProvider:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


# --------------------------------------------------------------------------- request


def render_request(request: ChatRequest) -> dict[str, JSONValue]:
    """Render ``request`` as a Messages API JSON body, with the Anthropic wire codec."""
    extra: dict[str, JSONValue] = {}
    if request.temperature is not None:
        extra["temperature"] = request.temperature
    if request.stop:
        extra["stop_sequences"] = list(request.stop)
    thinking = _thinking_config(request.thinking, request.max_tokens)
    if thinking is not None:
        extra["thinking"] = thinking
    body: dict[str, JSONValue] = render_anthropic(request_context(request), max_tokens=request.max_tokens, extra=extra)
    return body


def _thinking_config(level: str | None, max_tokens: int) -> JSONValue:
    if level is None or level in ("off", ""):
        return None
    # The budget must be below max_tokens; a budget under the API minimum means no room to think.
    budget = min(THINKING_BUDGETS.get(level, THINKING_BUDGETS["medium"]), max_tokens - 1)
    if budget < _MIN_THINKING_BUDGET:
        return None
    return {"type": "enabled", "budget_tokens": budget}


# --------------------------------------------------------------------------- response


def parse_response(data: dict[str, JSONValue], request: ChatRequest, *, provider: str) -> ChatResponse:
    """Turn a decoded Messages API body into a :class:`ChatResponse` (``MalformedResponse`` if not one)."""
    if data.get("type") == "error":
        raise make_error(provider, None, json.dumps(data))
    try:
        assistant, usage = parse_anthropic_response(data)
    except MalformedResponse as exc:
        detail = "the response has no content list" if not isinstance(data.get("content"), list) else str(exc)
        raise MalformedResponse(f"{provider}: {detail}: {json.dumps(data)[:200]}", body=json.dumps(data)) from None
    return ChatResponse(
        text=assistant.text,
        tool_calls=assistant.tool_calls,
        # end_turn, max_tokens and tool_use are the neutral names; others pass through lowercased.
        stop_reason=assistant.stop_reason,
        usage=usage_of(usage),
        model=assistant.model or request.model,
        raw=data,
        thinking=assistant.thinking,
    )
