"""Sessions a proxy wrote: which events are the forwarded requests, and the client's own window events.

A proxy logs the client's history as the client sent it and, after each request, the answer it
forwarded (an assistant message that names the model that wrote it: a copy of a turn taken from a
client's request cannot say). So the requests of such a session are its answers, numbered as the
client made them. When the client rewound or edited its history, the mirror opened a new window
holding the client's copy, and the proxy carried the standing edits over to it: both are the
client's doing, not decisions a fresh manager re-derives, so a replay copies them (with the
window's bounds renumbered to the copy's seqs) and the window it rebuilds is the one forwarded.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping
from dataclasses import replace

from ..log.events import AssistantMessage, Compaction, ContextEditBatch, Event
from ..log.store import SessionStore
from ..mirror import CARRIED_EDITS, MIRROR_SUMMARIZER

PROXY_SOURCE = "proxy"
"""The ``source`` a proxy writes in the metadata of the sessions it creates."""


def is_proxied(metadata: Mapping[str, object]) -> bool:
    """Whether a session was written by a proxy."""
    return metadata.get("source") == PROXY_SOURCE


def is_request(event: Event, *, proxied: bool) -> bool:
    """Whether ``event`` is the answer to one of the session's model requests."""
    return isinstance(event, AssistantMessage) and (not proxied or bool(event.model))


def is_client_window_event(event: Event) -> bool:
    """A window event the client caused: its trim or rewind, or the edits carried over to its new copy."""
    if isinstance(event, Compaction):
        return event.summarizer == MIRROR_SUMMARIZER
    return isinstance(event, ContextEditBatch) and event.reason == CARRIED_EDITS


def copy_client_window_event(store: SessionStore, session_id: str, event: Event, seq_map: Mapping[int, int]) -> None:
    """Append a window event the replay copies to the copy, its bounds renumbered from the log's seqs."""
    last = store.get_session(session_id).last_seq
    copied = replace(event, session_id="", seq=0)
    if isinstance(copied, Compaction):
        known = sorted(seq_map)
        at = bisect_left(known, copied.first_kept_seq)
        # a trim keeps events the copy holds; a rewind starts with the events that follow it
        first = seq_map[known[at]] if at < len(known) else last + 2
        copied = replace(copied, first_kept_seq=first, covered_to_seq=min(first - 1, last))
    store.append(session_id, [copied], expected_last_seq=last)
