"""The upstream client: the client's headers and nothing of its own, no cookie kept, no redirect followed.

Each test runs a real proxy over real HTTP in front of a small real upstream that shows what reached it.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from contextwarden.proxy import Proxy, ProxySettings
from contextwarden.proxy.forward import _env_proxy_for
from contextwarden.proxy.serve import BackgroundServer


def _echo_upstream() -> Starlette:
    """Answers with the headers it received; ``/v1/login`` sets a cookie, ``/v1/moved`` redirects."""

    async def echo(request: Request) -> Response:
        return JSONResponse({"headers": [[k, v] for k, v in request.headers.items()]})

    async def login(request: Request) -> Response:
        response = JSONResponse({"ok": True})
        response.set_cookie("upstream-session", "caller-a-secret")
        return response

    async def moved(request: Request) -> Response:
        return Response(status_code=302, headers={"location": "/v1/echo"})

    async def slow(request: Request) -> Response:
        await asyncio.sleep(3)
        return JSONResponse({"late": True})

    return Starlette(
        routes=[
            Route("/v1/echo", echo, methods=["GET", "POST"]),
            Route("/v1/login", login, methods=["GET"]),
            Route("/v1/moved", moved, methods=["GET"]),
            Route("/v1/slow", slow, methods=["GET"]),
        ]
    )


@contextmanager
def _proxied(tmp_path: Path, *, timeout: float = 600.0) -> Iterator[str]:
    with BackgroundServer(_echo_upstream()) as up:
        upstream = up.url.replace("127.0.0.1", "localhost")  # a name: an HTTP client may keep cookies for it
        settings = ProxySettings(
            anthropic_upstream=upstream, openai_upstream=upstream, store_url=str(tmp_path / "s.db"), timeout=timeout
        )
        proxy = Proxy(settings)
        try:
            with BackgroundServer(proxy.app) as px:
                yield px.url
        finally:
            proxy.close()


def _raw_get(url: str, path: str, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
    """One GET with exactly ``headers`` (no client library adding its own), answer read to its end."""
    host, port = url.removeprefix("http://").split(":")
    lines = [f"GET {path} HTTP/1.1", f"host: {host}:{port}", "connection: close"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    found = {k.lower(): v for k, v in (line.split(": ", 1) for line in header_lines)}
    if found.get("transfer-encoding") == "chunked":
        whole = b""
        while True:
            size, _, rest = body.partition(b"\r\n")
            if not int(size, 16):
                break
            whole, body = whole + rest[: int(size, 16)], rest[int(size, 16) + 2 :]
        body = whole
    return int(status_line.split()[1]), found, body


def test_the_upstream_sees_only_the_clients_headers(tmp_path: Path) -> None:
    with _proxied(tmp_path) as url:
        status, _, body = _raw_get(url, "/v1/echo", {"x-api-key": "k-1"})
    assert status == 200
    seen = dict(httpx.Response(200, content=body).json()["headers"])
    # no user agent, accept, accept-encoding or content type of the proxy's own
    assert set(seen) == {"host", "x-api-key"}, seen


def test_a_cookie_one_caller_got_never_reaches_another_callers_request(tmp_path: Path) -> None:
    with _proxied(tmp_path) as url:
        with httpx.Client() as first:
            answer = first.get(url + "/v1/login", headers={"x-api-key": "caller-a"})
        assert "caller-a-secret" in answer.headers["set-cookie"]  # relayed to the caller it was for
        with httpx.Client() as second:
            seen = dict(second.get(url + "/v1/echo", headers={"x-api-key": "caller-b"}).json()["headers"])
    assert "cookie" not in seen


def test_a_redirect_is_relayed_not_followed(tmp_path: Path) -> None:
    with _proxied(tmp_path) as url:
        answer = httpx.get(url + "/v1/moved", headers={"x-api-key": "k"})
    assert answer.status_code == 302 and answer.headers["location"] == "/v1/echo"


@pytest.mark.parametrize(("timeout", "status"), [(0.5, 502), (600.0, 200)])
def test_an_upstream_slower_than_the_timeout_gets_the_client_a_502(tmp_path: Path, timeout: float, status: int) -> None:
    with _proxied(tmp_path, timeout=timeout) as url:
        answer = httpx.get(url + "/v1/slow", headers={"x-api-key": "k"}, timeout=60)
    assert answer.status_code == status
    if status == 502:
        assert "could not reach the upstream" in answer.json()["error"]["message"]


@pytest.mark.parametrize(
    ("env", "target", "expected"),
    [
        ({"HTTPS_PROXY": "http://corp:3128"}, ("https", "api.anthropic.com"), "http://corp:3128"),
        ({"HTTPS_PROXY": "http://corp:3128", "NO_PROXY": "api.anthropic.com"}, ("https", "api.anthropic.com"), None),
        ({"HTTP_PROXY": "http://corp:3128"}, ("https", "api.anthropic.com"), None),
        ({"ALL_PROXY": "http://corp:1080"}, ("https", "api.openai.com"), "http://corp:1080"),
        ({}, ("https", "api.openai.com"), None),
    ],
)
def test_the_environments_http_proxy_applies_as_for_the_sdks(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], target: tuple[str, str], expected: Any
) -> None:
    for name in ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    _env_proxy_for.cache_clear()
    try:
        assert _env_proxy_for(*target) == expected
    finally:
        _env_proxy_for.cache_clear()
