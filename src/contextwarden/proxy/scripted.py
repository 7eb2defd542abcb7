"""A scripted model provider on a real port, for tests and benchmarks of the proxy.

:class:`ScriptedUpstream` speaks Anthropic Messages, OpenAI Chat Completions, OpenAI Responses and
Gemini ``generateContent`` (``/v1beta/models/{model}:...``, with ``countTokens``), streamed (SSE, and
Gemini's JSON array) and not, and bills every request with the provider's prompt-cache rules through
:class:`~contextwarden.replay.costmodel.CacheSimulator` (Anthropic: reads of the longest earlier
prefix written at a ``cache_control`` breakpoint, within 20 blocks, writes for new breakpoints,
a minimum cacheable length; OpenAI and Gemini: automatic prefix reuse from the profile's minimum,
in its steps).
The usage it reports is therefore the bill a real provider would send for those bytes.

It answers from a queue of :class:`Reply` s (a text answer when the queue is empty), or from an
``agent``: a function of each request that plays the model's next move (a scripted agent driving a
real client's tools). Made ``strict``, it refuses what the real API would refuse (:mod:`._validate`)
with a 400 in the provider's error shape, and keeps the reasons in :attr:`ScriptedUpstream.refusals`.
It records every
request's raw bytes and headers, and can fail on purpose (a status and body of your choice, or a
context overflow above ``max_input_tokens``). Simulated time advances one second per request, so
cache lifetimes never expire in a test.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from ..models import ModelProfile, get_profile
from ..replay.costmodel import CacheSimulator, RequestCost
from ..tokens import TokenCounter, best_counter
from ..wire.blocks import BlockMeter
from . import _sse, _validate
from ._reply import Reply
from .modelnote import endpoint_profile


@dataclass
class Received:
    """One request as the upstream received it."""

    path: str
    headers: dict[str, str]
    body: bytes
    usage: RequestCost | None = None
    status: int = 200
    """The status it was answered with."""
    at: float = field(default_factory=time.time)
    """When it arrived (Unix time)."""


Agent = Callable[[str, dict[str, Any]], Reply]
"""Plays the model: the reply to one request body of a wire format (``anthropic``, ``openai_responses``...)."""


@dataclass
class _Account:
    simulators: dict[str, CacheSimulator] = field(default_factory=dict)


_OVERFLOW = {
    "anthropic": {"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long"}},
    "gemini": {
        "error": {
            "code": 400,
            "message": "The input token count exceeds the maximum number of tokens allowed.",
            "status": "INVALID_ARGUMENT",
        }
    },
    "openai": {
        "error": {
            "message": "context_length_exceeded",
            "type": "invalid_request_error",
            "code": "context_length_exceeded",
        }
    },
}


class ScriptedUpstream:
    """The scripted provider: ``.app`` is the ASGI app to serve."""

    def __init__(
        self,
        *,
        counter: TokenCounter | None = None,
        max_input_tokens: int | None = None,
        agent: Agent | None = None,
        strict: bool = False,
        bill_as: Mapping[str, str] | None = None,
    ) -> None:
        """Answer from :meth:`push`-ed replies, or ``agent``; refuse what a provider would.

        That is prompts over ``max_input_tokens``, and with ``strict`` anything :mod:`._validate` finds.
        ``bill_as`` maps a model name the registry does not know (a client's newest default) to the
        registered profile whose prices and cache rules bill it; a known model bills as itself.
        """
        self.bill_as = dict(bill_as or {})
        self.agent = agent
        self.strict = strict
        self.refusals: list[tuple[int, list[str]]] = []
        """Each refused request's index in :attr:`received` and the reasons it was refused."""
        self.meter = BlockMeter(counter or best_counter())
        self.max_input_tokens = max_input_tokens
        self.replies: deque[Reply] = deque()
        self.received: list[Received] = []
        self._accounts: dict[str, _Account] = {}
        self._clock = 0.0
        self._lock = threading.Lock()
        self.app = Starlette(
            routes=[
                Route("/v1/messages", self._messages, methods=["POST"]),
                Route("/v1/messages/count_tokens", self._count_tokens, methods=["POST"]),
                Route("/v1/chat/completions", self._chat, methods=["POST"]),
                Route("/v1/responses", self._responses, methods=["POST"]),
                Route("/v1/models", self._models, methods=["GET"]),
                Route("/{version}/models/{target}", self._gemini, methods=["POST"]),
                Route("/{path:path}", self._unknown, methods=["GET", "POST", "PUT", "PATCH", "DELETE"]),
            ]
        )

    def push(self, *replies: Reply) -> None:
        """Queue answers, used in order."""
        self.replies.extend(replies)

    # ------------------------------------------------------------------ routes

    async def _messages(self, request: Request) -> Response:
        return await self._answer(request, "anthropic")

    async def _chat(self, request: Request) -> Response:
        return await self._answer(request, "openai_chat")

    async def _responses(self, request: Request) -> Response:
        return await self._answer(request, "openai_responses")

    async def _gemini(self, request: Request) -> Response:
        model, _, method = str(request.path_params["target"]).rpartition(":")
        if method == "countTokens":
            raw = await request.body()
            self.received.append(Received(path=request.url.path, headers=dict(request.headers), body=raw))
            try:
                body = json.loads(raw)
                blocks, _ = self.meter.cut("gemini", body.get("generateContentRequest") or body)
            except (ValueError, AttributeError, TypeError):
                return _error("gemini", 400, "INVALID_ARGUMENT", "request body is not a countTokens request")
            return JSONResponse({"totalTokens": sum(b.tokens for b in blocks)})
        if method not in ("generateContent", "streamGenerateContent"):
            self.received.append(Received(path=request.url.path, headers=dict(request.headers), body=b""))
            return _error("gemini", 404, "NOT_FOUND", f"method {method!r} is not scripted")
        stream = "sse" if request.query_params.get("alt") == "sse" else "array"
        return await self._answer(request, "gemini", model=model, stream=stream if "stream" in method else None)

    async def _models(self, request: Request) -> Response:
        self.received.append(Received(path=request.url.path, headers=dict(request.headers), body=b""))
        return JSONResponse({"object": "list", "data": [{"id": "scripted", "object": "model"}]})

    def _profile(self, model: str, fmt: str) -> ModelProfile:
        profile = endpoint_profile(model, fmt)
        return profile if profile.known or model not in self.bill_as else get_profile(self.bill_as[model])

    def _next_reply(self, fmt: str, body: dict[str, Any]) -> Reply:
        if self.agent is not None:
            return self.agent(fmt, body)
        return self.replies.popleft() if self.replies else Reply()

    async def _unknown(self, request: Request) -> Response:
        """Anything else is recorded (to see what a client asks for) and answered 404."""
        raw = await request.body()
        self.received.append(Received(path=request.url.path, headers=dict(request.headers), body=raw, status=404))
        return _error(
            "anthropic" if request.url.path.startswith("/v1/messages") else "openai",
            404,
            "not_found_error",
            "not found",
        )

    async def _count_tokens(self, request: Request) -> Response:
        raw = await request.body()
        self.received.append(Received(path=request.url.path, headers=dict(request.headers), body=raw))
        body = json.loads(raw)
        blocks, _ = self.meter.cut("anthropic", body)
        return JSONResponse({"input_tokens": sum(b.tokens for b in blocks)})

    async def _answer(self, request: Request, fmt: str, *, model: str = "", stream: str | None = None) -> Response:
        """Answer one model call; Gemini's ``model`` and ``stream`` (``sse`` or ``array``) come from its path."""
        raw = await request.body()
        received = Received(path=request.url.path, headers=dict(request.headers), body=raw)
        self.received.append(received)
        try:
            body = json.loads(raw)
            model = model or str(body["model"])
            if fmt == "gemini" and not isinstance(body["contents"], list):
                raise TypeError("contents is not a list")
        except (ValueError, KeyError, TypeError):
            return _error(fmt, 400, "invalid_request_error", "request body is not valid JSON with a model")
        wrong = _validate.problems(fmt, body) if self.strict else []
        if wrong:
            self.refusals.append((len(self.received) - 1, wrong))
            received.status = 400
            return _error(fmt, 400, "invalid_request_error", "; ".join(wrong))
        reply = self._next_reply(fmt, body)
        if reply.status != 200:
            received.status = reply.status
            return Response(reply.error_body, status_code=reply.status, media_type="application/json")
        key = (
            request.headers.get("x-api-key")
            or request.headers.get("authorization")
            or request.headers.get("x-goog-api-key")
            or request.query_params.get("key", "")
        )
        # a caller's requests extend each other: only the new messages are cut and counted
        blocks, points = self.meter.cut(fmt, body, lane=(key, fmt, model))
        total = sum(b.tokens for b in blocks)
        if self.max_input_tokens is not None and total > self.max_input_tokens:
            family = fmt if fmt in ("anthropic", "gemini") else "openai"
            received.status = 400
            return JSONResponse(_OVERFLOW[family], status_code=400)
        with self._lock:
            self._clock += 1.0
            account = self._accounts.setdefault(key, _Account())
            simulator = account.simulators.get(f"{fmt}/{model}")
            if simulator is None:
                simulator = account.simulators[f"{fmt}/{model}"] = CacheSimulator(self._profile(model, fmt))
            cost = simulator.observe(blocks, at=self._clock, output_tokens=reply.output_tokens, breakpoints=points)
        received.usage = cost
        if stream == "array":  # Gemini streamed without ``alt=sse``: the chunks as one JSON array
            events = _sse.stream(fmt, model, reply, cost, include_usage=True)
            return JSONResponse([json.loads(event[len(b"data: ") :]) for event in events])
        if stream == "sse" or body.get("stream"):
            include_usage = fmt != "openai_chat" or bool((body.get("stream_options") or {}).get("include_usage"))
            events = _sse.stream(fmt, model, reply, cost, include_usage=include_usage)
            return StreamingResponse(_paced(events, reply.delay), media_type="text/event-stream")
        return JSONResponse(_sse.complete(fmt, model, reply, cost))


async def _paced(events: list[bytes], delay: float) -> AsyncIterator[bytes]:
    for chunk in events:
        yield chunk
        if delay:
            await anyio.sleep(delay)


def _error(fmt: str, status: int, kind: str, message: str) -> Response:
    if fmt == "gemini":
        return JSONResponse({"error": {"code": status, "message": message, "status": kind}}, status_code=status)
    if fmt == "anthropic":
        return JSONResponse({"type": "error", "error": {"type": kind, "message": message}}, status_code=status)
    return JSONResponse({"error": {"message": message, "type": kind}}, status_code=status)
