"""Several proxy workers on one PostgreSQL serve the same sessions with no lost or duplicated events."""

from __future__ import annotations

import random
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import anthropic
import pytest

from contextwarden.log.events import AssistantMessage, UserMessage
from contextwarden.log.store import open_store
from contextwarden.proxy.app import Proxy
from contextwarden.proxy.scripted import ScriptedUpstream
from contextwarden.proxy.serve import BackgroundServer
from contextwarden.proxy.settings import ProxySettings

pytestmark = pytest.mark.postgres

CLIENTS = 16
TURNS = 5


def _conversation(n: int, workers: list[str], explicit: bool) -> None:
    rng = random.Random(n)
    headers = {"x-contextwarden-session": f"shared-{n}"} if explicit else {}
    clients = [
        anthropic.Anthropic(base_url=url, api_key="k", max_retries=0, default_headers=headers or None)
        for url in workers
    ]
    messages: list[Any] = []
    try:
        for turn in range(TURNS):
            messages.append({"role": "user", "content": f"client {n} turn {turn}"})
            client = rng.choice(clients)  # a load balancer: any worker may get any request
            reply = client.messages.create(model="claude-sonnet-4-5", max_tokens=8, messages=messages)
            messages.append({"role": "assistant", "content": reply.content[0].text})
    finally:
        for client in clients:
            client.close()


def test_two_workers_sixteen_clients_lose_and_duplicate_nothing(pg_schema_dsn: str) -> None:
    upstream = ScriptedUpstream()
    with BackgroundServer(upstream.app) as up:
        settings = ProxySettings(anthropic_upstream=up.url, openai_upstream=up.url, store_url=pg_schema_dsn)
        proxies = [Proxy(settings), Proxy(settings)]
        servers = [BackgroundServer(p.app).start() for p in proxies]
        try:
            with ThreadPoolExecutor(CLIENTS) as pool:
                jobs = [pool.submit(_conversation, n, [s.url for s in servers], n % 2 == 0) for n in range(CLIENTS)]
                for job in jobs:
                    job.result()
        finally:
            for server in servers:
                server.stop()
            for proxy in proxies:
                proxy.close()
    store = open_store(pg_schema_dsn)
    try:
        sessions = store.list_sessions()
        assert len(sessions) == CLIENTS
        seen = set()
        for info in sessions:
            events = store.read(info.id)
            assert [e.seq for e in events] == list(range(1, len(events) + 1))
            users = [e.text for e in events if isinstance(e, UserMessage)]
            n = int(users[0].split()[1])
            seen.add(n)
            assert users == [f"client {n} turn {t}" for t in range(TURNS)]
            assistants = [e for e in events if isinstance(e, AssistantMessage)]
            assert len(assistants) == TURNS  # each turn once: from the tee, never again from the history
            assert not [e for e in events if e.kind == "compaction"]
        assert seen == set(range(CLIENTS))
    finally:
        store.close()
