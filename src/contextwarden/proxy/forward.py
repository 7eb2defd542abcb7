"""Forwarding to the upstream: the client's headers as sent, the body the proxy chose, nothing stored.

Only hop-by-hop headers (RFC 9110 section 7.6.1) and ``host`` / ``content-length`` (which belong to
the new connection and the new body) are not copied. The HTTP client adds none of its own (no
user agent, accept or content type of its own, no compression the client did not ask for), keeps no
cookies between callers, and follows no redirect, so the upstream sees the client's header set,
credentials included, and the client sees the upstream's answer, bytes as they came.

The client is aiohttp's: at 50 concurrent streamed sessions it spent about a fifth of the CPU per
call httpx did (0.14 against 0.69 ms, measured side by side against the scripted upstream), and the
upstream calls were the largest part of the proxy's event loop (``docs/benchmarks.md``, "Proxy under
load").
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import urllib.request
from collections.abc import AsyncIterator, Iterable

import aiohttp
from multidict import CIMultiDictProxy
from yarl import URL

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


TRANSPORT_ERRORS = (aiohttp.ClientError, asyncio.TimeoutError)
"""What reaching the upstream, or reading its answer, can raise."""

KEEPALIVE_SECONDS = 4.0
"""How long an idle upstream connection is kept: under the 5 s after which common servers close theirs
(uvicorn's default), so a request never goes out on a connection the server has just closed."""


@contextlib.asynccontextmanager
async def upstream_session(settings: ProxySettings) -> AsyncIterator[aiohttp.ClientSession]:
    """The proxy's one client for every upstream call (pooled HTTP/1.1 connections), closed on exit."""
    # a wait for a free connection, a connection, each read: none longer than ``settings.timeout``
    timeout = aiohttp.ClientTimeout(total=None, connect=settings.timeout, sock_connect=30.0, sock_read=settings.timeout)
    connector = aiohttp.TCPConnector(limit=256, keepalive_timeout=KEEPALIVE_SECONDS)
    session = aiohttp.ClientSession(
        connector=connector,
        timeout=timeout,
        auto_decompress=False,  # the client gets the bytes the upstream sent, encoded as they were
        cookie_jar=aiohttp.DummyCookieJar(),  # one caller's cookies never reach another's request
        skip_auto_headers=("User-Agent", "Accept", "Accept-Encoding", "Content-Type"),
    )
    try:
        yield session
    finally:
        await session.close()


class Upstream:
    """The upstream's answer as it arrives: status, headers as received, the body's raw chunks."""

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self._response = response
        self.status_code = response.status
        self.headers: CIMultiDictProxy[str] = response.headers

    async def aiter_raw(self) -> AsyncIterator[bytes]:
        """The body's bytes as they arrive (de-chunked, never decoded)."""
        async for chunk in self._response.content.iter_any():
            yield chunk

    async def aclose(self) -> None:
        """Give the connection back for reuse (a body read to its end) or close it (one cut short)."""
        if self._response.content.at_eof():
            self._response.release()
        else:
            self._response.close()

    def client_headers(self) -> list[tuple[str, str]]:
        """The response headers for the client (framing headers are the proxy's own server's)."""
        raw = ((k.decode("latin-1"), v.decode("latin-1")) for k, v in self._response.raw_headers)
        return [(k, v) for k, v in raw if k.lower() not in HOP_BY_HOP]


async def send(
    session: aiohttp.ClientSession, method: str, url: str, headers: list[tuple[str, str]], body: bytes
) -> Upstream:
    """Send one request carrying exactly ``headers`` (plus the new ``host`` and ``content-length``)."""
    target = URL(url, encoded=True)
    proxy = _env_proxy_for(target.scheme, target.host or "")
    response = await session.request(
        method, target, headers=headers, data=body or None, allow_redirects=False, proxy=proxy
    )
    return Upstream(response)


@functools.lru_cache(maxsize=64)
def _env_proxy_for(scheme: str, host: str) -> str | None:
    """The HTTP proxy the environment names for ``scheme://host``, read once per upstream, not on every call.

    ``HTTPS_PROXY``, ``HTTP_PROXY`` or ``ALL_PROXY``, unless ``NO_PROXY`` excludes the host: as the SDKs
    honour them.
    """
    if urllib.request.proxy_bypass(host):
        return None
    found = urllib.request.getproxies()
    return found.get(scheme) or found.get("all")


def forwarded_headers(headers: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """The client's headers minus hop-by-hop ones, in the client's order."""
    return [(k, v) for k, v in headers if k.lower() not in HOP_BY_HOP]


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
