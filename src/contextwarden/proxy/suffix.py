"""Read only what is new in a request: the parsed prefix of each client's previous request is kept.

A client resends its whole history on every call, and parsing and digesting all of it is what made
the proxy's added latency grow with the session. :class:`SuffixCache` remembers, per caller and
wire format, the last few requests' message lists with their events, content digests and chain.
A request whose messages start with a remembered list up to that list's last assistant message
(the *anchor*) reuses the events, digests and chain before the anchor and parses only the messages
from the anchor on, so the per-request work is the new suffix, not the session.

Why the anchor is an assistant message: in the Anthropic format each assistant message is exactly
one :class:`~contextwarden.log.events.AssistantMessage` event, so the events before it are exactly the
events of the messages before it, and a list that starts with it has no leading instructions to
misread. A tool result parsed with the suffix whose call was made before the anchor gets its tool's
name from the reused events, as the whole-body parse would have given it.

Every request format the proxy serves takes the short cut. In Anthropic the system prompt is a body
field; in Chat it is the list's leading ``system`` / ``developer`` messages, all before the anchor,
so the remembered read's instructions are kept; OpenAI Responses has both (``instructions``, read
afresh, then the input's leading messages, kept). A Chat list whose new part holds a legacy
``function_call`` or ``function`` message (numbered across the whole list) or a tool message that
names its tool (the whole parse prefers its call's name) is parsed whole. In Responses an assistant
turn is the run of items between two items of the user side (:func:`~contextwarden.wire.openai_responses.is_user_side`:
reasoning, messages and function calls together make one event), so its anchor is the first item of the
last such run. A request that matches nothing is parsed whole. The cache holds parsed text, so it is
bounded (:data:`MAX_ENTRIES` lists per caller, :data:`MAX_CALLERS` callers).

The bytes are read the same way (:meth:`SuffixCache.load`): a body that starts with a remembered
body's bytes up to its anchor is parsed from there on only (:func:`contextwarden.wire.extend_body`),
so neither the JSON parse nor the match against the remembered list walks the history. What is
counted over the messages (assistant messages, ``cache_control`` marks, tool names by call id) is
carried from entry to entry and extended by the suffix, for the same reason.
"""

from __future__ import annotations

import json
import re
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..log.events import AssistantMessage, Event, ToolResult
from ..mirror import content_digest
from ..wire import AddressedBody, ParsedRequest, RawSpan, address_body, extend_body, get_codec
from ..wire._messages import SYSTEM_FIELD
from ..wire.openai_responses import is_user_side
from .bodyedit import count_message_marks, result_holders
from .gemini import reading_copy
from .identity import continued, history_chain

LIST_KEYS = {"anthropic": "messages", "openai_chat": "messages", "openai_responses": "input"}
"""Wire formats whose requests are parsed from the anchor on (see the module docstring), and their history list."""

LISTED_INSTRUCTIONS = frozenset({"openai_chat", "openai_responses"})
"""Formats whose system prompt includes the list's leading messages (after any body field's)."""

MAX_ENTRIES = 8
"""Message lists remembered per caller and format: its main session, side requests, subagents."""

_ITEM_PATH = re.compile(r"(messages|input)\[(\d+)(?::(\d+))?\]")
"""A span's place in the history list: one item, or a run of items (a Responses assistant turn)."""

MAX_CALLERS = 256
"""Callers (credential and format) remembered; the least recently seen is forgotten first."""


@dataclass(frozen=True)
class Read:
    """One request read: the parse, its events' content digests, and the history chain."""

    parsed: ParsedRequest
    digests: list[str]
    root: str
    chain: list[str]
    reused: int = 0
    """How many leading events came from the cache (0 when the body was parsed whole)."""
    marks: int | None = None
    """How many blocks of the messages carry ``cache_control`` (Anthropic; ``None`` for other formats)."""
    holders: Mapping[str, tuple[int, ...]] | None = None
    """Call id -> the messages holding its tool result (:func:`~.bodyedit.result_holders`; Anthropic)."""


@dataclass(frozen=True)
class _Entry:
    messages: list[Any]
    """The client's message list as JSON values (compared with ``==``, which runs in C)."""
    anchor: int
    """Index of the list's last assistant message."""
    anchor_event: int
    """Index of that message's event in ``read.parsed.events``."""
    read: Read
    names: dict[str, str]
    """Tool name by call id, of the tool calls before the anchor."""
    marks: int
    """Blocks with ``cache_control`` in the messages before the anchor."""
    holders: dict[str, tuple[int, ...]]
    """:func:`~.bodyedit.result_holders` of the messages before the anchor."""
    addressed: AddressedBody | None
    """The body's bytes with each message's place, when it was read from bytes."""


@dataclass(frozen=True)
class Loaded:
    """A request body as :func:`json.loads` reads it, and the remembered request whose bytes it extends."""

    body: Any
    """The parsed body (read-only: it shares messages with the remembered body it extends)."""
    addressed: AddressedBody | None = None
    """Where each message lies in the bytes (``None`` when the body was parsed with ``json.loads``)."""
    base: _Entry | None = None
    """The remembered request whose bytes this body starts with up to its anchor, if one was found."""


class SuffixCache:
    """Parses, digests and chains requests, reusing what an earlier request of the caller already read."""

    def __init__(self) -> None:
        """An empty cache."""
        self._callers: OrderedDict[tuple[str, str], list[_Entry]] = OrderedDict()
        self._lock = threading.Lock()

    def load(self, fmt: str, raw: bytes, caller: str) -> Loaded:
        """``raw`` parsed, from a remembered request's anchor on when it extends one (``ValueError`` if not JSON)."""
        key = LIST_KEYS.get(fmt)
        if key is not None:
            with self._lock:
                entries = sorted(self._callers.get((caller, fmt), ()), key=lambda e: -e.anchor)
            for entry in entries:
                if entry.addressed is not None:
                    extended = extend_body(raw, entry.addressed, entry.anchor)
                    if extended is not None:
                        return Loaded(body=extended.body, addressed=extended, base=entry)
            addressed = address_body(raw, key)
            if addressed is not None:
                return Loaded(body=addressed.body, addressed=addressed)
        return Loaded(body=json.loads(raw))

    def read(self, fmt: str, body: Mapping[str, Any], caller: str, *, loaded: Loaded | None = None) -> Read:
        """``body`` (a request of format ``fmt`` from ``caller``) parsed, digested and chained.

        ``loaded`` is what :meth:`load` returned for ``body``: its match against a remembered request
        is then taken as it is, and the new entry remembers its bytes.
        """
        messages = body.get(LIST_KEYS.get(fmt, ""))
        if not isinstance(messages, list):  # another format, or a Responses ``input`` string
            return _whole(fmt, body)
        key = (caller, fmt)
        with self._lock:
            entries = list(self._callers.get(key, ()))
        found = loaded.base if loaded is not None and loaded.base is not None else _longest_match(entries, messages)
        if found is not None and fmt == "openai_chat" and not _chat_tail_reads_alone(messages[found.anchor :]):
            found = None
        read = _whole(fmt, body) if found is None else _from_anchor(fmt, body, messages, found)
        entry = _entry(messages, read, found, loaded.addressed if loaded is not None else None)
        if fmt == "anthropic":  # the marks and result holders count Anthropic content blocks
            read = _with_counts(read, messages, entry)
        if entry is not None:
            with self._lock:
                kept = [e for e in self._callers.pop(key, []) if e is not found][: MAX_ENTRIES - 1]
                self._callers[key] = [entry, *kept]
                while len(self._callers) > MAX_CALLERS:
                    self._callers.popitem(last=False)
        return read


def _with_counts(read: Read, messages: list[Any], entry: _Entry | None) -> Read:
    """``read`` with its ``cache_control`` marks and tool-result holders, carried from ``entry`` when there is one."""
    if entry is None:
        return replace(read, marks=count_message_marks(messages), holders=result_holders(messages))
    rest = messages[entry.anchor :]
    return replace(
        read,
        marks=entry.marks + count_message_marks(rest),
        holders=result_holders(rest, offset=entry.anchor, into=dict(entry.holders)),
    )


def _whole(fmt: str, body: Mapping[str, Any]) -> Read:
    parsed = get_codec(fmt).parse_request(reading_copy(body) if fmt == "gemini" else body)
    root = _root(fmt, parsed)
    digests = [content_digest(e) for e in parsed.events]
    return Read(parsed=parsed, digests=digests, root=root, chain=history_chain(root, digests))


def _root(fmt: str, parsed: ParsedRequest) -> str:
    """What a session's history chain starts from: the format and the system prompt's digests."""
    return "\x00".join([fmt, *(content_digest(i) for i in parsed.instructions)])


def _longest_match(entries: Sequence[_Entry], messages: list[Any]) -> _Entry | None:
    best: _Entry | None = None
    for entry in entries:
        a = entry.anchor
        if best is not None and a <= best.anchor:
            continue
        # the anchor first (one message), then the whole prefix before it
        if len(messages) > a and messages[a] == entry.messages[a] and messages[:a] == entry.messages[:a]:
            best = entry
    return best


def _from_anchor(fmt: str, body: Mapping[str, Any], messages: list[Any], entry: _Entry) -> Read:
    def shift(span: RawSpan) -> RawSpan:
        place = _ITEM_PATH.match(span.path)
        if place is None:
            return span
        at = f"{place[1]}[{int(place[2]) + entry.anchor}" + (f":{int(place[3]) + entry.anchor}]" if place[3] else "]")
        return RawSpan(at + span.path[place.end() :], span.values)

    tail = get_codec(fmt).parse_request({**body, LIST_KEYS[fmt]: messages[entry.anchor :]})
    cached = entry.read
    cut = entry.anchor_event
    lead = len(tail.instructions)
    lead_spans = tail.spans[:lead]
    if fmt in LISTED_INSTRUCTIONS:
        # the tail starts at an assistant turn: after the body field's instructions (read afresh), the
        # list's leading messages are the cached read's
        fields = sum(i.source == SYSTEM_FIELD for i in cached.parsed.instructions)
        listed = cached.parsed.instructions[fields:]
        lead_spans = (*lead_spans, *cached.parsed.spans[fields : len(cached.parsed.instructions)])
        tail = replace(tail, instructions=(*tail.instructions, *listed))
    tail_events = [_named(e, entry.names) for e in tail.events]
    events: tuple[Event, ...] = (*cached.parsed.events[:cut], *tail_events)
    root = _root(fmt, tail)
    digests = [*cached.digests[:cut], *(content_digest(e) for e in tail_events)]
    if root == cached.root:
        chain = cached.chain[:cut]
        for item in digests[cut:]:
            chain.append(continued(root, chain, item))
    else:  # another system prompt: the same messages chain differently
        chain = history_chain(root, digests)
    # spans: the instructions', the reused events', then the tail's events at their place in the whole list
    spans = (
        (
            *lead_spans,
            *cached.parsed.spans[len(cached.parsed.instructions) :][:cut],
            *map(shift, tail.spans[lead:]),
        )
        if tail.spans
        else ()
    )
    return Read(parsed=replace(tail, events=events, spans=spans), digests=digests, root=root, chain=chain, reused=cut)


def _chat_tail_reads_alone(tail: Sequence[Any]) -> bool:
    """Whether a Chat list's part from the anchor on parses alone as it does within the whole list."""
    for message in tail:
        if not isinstance(message, Mapping):
            return False
        if "function_call" in message or message.get("role") == "function":
            return False  # legacy calls are numbered across the whole list
        if message.get("role") == "tool" and "name" in message:
            return False  # the whole parse names the result after its call, which may lie before the anchor
    return True


def _named(event: Event, names: Mapping[str, str]) -> Event:
    """A tool result whose call came before the anchor, given its tool's name as the whole parse would."""
    if isinstance(event, ToolResult) and not event.tool_name and event.call_id in names:
        return replace(event, tool_name=names[event.call_id])
    return event


def _entry(messages: list[Any], read: Read, found: _Entry | None, addressed: AddressedBody | None) -> _Entry | None:
    """What to remember of a read, or ``None`` when its list has no usable anchor.

    Only the part after ``found``'s anchor (the part the read parsed) is looked at: what comes
    before it is ``found``'s and was checked when ``found`` was remembered.
    """
    start, start_event = (found.anchor, found.anchor_event) if found is not None else (0, 0)
    starts = _turn_starts(read.parsed.format, messages, start)
    anchor = starts[-1] if starts else None
    events = read.parsed.events
    anchor_event = next(
        (i for i in range(len(events) - 1, start_event - 1, -1) if isinstance(events[i], AssistantMessage)), None
    )
    if anchor is None or anchor_event is None:
        return None
    if len(starts) != sum(isinstance(e, AssistantMessage) for e in events[start_event:]):
        return None  # turns and events do not pair one to one: no anchor to trust
    names = dict(found.names) if found is not None else {}
    for event in events[start_event:anchor_event]:
        if isinstance(event, AssistantMessage):
            names.update((c.id, c.name) for c in event.tool_calls)
    before = messages[start:anchor]
    marks = (found.marks if found is not None else 0) + count_message_marks(before)
    holders = result_holders(before, offset=start, into=dict(found.holders) if found is not None else None)
    return _Entry(
        messages=messages,
        anchor=anchor,
        anchor_event=anchor_event,
        read=read,
        names=names,
        marks=marks,
        holders=holders,
        addressed=addressed,
    )


def _turn_starts(fmt: str, messages: list[Any], start: int) -> list[int]:
    """Indices from ``start`` on where an assistant turn (one :class:`AssistantMessage` event) begins.

    An assistant message each, or in OpenAI Responses the first item of each run of assistant-side items.
    """
    if fmt != "openai_responses":
        return [i for i in range(start, len(messages)) if _is_assistant(messages[i])]
    out = []
    for i in range(start, len(messages)):
        item = messages[i]
        if not isinstance(item, Mapping):
            return []  # the parse refuses such a list; nothing to anchor on
        before = messages[i - 1] if i > start else None
        if not is_user_side(item) and (before is None or (isinstance(before, Mapping) and is_user_side(before))):
            out.append(i)
    return out


def _is_assistant(message: object) -> bool:
    return isinstance(message, Mapping) and message.get("role") == "assistant"


def last_assistant_reach(events: Sequence[Event]) -> int:
    """How many of ``events`` come up to and with the last assistant message (0: none)."""
    return next((i + 1 for i in range(len(events) - 1, -1, -1) if isinstance(events[i], AssistantMessage)), 0)
