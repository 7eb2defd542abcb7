"""An OpenAI Chat Completions client for OpenAI and every server that speaks its format.

``POST {base_url}/chat/completions`` with ``messages`` (system, user, assistant with
``tool_calls``, ``tool`` results), ``tools`` and ``max_tokens``; usage is read from ``usage``
(``prompt_tokens`` counts cached tokens too, ``prompt_tokens_details.cached_tokens`` says how
many). Works with OpenAI, vLLM, llama.cpp / llama-cpp-python, Ollama's ``/v1``, LM Studio, ...
"""

from __future__ import annotations

import json
from collections.abc import Mapping

import httpx

from ..chat import CallOptions
from ..context import ModelContext
from ..errors import MalformedResponse
from ..log.events import AssistantMessage, JSONValue, UsageReport
from ..wire.openai_chat import parse_openai_chat_response, render_openai_chat
from ._http import HTTPProvider
from .retry import make_error


class OpenAICompatProvider(HTTPProvider):
    """A :class:`~contextwarden.providers.Provider` for OpenAI-compatible Chat Completions APIs."""

    path = "/chat/completions"

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
        sent = dict(headers or {})
        if api_key:
            sent["Authorization"] = f"Bearer {api_key}"
        super().__init__(
            base_url,
            headers=sent,
            timeout=timeout,
            max_retries=max_retries,
            backoff_base=backoff_base,
            backoff_max=backoff_max,
            transport=transport,
            name=name,
        )
        self.max_tokens_field = max_tokens_field

    def render(self, context: ModelContext, options: CallOptions) -> dict[str, JSONValue]:
        """The Chat Completions body (see :func:`render_request`)."""
        return render_request(context, options, max_tokens_field=self.max_tokens_field)

    def parse(self, data: dict[str, JSONValue]) -> tuple[AssistantMessage, UsageReport | None]:
        """The answer of a Chat Completions body (see :func:`parse_response`)."""
        return parse_response(data, provider=self.name)


def render_request(
    context: ModelContext, options: CallOptions | None = None, *, max_tokens_field: str = "max_tokens"
) -> dict[str, JSONValue]:
    """Render ``context`` as a Chat Completions JSON body, with the Chat wire codec."""
    options = options or CallOptions()
    extra: dict[str, JSONValue] = {"stream": False}
    if max_tokens_field != "max_completion_tokens" and options.max_tokens is not None:
        extra[max_tokens_field] = options.max_tokens  # older servers know only max_tokens
    if options.temperature is not None:
        extra["temperature"] = options.temperature
    if options.stop:
        extra["stop"] = list(options.stop)
    if options.response_format is not None:
        extra["response_format"] = options.response_format
    if options.thinking is not None and options.thinking not in ("off", ""):
        extra["reasoning_effort"] = options.thinking
    limit = options.max_tokens if max_tokens_field == "max_completion_tokens" else None
    body: dict[str, JSONValue] = render_openai_chat(context, model=options.model or None, max_tokens=limit, extra=extra)
    return body


def parse_response(data: dict[str, JSONValue], *, provider: str) -> tuple[AssistantMessage, UsageReport | None]:
    """Read a decoded Chat Completions body.

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
        return parse_openai_chat_response(data)
    except MalformedResponse as exc:
        raise MalformedResponse(f"{provider}: {exc}", body=json.dumps(data)) from None
