"""Mirror an external history into a session log: append only what is new, idempotently.

A framework or a proxy client owns its own message list and sends the whole of it on every model
call. :func:`mirror_history` makes the session log follow that list without the caller keeping
any count of what was already stored::

    from contextwarden.mirror import mirror_history

    events = get_codec("openai-chat").parse_request(body).events  # the client's full history
    result = mirror_history(store, session_id, events)            # call it on every model call
    result.appended        # the stored copies of the events that were new (often one or two)
    result.window_event    # a window event, when the list no longer extends the log

How it matches. Each message event (instruction, user, assistant, tool result) gets a digest of
its *content* (:func:`content_digest`): never its id, seq or timestamp, and not the fields a
request cannot carry back (an assistant's ``model`` and ``stop_reason``, an exit code, an
instruction's ``source``). The log's digests are kept per store and session and extended from the
log's tail, so a 2,000-message history costs one digest per message and no re-read of the log.

The outcomes, one per call:

- **extend** (or **unchanged**): the list starts with the log's messages; the rest is appended.
  Calling twice with the same list appends nothing the second time.
- **behind**: the list is a strict prefix of the log's messages: a writer with an older copy (a
  retried request, a concurrent worker). Nothing is recorded; a real rewind shows itself on the
  next call, when the list continues differently, and is then a reset.
- **trim**: the client dropped its oldest messages (keeping, or not, its leading system
  instructions) and kept the rest unchanged. A
  :class:`~contextwarden.log.events.Compaction` with ``details["mirror"] == "trim"`` moves the window
  start to the first message the client kept (never earlier than the current window start, so a
  planner compaction is not undone); the new tail is appended after it.
- **reset**: the client edited or rewound its history. A compaction with
  ``details["mirror"] == "reset"`` opens a new window, and the client's whole list is appended
  after it, so the window is the client's history and nothing the client dropped comes back.
  The log keeps the old version; nothing is deleted.

Both window events carry a one-line note as their summary and a task-state snapshot that keeps
the original goal pinned when the client kept the message that holds it.

Concurrency: the append uses the store's compare-and-append; on :class:`ConflictError` the log's
new tail is read and the match is redone, so two writers mirroring the same list append it once.
Once a session's digests have been read, a call matches against them without reading the log first:
the compare-and-append of what is new proves nothing else was written since, and a call that would
append nothing reads the tail before it answers. Code of the same process that appends to the session
outside the mirror hands the stored events to :func:`follow_appended` (the proxy does, for each answer), so
the next call's append does not fail on them (events the chain cannot follow, after a gap, are read by
:func:`follow_to` at a moment no request waits); one that has just created the session calls
:func:`follow_created`, so its first call reads nothing either.

Only message kinds take part in matching. Events other code appends (usage reports, the planner's
window events, pins, steering) are never expected in the client's list and never cause a
divergence. A :class:`~contextwarden.log.events.UserMessage` appended directly, outside the mirrored
list, does: add user input through the history you mirror.

The parts: ``_digest`` (what a message says, as a digest), ``_chain`` (the log's digests per
session, kept from its tail), ``_match`` (:func:`mirror_history`: compare and append),
``_divergence`` (a trim or a reset as a window event) and ``_result`` (:class:`MirrorResult`).
"""

from __future__ import annotations

from ._chain import CARRIED_EDITS, MIRROR_SUMMARIZER, follow_appended, follow_created, follow_to, mirrored_events
from ._digest import MIRRORED_KINDS, content_digest
from ._match import mirror_history, unmirrored
from ._result import MirrorResult, Outcome

__all__ = [
    "CARRIED_EDITS",
    "MIRRORED_KINDS",
    "MIRROR_SUMMARIZER",
    "MirrorResult",
    "Outcome",
    "content_digest",
    "follow_appended",
    "follow_created",
    "follow_to",
    "mirror_history",
    "mirrored_events",
    "unmirrored",
]
