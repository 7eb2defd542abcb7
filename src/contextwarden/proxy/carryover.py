"""A client's restart keeps what the model has already seen: standing edits go to the new copies.

When a client really changes its history (it rewinds, edits or clears part of it), the mirror opens
a new window holding the client's whole list as new events. Without more, every placeholder the
model had been shown would turn back into the full output on the next request: the prompt would
change early and grow. So after such a restart, each edit that stood in the old window is recorded
again, word for word, on the new copy of the same content (matched by content digest, in order),
in one :class:`~contextwarden.log.events.ContextEditBatch`. Content the client changed has no copy
and keeps no edit: the client's version is the truth.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Sequence

from ..log.events import Compaction, ContextEdit, ContextEditBatch, Event
from ..log.store import SessionStore
from ..mirror import CARRIED_EDITS, MIRRORED_KINDS, content_digest


def carried_edits(
    store: SessionStore, session_id: str, opening: Compaction, appended: Sequence[Event]
) -> ContextEditBatch | None:
    """The batch re-applying the old window's standing edits to ``appended``, or ``None`` when none carry.

    ``opening`` is the restart's window event; the old window is what came before it.
    """
    standing = _standing(store, session_id, opening.seq)
    if not standing:
        return None
    copies: dict[str, deque[str]] = defaultdict(deque)
    for event in appended:
        if event.kind in MIRRORED_KINDS:
            copies[content_digest(event)].append(event.id)
    edits = []
    for digest, edit in standing:
        targets = copies.get(digest)
        if targets:
            edits.append(
                ContextEdit(
                    target_id=targets.popleft(), action=edit.action, replacement=edit.replacement, reason=edit.reason
                )
            )
    return ContextEditBatch(edits=tuple(edits), reason=CARRIED_EDITS) if edits else None


def _standing(store: SessionStore, session_id: str, before_seq: int) -> list[tuple[str, ContextEdit]]:
    """(content digest of the target, edit) of each edit standing in the window that ends before ``before_seq``.

    The window starts at the latest compaction's first kept event; edits recorded before that no longer stand.
    """
    start = 0
    digests: dict[str, tuple[int, str]] = {}
    batches: list[ContextEditBatch] = []
    for event in store.iter_events(session_id):
        if event.seq >= before_seq:
            break
        if isinstance(event, Compaction):
            start = max(start, event.first_kept_seq)
        elif isinstance(event, ContextEditBatch):
            batches.append(event)
        elif event.kind in MIRRORED_KINDS:
            digests[event.id] = (event.seq, content_digest(event))
    return [
        (digests[e.target_id][1], e)
        for batch in batches
        if batch.seq >= start
        for e in batch.edits
        if e.target_id in digests and digests[e.target_id][0] >= start
    ]
