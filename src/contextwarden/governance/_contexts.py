"""Built :class:`~contextwarden.context.ModelContext` objects as comparable requests.

Our own requests carry what a foreign log cannot: which event each message came from, which ones
the harness injected, their hard caps, and the window events recorded between two calls.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..context import Message, ModelContext
from ..tokens import MESSAGE_OVERHEAD, TokenCounter
from ._items import canonical_json, item_digest, text_kind
from .requests import BadLine, Request, RequestItem, RequestReader


@dataclass(frozen=True, kw_only=True)
class ContextRequestOptions:
    """What is known about a built request beyond its messages (our own sessions)."""

    injected: frozenset[str] = frozenset()
    """Ids of source events whose messages the harness injected."""
    caps: Mapping[str, int] = field(default_factory=dict)
    """Hard caps in tokens by source event id."""
    window_events: tuple[str, ...] = ()
    """Window events recorded since the previous request (their kinds)."""


def request_from_context(
    ctx: ModelContext, *, number: int, counter: TokenCounter, options: ContextRequestOptions | None = None
) -> Request:
    """A :class:`Request` for a built :class:`ModelContext`, items linked to their source events."""
    options = options or ContextRequestOptions(window_events=tuple("window event" for _ in ctx.window_event_ids))
    system: tuple[RequestItem, ...] = ()
    if ctx.system:
        system = (
            RequestItem(
                section="system",
                index=0,
                role="system",
                kind="system",
                label="system",
                text=ctx.system,
                digest=item_digest("m", ctx.system),
                tokens=counter.count(ctx.system),
            ),
        )
    tools = []
    for i, tool in enumerate(ctx.tools):
        schema = [tool.name, tool.description, tool.parameters]
        text = canonical_json(schema).decode("utf-8", "surrogatepass")
        tools.append(
            RequestItem(
                section="tools",
                index=i,
                role="schema",
                kind="tool_schema",
                label=f"tools[{i}] ({tool.name})",
                text=text,
                digest=item_digest("tool", schema),
                tokens=counter.count(text),
            )
        )
    messages = tuple(_context_item(i, m, counter, options) for i, m in enumerate(ctx.messages))
    return Request(
        number=number,
        line=0,
        format="contextwarden",
        model=ctx.model,
        system=system,
        tools=tuple(tools),
        messages=messages,
        window_events=options.window_events,
    )


def _context_item(i: int, m: Message, counter: TokenCounter, options: ContextRequestOptions) -> RequestItem:
    calls = "\n".join(f"{c.name}({canonical_json(c.arguments).decode('utf-8', 'surrogatepass')})" for c in m.tool_calls)
    text = "\n".join(t for t in (m.text, calls) if t)
    source = m.source_ids[0] if m.source_ids else ""
    kind = f"tool_output:{m.tool_name}" if m.role == "tool" else text_kind(m.role, m.text)
    if m.section in ("pinned", "summary") and not kind.startswith("fragment:"):
        kind = m.section
    label = f"messages[{i}] ({m.role}{', ' + m.tool_name if m.tool_name else ''}"
    label += f", event {source})" if source else ")"
    digest = item_digest(
        "m",
        [
            m.role,
            m.text,
            calls,
            [c.id for c in m.tool_calls],
            m.tool_call_id,
            [[b.text, b.signature] for b in m.thinking],
            [p.media_type for p in m.parts],
            [len(p.data) for p in m.parts],
        ],
    )
    return RequestItem(
        section="messages",
        index=i,
        role=m.role,
        kind=kind,
        label=label,
        text=text,
        digest=digest,
        tokens=m.tokens or (MESSAGE_OVERHEAD + counter.count(text)),
        source=source,
        injected=source in options.injected or m.section in ("pinned", "summary"),
        cap=options.caps.get(source),
        calls=m.tool_calls,
        call_id=m.tool_call_id,
    )


def iter_any_requests(
    payloads: Iterable[Mapping[str, Any] | Request | ModelContext], *, counter: TokenCounter | None = None
) -> Iterator[Request | BadLine]:
    """Requests from payload dicts, :class:`Request` objects or built :class:`ModelContext` objects, in order."""
    reader = RequestReader(counter=counter)
    for number, payload in enumerate(payloads, start=1):
        if isinstance(payload, Request):
            yield payload
        elif isinstance(payload, ModelContext):
            yield request_from_context(payload, number=number, counter=reader.counter)
        else:
            yield reader.parse(payload, line=0)
