"""Match the client's list against the log's chain and do what the outcome asks."""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import ConflictError, SessionNotFound, UsageError
from ..log.events import Event, Instruction
from ..log.store._protocol import SessionStore
from ..window.policies.presets import CODING_TOOL_POLICIES, ToolPolicy
from ._chain import Chain, chains, fresh
from ._digest import MIRRORED_KINDS, content_digest
from ._divergence import record_reset, record_trim
from ._result import MirrorResult

_MAX_ATTEMPTS = 16


def mirror_history(
    store: SessionStore,
    session_id: str,
    history: Sequence[Event],
    *,
    exact: bool = False,
    digests: Sequence[str] | None = None,
    policies: Sequence[ToolPolicy] | None = None,
) -> MirrorResult:
    """Make the session's log follow ``history``, the client's full list of events, in order.

    ``exact`` says the list is the authority even when it is shorter than the log: a strict prefix
    is then a rewind (a reset), not an older copy (``behind``), and an empty list empties the
    window. Session backends that pop items use it; clients that may resend stale copies do not.
    ``digests``, when given, are the :func:`content_digest` of each event of ``history`` (a caller
    that already computed them, as the proxy does for session identity, saves the second pass).
    ``policies``: the tool policies the session is built with; a trim's or reset's task-state
    snapshot classifies tools by them (None: the coding presets, the default ``ContextPolicy``'s).

    Creates the session when it does not exist. An empty ``history`` changes nothing (unless
    ``exact``). Events of
    other kinds than :data:`MIRRORED_KINDS` in ``history`` are refused with a ``UsageError``.
    Appended events get fresh ids, so a caller may pass the same objects on every call.
    """
    if digests is None:
        digests = [content_digest(e) for e in history]
    elif len(digests) != len(history):
        raise UsageError(f"mirror_history got {len(digests)} digests for {len(history)} events")
    chain = chains.get(store, session_id)
    with chain.lock:
        # what matches the chain digests like messages the log holds (a digest covers the kind): not checked again
        _check_kinds(history[_common_prefix(chain.digests, digests) :])
        # a chain this process keeps up matches without a read first: the compare-and-append of what
        # is new proves the log had nothing more; an outcome that appends nothing is matched again after one
        unread = chain.loaded
        for _ in range(_MAX_ATTEMPTS):
            if not unread:
                chain.refresh(store)
            before = chain.last_seq
            try:
                result = _sync(store, chain, history, digests, exact=exact, policies=policies or CODING_TOOL_POLICIES)
            except (ConflictError, SessionNotFound):
                unread = False
                continue  # another writer appended first (or removed the session): read its tail and match again
            if unread and chain.last_seq == before:  # nothing appended proves nothing: read, then match
                unread = False
                continue
            return result
    raise ConflictError(session_id, chain.last_seq, store.get_session(session_id).last_seq)


def unmirrored(
    store: SessionStore, session_id: str, history: Sequence[Event], digests: Sequence[str]
) -> Sequence[Event] | None:
    """The events of ``history`` the log does not hold yet, when ``history`` extends the log; else ``None``.

    Read-only: what :func:`mirror_history` would append, without appending it (a proxy counting
    tokens for a request it is not sending). ``None`` means the list would not simply extend the
    log (behind, trimmed or rewound), so nothing can be said without recording a window event.
    """
    chain = chains.get(store, session_id)
    with chain.lock:
        chain.refresh(store)
        log = chain.digests
        if _common_prefix(log, digests) != len(log):
            return None
        return history[len(log) :]


def _sync(
    store: SessionStore,
    chain: Chain,
    history: Sequence[Event],
    digests: Sequence[str],
    *,
    exact: bool,
    policies: Sequence[ToolPolicy],
) -> MirrorResult:
    log = chain.digests
    if not history and not (exact and log):
        return MirrorResult(outcome="unchanged", last_seq=chain.last_seq)
    common = _common_prefix(log, digests)
    if common == len(log):
        new = history[common:]
        appended = chain.append(store, [fresh(e) for e in new]) if new else []
        return MirrorResult(
            outcome="extend" if new else "unchanged",
            appended=tuple(appended),
            matched=common,
            last_seq=chain.last_seq,
        )
    if common == len(digests) and not exact:
        return MirrorResult(outcome="behind", matched=common, last_seq=chain.last_seq)
    start = _trim_start(chain, digests, common)
    if start is not None:
        return record_trim(store, chain, history, lead=common, start=start, policies=policies)
    return record_reset(store, chain, history, common, policies=policies)


def _check_kinds(events: Sequence[Event]) -> None:
    for event in events:
        if event.kind not in MIRRORED_KINDS:
            raise UsageError(
                f"mirror_history takes message events ({', '.join(sorted(MIRRORED_KINDS))}), got {event.kind!r}"
            )


def _common_prefix(log: Sequence[str], client: Sequence[str]) -> int:
    n = min(len(log), len(client))
    if log[:n] == client[:n]:  # the usual case, one C-level comparison
        return n
    return next(i for i in range(n) if log[i] != client[i])


def _trim_start(chain: Chain, client: Sequence[str], lead: int) -> int | None:
    """Where the log continues unchanged in the client's list after its first ``lead`` messages.

    A trim keeps at most the leading system instructions (they live in the window's task-state
    snapshot) and then a contiguous tail of the log; anything else is an edit.
    """
    if lead >= len(client) or any(k != Instruction.kind for k in chain.kinds[:lead]):
        return None
    log, first = chain.digests, client[lead]
    for start in range(lead + 1, len(log)):
        if log[start] == first:
            kept = len(log) - start
            if kept <= len(client) - lead and log[start:] == client[lead : lead + kept]:
                return start
    return None
