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

from ..errors import MalformedResponse
from ..events import JSONValue
from ..wire.openai_chat import parse_openai_chat_response
from ._protocol import CallOptions, ChatMessage, ChatRequest, ChatResponse, usage_of
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
    """Render ``request`` as a Chat Completions JSON body."""
    payload: dict[str, JSONValue] = {
        "model": request.model,
        "messages": [_render_message(m) for m in request.messages],
        max_tokens_field: request.max_tokens,
        "stream": False,
    }
    if request.tools:
        payload["tools"] = [_render_tool(t) for t in request.tools]
    if request.temperature is not None:
        payload["temperature"] = request.temperature
    if request.stop:
        payload["stop"] = list(request.stop)
    if request.response_format is not None:
        payload["response_format"] = request.response_format
    if request.thinking is not None and request.thinking not in ("off", ""):
        payload["reasoning_effort"] = request.thinking
    return payload


def _render_message(message: ChatMessage) -> dict[str, JSONValue]:
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
    out: dict[str, JSONValue] = {"role": message.role, "content": message.content}
    if message.name:
        out["name"] = message.name
    if message.role == "assistant" and message.tool_calls:
        # An empty string, not null: OpenAI accepts both beside tool calls, but llama.cpp's server
        # (and other OpenAI-compatible servers validating with pydantic) reject null with a 500.
        out["content"] = message.content
        out["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": _arguments_text(call.arguments)},
            }
            for call in message.tool_calls
        ]
    return out


def _arguments_text(arguments: Mapping[str, JSONValue]) -> str:
    raw = arguments.get("_raw")
    if len(arguments) == 1 and isinstance(raw, str):
        return raw  # arguments that never parsed go back exactly as the model wrote them
    return json.dumps(arguments, ensure_ascii=False)


def _render_tool(tool: Mapping[str, JSONValue]) -> JSONValue:
    if tool.get("type") == "function" and isinstance(tool.get("function"), dict):
        return dict(tool)
    function: dict[str, JSONValue] = {"name": tool.get("name", "")}
    if tool.get("description"):
        function["description"] = tool["description"]
    schema = tool.get("parameters", tool.get("input_schema"))
    function["parameters"] = schema if schema is not None else {"type": "object", "properties": {}}
    return {"type": "function", "function": function}


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
