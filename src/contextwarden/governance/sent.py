"""One request as the live manager sent it: the log up to that call, window events included, built once."""

from __future__ import annotations

from dataclasses import replace

from ..assemble.buildrecord import BuildSettings, build_settings_of
from ..assemble.manager import ContextManager
from ..context import ModelContext
from ..log.events import SettingChange
from ..log.store import MemoryStore, SessionStore
from ..plan.compaction import WindowCompactor
from ..tokens import TokenCounter, best_counter
from ..window.items import ContextItem


def rebuild_as_sent(
    store: SessionStore, session_id: str, *, before_seq: int, counter: TokenCounter | None = None
) -> tuple[ModelContext, tuple[ContextItem, ...]] | None:
    """The request a live manager built for the call whose answer is at ``before_seq``, and its items.

    Everything the log holds before that seq is copied, unchanged and at the same seqs, into a
    memory store, and a fresh manager builds once with the settings of the last build record:
    the resume invariant makes that the request the live manager sent. ``None`` when no build
    record precedes the call (an imported transcript: only :func:`replay_session` can tell).
    """
    events = [e for e in store.iter_events(session_id) if e.seq < before_seq]
    recorded: BuildSettings | None = None
    for event in events:
        if isinstance(event, SettingChange):
            recorded = build_settings_of(event) or recorded
    if recorded is None:
        return None
    copy = MemoryStore()
    copy.create_session(session_id, metadata=dict(store.get_session(session_id).metadata))
    copy.append(session_id, [replace(e, session_id="", seq=0) for e in events], expected_last_seq=0)
    counter = counter or best_counter()
    manager = ContextManager(
        copy, counter=counter, policy=recorded.policy, compactor=WindowCompactor(copy, counter=counter)
    )
    ctx = manager.build(session_id, model=recorded.profile, tools=recorded.tools, policy=recorded.policy)
    return ctx, tuple(manager.projection(session_id, policy=recorded.policy).items)
