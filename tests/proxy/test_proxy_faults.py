"""The proxy under hard faults: bodies no parser survives, an upstream that is down."""

from __future__ import annotations

import logging
import socket
from pathlib import Path

import anthropic
import httpx
import openai
import pytest

from _proxy import rig
from contextwarden.proxy.app import Proxy
from contextwarden.proxy.serve import BackgroundServer
from contextwarden.proxy.settings import ProxySettings

SMALL = "claude-haiku-4-5"


def _nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


@pytest.mark.parametrize("path", ["/v1/messages", "/v1/chat/completions", "/v1/responses"])
def test_a_body_nested_too_deep_to_parse_is_forwarded_as_sent(tmp_path: Path, path: str) -> None:
    raw = b'{"model":"%s","max_tokens":16,"messages":[{"role":"user","content":"hi"}],"metadata":{"deep":%s}}' % (
        SMALL.encode(),
        _nested(5000),
    )
    with rig(str(tmp_path / "s.db")) as r:
        response = httpx.post(r.url + path, content=raw, headers={"x-api-key": "k", "authorization": "Bearer k"})
        assert r.upstream.received[-1].body == raw  # the scripted upstream cannot parse it either: its own 500
        (row,) = r.rows()
        assert (row.status, row.model) == (response.status_code, SMALL)
        assert "RecursionError" in row.note


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_an_upstream_that_is_down_gets_a_502_in_the_protocols_shape(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    down = f"http://127.0.0.1:{_closed_port()}"
    settings = ProxySettings(anthropic_upstream=down, openai_upstream=down, store_url=str(tmp_path / "s.db"))
    proxy = Proxy(settings)
    caplog.set_level(logging.WARNING)
    try:
        with BackgroundServer(proxy.app) as px:
            client = anthropic.Anthropic(base_url=px.url, api_key="k", max_retries=0)
            with client, pytest.raises(anthropic.APIStatusError) as caught:
                client.messages.create(model=SMALL, max_tokens=16, messages=[{"role": "user", "content": "hi"}])
            assert caught.value.status_code == 502
            assert caught.value.body["type"] == "error"  # type: ignore[index]
            assert down in caught.value.body["error"]["message"]  # type: ignore[index]
            oai = openai.OpenAI(base_url=px.url + "/v1", api_key="k", max_retries=0)
            with oai, pytest.raises(openai.APIStatusError) as oai_caught:
                oai.chat.completions.create(model="gpt-4.1", messages=[{"role": "user", "content": "hi"}])
            assert oai_caught.value.status_code == 502
            assert down in oai_caught.value.body["message"]  # type: ignore[index]
            other = httpx.get(px.url + "/v1/models")
            assert other.status_code == 502 and down in other.json()["error"]["message"]
            proxy.settle()
            rows = proxy.pipeline.ledger.rows()
            assert [(row.outcome, row.status) for row in rows] == [("upstream_error", 0)] * 2
    finally:
        proxy.close()
    lines = [rec for rec in caplog.records if "could not reach the upstream" in rec.getMessage()]
    assert len(lines) == 3
    assert not [rec for rec in caplog.records if rec.exc_info], "a traceback was logged"
