"""An OpenAI Chat Completions client for OpenAI and every server that speaks its format.

``POST {base_url}/chat/completions`` with ``messages`` (system, user, assistant with
``tool_calls``, ``tool`` results), ``tools`` and ``max_tokens``; usage is read from ``usage``
(``prompt_tokens`` counts cached tokens too, ``prompt_tokens_details.cached_tokens`` says how
many). Works with OpenAI, vLLM, llama.cpp / llama-cpp-python, Ollama's ``/v1``, LM Studio, ...
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from types import TracebackType

import httpx

from ..chat import CallOptions, ChatRequest, ChatResponse, request_context, usage_of
from ..errors import MalformedResponse
from ..log.events import JSONValue
from ..wire.openai_chat import parse_openai_chat_response, render_openai_chat
from .retry import HttpCall, RetryPolicy, make_error, post_json, resolve_call_settings


class OpenAICompatProvider:
    """A :class:`~contextwarden.providers.Provider` for OpenAI-compatible Chat Completions APIs."""

    name: str

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        *,
        timeout: float = 120.0,
        max_retries: int = 3,
        backoff_base: float = 0.5,
        backoff_max: float = 30.0,
        transport: httpx.BaseTransport | None = None,
        name: str = "openai-compat",
        max_tokens_field: str = "max_tokens",
        headers: Mapping[str, str] | None = None,
    ) -> None:
        """Create a client for ``base_url`` (for example ``https://api.openai.com/v1``).

        ``max_tokens_field`` is ``max_completion_tokens`` for OpenAI's reasoning models;
        ``transport`` replaces the network (``httpx.MockTransport`` in tests); ``headers`` are sent
        with every request.
        """
        self.name = name
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.policy = RetryPolicy(max_retries=max_retries, backoff_base=backoff_base, backoff_max=backoff_max)
        self.max_tokens_field = max_tokens_field
        self._headers = dict(headers or {})
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self._client = httpx.Client(transport=transport, timeout=timeout)

    def complete(self, request: ChatRequest, *, options: CallOptions | None = None) -> ChatResponse:
        """Send ``request`` to ``/chat/completions`` and return the parsed answer."""
        timeout, policy, cancel = resolve_call_settings(options, timeout=self.timeout, policy=self.policy)
        call = HttpCall(
            provider=self.name,
            url=f"{self.base_url}/chat/completions",
            payload=render_request(request, max_tokens_field=self.max_tokens_field),
            headers=self._headers,
            timeout=timeout,
            policy=policy,
            cancel=cancel,
        )
        return parse_response(post_json(self._client, call), request, provider=self.name)

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._client.close()

    def __enter__(self) -> OpenAICompatProvider:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


# --------------------------------------------------------------------------- request


def render_request(request: ChatRequest, *, max_tokens_field: str = "max_tokens") -> dict[str, JSONValue]:
    """Render ``request`` as a Chat Completions JSON body, with the Chat wire codec."""
    extra: dict[str, JSONValue] = {"stream": False}
    if max_tokens_field != "max_completion_tokens":
        extra[max_tokens_field] = request.max_tokens  # older servers know only max_tokens
    if request.temperature is not None:
        extra["temperature"] = request.temperature
    if request.stop:
        extra["stop"] = list(request.stop)
    if request.response_format is not None:
        extra["response_format"] = request.response_format
    if request.thinking is not None and request.thinking not in ("off", ""):
        extra["reasoning_effort"] = request.thinking
    limit = request.max_tokens if max_tokens_field == "max_completion_tokens" else None
    body: dict[str, JSONValue] = render_openai_chat(request_context(request), max_tokens=limit, extra=extra)
    return body


# --------------------------------------------------------------------------- response


def parse_response(data: dict[str, JSONValue], request: ChatRequest, *, provider: str) -> ChatResponse:
    """Turn a decoded Chat Completions body into a :class:`ChatResponse`.

    A 200 that carries an ``error`` object (some proxies do that) raises the classified error;
    one without ``choices`` or a ``message`` raises ``MalformedResponse``.
    """
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        if isinstance(data.get("error"), (dict, str)):
            error = data["error"]
            code = error.get("code") if isinstance(error, dict) else None
            status = code if isinstance(code, int) and 400 <= code <= 599 else None
            raise make_error(provider, status, json.dumps(data))
        raise MalformedResponse(
            f"{provider}: the response has no choices: {json.dumps(data)[:200]}", body=json.dumps(data)
        )
    choice = choices[0]
    message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(choice, dict) or not isinstance(message, dict):
        raise MalformedResponse(f"{provider}: the first choice has no message", body=json.dumps(data))
    try:
        assistant, usage = parse_openai_chat_response(data)
    except MalformedResponse as exc:
        raise MalformedResponse(f"{provider}: {exc}", body=json.dumps(data)) from None
    return ChatResponse(
        text=assistant.text,
        tool_calls=assistant.tool_calls,
        stop_reason=assistant.stop_reason,
        usage=usage_of(usage),
        model=assistant.model or request.model,
        raw=data,
        thinking=assistant.thinking,
    )
