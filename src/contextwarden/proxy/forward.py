"""Forwarding to the upstream: the client's headers as sent, the body the proxy chose, nothing stored.

Only hop-by-hop headers (RFC 9110 section 7.6.1) and ``host`` / ``content-length`` (which belong to
the new connection and the new body) are not copied. httpx's own default headers are removed again
after the request is built, so the upstream sees the client's header set, credentials included.
"""

from __future__ import annotations

import contextlib
import itertools
import json
from collections.abc import AsyncIterator, Iterable, Iterator

import httpx

from .gemini import VERSIONS as GEMINI_VERSIONS
from .settings import ProxySettings

HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
    }
)
"""Request and response headers that describe one connection, not the message."""

CREDENTIAL_HEADERS = ("x-api-key", "authorization", "api-key", "x-goog-api-key")
"""Headers that carry the caller's credential, in the order the namespace takes them from."""


def upstream_client(settings: ProxySettings) -> httpx.AsyncClient:
    """The proxy's one client for every upstream call: pooled HTTP/1.1 connections, kept alive between calls."""
    timeout = httpx.Timeout(settings.timeout, connect=30.0)
    return httpx.AsyncClient(timeout=timeout, limits=httpx.Limits(max_connections=256))


POOLS = 8
"""Connection pools the upstream calls are spread over (:func:`upstream_clients`)."""


@contextlib.asynccontextmanager
async def upstream_clients(settings: ProxySettings, pools: int = POOLS) -> AsyncIterator[Iterator[httpx.AsyncClient]]:
    """``pools`` upstream clients taken in turn (an endless iterator), closed on exit.

    httpx's pool walks every connection it holds whenever a request starts or ends, and asks each
    idle one whether the server closed it (a system call apiece, and a count of the idle ones inside
    that walk); at 50 concurrent sessions on one pool that walk took about a fifth of the proxy's
    event loop. Spread over ``pools`` clients, each walk covers an eighth of the connections.
    """
    clients = [upstream_client(settings) for _ in range(pools)]
    try:
        yield itertools.cycle(clients)
    finally:
        for client in clients:
            await client.aclose()


def forwarded_headers(headers: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """The client's headers minus hop-by-hop ones, in the client's order."""
    return [(k, v) for k, v in headers if k.lower() not in HOP_BY_HOP]


def build_request(
    client: httpx.AsyncClient, method: str, url: str, headers: list[tuple[str, str]], body: bytes
) -> httpx.Request:
    """An upstream request carrying exactly ``headers`` (plus the new ``host`` and ``content-length``)."""
    request = client.build_request(method, url, headers=headers, content=body)
    sent = {k.lower() for k, _ in headers}
    for name in list(request.headers.keys()):
        if name.lower() not in sent and name.lower() not in ("host", "content-length"):
            del request.headers[name]
    return request


def response_headers(response: httpx.Response) -> list[tuple[str, str]]:
    """The upstream's response headers for the client (framing headers are the server's own)."""
    return [(k, v) for k, v in response.headers.multi_items() if k.lower() not in HOP_BY_HOP]


def credential(headers: Iterable[tuple[str, str]]) -> str:
    """The caller's credential (empty when it sent none); used only to derive a namespace hash."""
    found = {k.lower(): v for k, v in headers}
    for name in CREDENTIAL_HEADERS:
        if found.get(name):
            return found[name]
    return ""


def error_body(fmt: str, message: str, *, kind: str, code: str | None = None, status: int = 400) -> bytes:
    """An error body in the shape the client's protocol uses (``fmt``: ``anthropic``, ``gemini`` or an OpenAI one).

    ``status`` is the HTTP status it goes with (Gemini's body repeats it, with its own status name).
    """
    error: dict[str, object]
    if fmt == "anthropic":
        error = {"type": "error", "error": {"type": kind, "message": message}}
    elif fmt == "gemini":
        name = "UNAVAILABLE" if status >= 500 else "FAILED_PRECONDITION" if code else "INVALID_ARGUMENT"
        error = {"error": {"code": status, "message": message, "status": name}}
    else:
        error = {"error": {"message": message, "type": kind, "param": None, "code": code}}
    return json.dumps(error).encode()


def format_of(path: str) -> str:
    """The wire format whose error shape suits a request on ``path`` (Anthropic's paths start ``/v1/messages``)."""
    version, _, rest = path.lstrip("/").partition("/")
    if path.startswith("/v1beta/") or (version in GEMINI_VERSIONS and rest.startswith("models/") and ":" in rest):
        return "gemini"
    return "anthropic" if path.startswith("/v1/messages") else "openai_chat"
