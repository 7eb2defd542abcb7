"""``contextwarden demo --proxy``: a real session through the proxy, offline, with its ledger.

The bundled scripted upstream (:mod:`.scripted`, billing with the provider's prompt-cache rules)
stands in for the provider; the proxy runs in front of it on a local port; the official Anthropic
SDK plays a real transcript through the proxy as an agent does: it resends the whole history on
every call, marks the last block for the cache (as Claude Code does), and the upstream answers
each call with the transcript's own next assistant message. What the ledger then shows is what
the proxy did to that session: tokens forwarded against tokens sent, billed cost against direct.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._extras import require
from ..importers import load_transcript
from ..log.events import AssistantMessage, Event, Instruction
from ..tokens import best_counter
from ..wire import ParsedRequest, WireFormat, get_codec
from ._reply import Reply
from .app import Proxy
from .identity import EXPLICIT_HEADER
from .scripted import ScriptedUpstream
from .serve import BackgroundServer
from .settings import ProxySettings

DEMO_KEY = "demo-key"
"""The API key the demo's client sends (the scripted upstream accepts any; the live page asks for it)."""
MAX_TOKENS = 1024
"""``max_tokens`` of every demo request."""


def conversation(events: list[Event], model: str, *, fmt: WireFormat = "anthropic") -> tuple[Any, list[dict[str, Any]]]:
    """A transcript as one ``fmt`` request body's ``system`` (Anthropic) and ``messages`` (thinking left out).

    The scripted upstream answers with one reasoning block at most, so the history carries none.
    """
    kept = [
        AssistantMessage(text=e.text, tool_calls=e.tool_calls, id=e.id) if isinstance(e, AssistantMessage) else e
        for e in events
        if e.kind in ("instruction", "user", "assistant", "tool_result")
    ]
    lead = 0
    while lead < len(kept) and isinstance(kept[lead], Instruction):
        lead += 1
    instructions = tuple(e for e in kept[:lead] if isinstance(e, Instruction))
    parsed = ParsedRequest(format=fmt, model=model, instructions=instructions, events=tuple(kept[lead:]))
    body = get_codec(fmt).render_request(parsed.to_context(), model=model, max_tokens=MAX_TOKENS)
    return body.get("system"), list(body["messages"])


def reply_of(message: dict[str, Any], count: Callable[[str], int], *, fmt: WireFormat = "anthropic") -> Reply:
    """The scripted upstream's answer that says exactly what the transcript's assistant ``message`` said."""
    if fmt == "anthropic":
        content = message["content"]
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        text = "\n".join(b["text"] for b in blocks if b["type"] == "text")
        calls = tuple((b["id"], b["name"], b["input"]) for b in blocks if b["type"] == "tool_use")
    else:  # OpenAI Chat
        text = message.get("content") or ""
        calls = tuple(
            (c["id"], c["function"]["name"], json.loads(c["function"]["arguments"] or "{}"))
            for c in message.get("tool_calls") or ()
        )
    return Reply(text=text, tool_calls=calls, output_tokens=max(1, count(json.dumps(message))))


def with_cached_tail(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A copy of Anthropic ``messages`` whose last block carries ``cache_control``, as Claude Code sends it."""
    out: list[dict[str, Any]] = json.loads(json.dumps(messages))
    last = out[-1]
    if isinstance(last["content"], str):
        last["content"] = [{"type": "text", "text": last["content"]}]
    last["content"][-1]["cache_control"] = {"type": "ephemeral"}
    return out


@dataclass(frozen=True)
class Running:
    """The scripted upstream and the proxy in front of it."""

    upstream: ScriptedUpstream
    proxy: Proxy
    url: str
    """The proxy's base URL."""


@contextmanager
def running(store_url: str | None, *, port: int = 0) -> Iterator[Running]:
    """The scripted upstream and a proxy in front of it, both on local ports, until the block ends."""
    upstream = ScriptedUpstream()
    with BackgroundServer(upstream.app) as up:
        settings = ProxySettings(anthropic_upstream=up.url, openai_upstream=up.url, store_url=store_url)
        proxy = Proxy(settings)
        try:
            with BackgroundServer(proxy.app, port=port) as px:
                yield Running(upstream=upstream, proxy=proxy, url=px.url)
        finally:
            proxy.close()


def play(rig: Running, transcript: Path, *, model: str, advance: Callable[[int], None] | None = None) -> str:
    """Play ``transcript`` through the proxy with the Anthropic SDK; return the proxy's session id."""
    require("proxy", "anthropic")
    import anthropic

    upstream, proxy, url = rig.upstream, rig.proxy, rig.url
    system, messages = conversation(list(load_transcript(transcript).events), model)
    counter = best_counter()
    # a session of its own on every run, even on a store an earlier run filled with the same history
    run = {EXPLICIT_HEADER: f"demo-{uuid.uuid4().hex[:12]}"}
    with anthropic.Anthropic(base_url=url, api_key=DEMO_KEY, max_retries=0, default_headers=run) as client:
        for i, message in enumerate(messages):
            if message["role"] != "assistant" or i == 0:
                continue
            upstream.push(reply_of(message, counter.count))
            kwargs: dict[str, Any] = {"system": system} if system else {}
            sent: Any = with_cached_tail(messages[:i])  # Anthropic message dicts, as a client sends them
            client.messages.create(model=model, max_tokens=MAX_TOKENS, messages=sent, **kwargs)
            if advance is not None:
                advance(1)
    proxy.settle()
    viewer = proxy.access.viewer([("authorization", f"Bearer {DEMO_KEY}")])
    mine = [row.session_id for row in proxy.pipeline.ledger.rows() if viewer.sees(row.session_id)]
    return mine[-1] if mine else ""


def requests_in(transcript: Path) -> int:
    """How many model calls playing ``transcript`` makes."""
    return sum(isinstance(e, AssistantMessage) for e in load_transcript(transcript).events)
