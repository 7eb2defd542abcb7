"""Helpers for the proxy tests: a scripted upstream and a proxy in front of it, both on real ports."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anthropic
import openai

from contextwarden.proxy.app import Proxy
from contextwarden.proxy.scripted import ScriptedUpstream
from contextwarden.proxy.serve import BackgroundServer
from contextwarden.proxy.settings import ProxySettings


@dataclasses.dataclass
class Rig:
    """A running upstream and proxy."""

    upstream: ScriptedUpstream
    upstream_url: str
    proxy: Proxy
    url: str
    clients: list[Any] = dataclasses.field(default_factory=list)

    def rows(self) -> list[Any]:
        """The proxy's ledger rows, once every queued one is written."""
        self.proxy.settle()
        return self.proxy.pipeline.ledger.rows()

    def anthropic(self, key: str = "key-a", **headers: str) -> anthropic.Anthropic:
        """An official Anthropic client pointed at the proxy (closed with the rig)."""
        client = anthropic.Anthropic(base_url=self.url, api_key=key, max_retries=0, default_headers=headers or None)
        self.clients.append(client)
        return client

    def openai(self, key: str = "sk-test") -> openai.OpenAI:
        """An official OpenAI client pointed at the proxy (closed with the rig)."""
        client = openai.OpenAI(base_url=self.url + "/v1", api_key=key, max_retries=0)
        self.clients.append(client)
        return client

    def gemini(self, key: str = "gemini-key") -> Any:
        """An official google-genai client pointed at the proxy (closed with the rig)."""
        from google import genai
        from google.genai import types

        client = genai.Client(api_key=key, http_options=types.HttpOptions(base_url=self.url))
        self.clients.append(client)
        return client

    def forwarded(self, path: str = "") -> list[dict[str, Any]]:
        """The JSON bodies the upstream received (on ``path`` when given)."""
        return [json.loads(r.body) for r in self.upstream.received if r.body and (not path or r.path == path)]


@contextmanager
def rig(
    store_url: str,
    *,
    mode: str = "manage",
    upstream: ScriptedUpstream | None = None,
    store: Any = None,
    policy: str | None = None,
    spend_limit: int | None = None,
    admin_token: str | None = None,
    salt: str | None = None,
) -> Iterator[Rig]:
    """An upstream and a proxy forwarding to it, storing in ``store_url`` (or in ``store``).

    ``policy``, ``spend_limit`` and ``admin_token`` are the proxy's ``--policy``, ``--spend-limit``
    and ``--admin-token``; ``salt`` its ``CONTEXTWARDEN_PROXY_SALT``.
    """
    upstream = upstream or ScriptedUpstream()
    with BackgroundServer(upstream.app) as up:
        settings = ProxySettings(
            mode=mode,  # type: ignore[arg-type]
            anthropic_upstream=up.url,
            openai_upstream=up.url,
            gemini_upstream=up.url,
            store_url=store_url,
            policy=policy,
            spend_limit=spend_limit,
            admin_token=admin_token,
            salt=salt,
        )
        proxy = Proxy(settings, store=store)
        try:
            with BackgroundServer(proxy.app) as px:
                r = Rig(upstream=upstream, upstream_url=up.url, proxy=proxy, url=px.url)
                try:
                    yield r
                finally:
                    for client in r.clients:
                        client.close()
        finally:
            proxy.close()


def without_cache_control(value: Any) -> Any:
    """``value`` with every ``cache_control`` key removed (a breakpoint moves; the content does not)."""
    if isinstance(value, dict):
        return {k: without_cache_control(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [without_cache_control(v) for v in value]
    return value


def normalized_messages(body: dict[str, Any]) -> list[Any]:
    """An Anthropic body's messages as the cache sees them: no breakpoints, string content as one text block."""
    out = []
    for message in without_cache_control(body["messages"]):
        content = message["content"]
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        out.append({**message, "content": content})
    return out
