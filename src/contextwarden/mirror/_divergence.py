"""When the client's list no longer extends the log: record a trim or a reset as a window event.

Both open the window where the client's copy now starts, with a one-line note as the summary and
a task-state snapshot that keeps the original goal pinned when the client kept the message that
holds it. Nothing is deleted: the log keeps every version the client sent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ..log.events import Compaction, Event, Instruction, JSONValue
from ..log.store._protocol import SessionStore
from ..window.policies.presets import ToolPolicy
from ..window.state import TaskState, derive_state
from ._chain import MIRROR_SUMMARIZER, Chain, fresh
from ._result import MirrorResult


def record_trim(
    store: SessionStore,
    chain: Chain,
    history: Sequence[Event],
    *,
    lead: int,
    start: int,
    policies: Sequence[ToolPolicy],
) -> MirrorResult:
    """The client kept its first ``lead`` messages and the log's tail from chain position ``start``."""
    info = store.get_session(chain.session_id)
    cut = chain.seqs[start]
    matched = lead + len(chain.digests) - start
    new = [fresh(e) for e in history[matched:]]
    window_event: Compaction | None = None
    batch: list[Event] = list(new)
    if cut > info.window_start_seq:
        window = store.read_window(chain.session_id)
        # the system the window opens with is exactly the instructions the client kept
        kept_system = tuple(e.text for e in history[:lead] if isinstance(e, Instruction))
        state = replace(_state_before(window, cut, policies), system=kept_system)
        note = (
            f"The client dropped {start - lead} of its oldest messages (log events up to {cut - 1}); "
            "the session log keeps them."
        )
        details: dict[str, JSONValue] = {"mirror": "trim", "from_seq": cut, "kept_leading": lead}
        window_event = _window_event(note, first_kept_seq=cut, covered_to=cut - 1, state=state, details=details)
        batch.insert(0, window_event)
    stored = chain.append(store, batch)
    event = stored[0] if window_event is not None else None
    return MirrorResult(
        outcome="trim",
        appended=tuple(stored[1:] if event is not None else stored),
        window_event=event if isinstance(event, Compaction) else None,
        matched=matched,
        last_seq=chain.last_seq,
    )


def record_reset(
    store: SessionStore, chain: Chain, history: Sequence[Event], common: int, *, policies: Sequence[ToolPolicy]
) -> MirrorResult:
    """The client's list diverges from the log at message ``common``: a new window holds all of it."""
    window = store.read_window(chain.session_id)
    kept_ids = set(chain.event_ids[:common])
    state = _state_before(window, chain.last_seq + 1, policies)
    # Keep the goal pinned only when the client still holds the message it came from.
    if state.goal_event_id and state.goal_event_id in kept_ids:
        anchors = TaskState(
            goal=state.goal,
            goal_event_id=state.goal_event_id,
            constraints=state.constraints,
            latest_steering=state.latest_steering,
        )
    else:
        anchors = TaskState()
    compacted = any(p.kind == "compaction" for e in history for p in getattr(e, "opaque", ()))
    cause = "it compacted it (a provider compaction item)" if compacted else "it edited, trimmed or rewound it"
    note = (
        f"The client changed its history at message {common + 1} ({cause}); "
        "this window starts over from the client's copy. The earlier version stays in the session log."
    )
    details: dict[str, JSONValue] = {"mirror": "reset", "from_seq": chain.last_seq + 2, "diverged_at": common}
    if compacted:  # the client's own compaction (Codex's remote one): it already filtered what it kept
        details["client_compaction"] = True
    opening = _window_event(
        note, first_kept_seq=chain.last_seq + 2, covered_to=chain.last_seq, state=anchors, details=details
    )
    stored = chain.append(store, [opening, *(fresh(e) for e in history)])
    event = stored[0]
    return MirrorResult(
        outcome="reset",
        appended=tuple(stored[1:]),
        window_event=event if isinstance(event, Compaction) else None,
        matched=0,
        last_seq=chain.last_seq,
    )


def _state_before(window: Sequence[Event], seq: int, policies: Sequence[ToolPolicy]) -> TaskState:
    """The task state of the window's events before ``seq``, from the window's own snapshot on."""
    opening = next((e for e in reversed(window) if isinstance(e, Compaction)), None)
    base = TaskState.from_dict(opening.state) if opening is not None else None
    events = (e for e in window if e.seq < seq and not isinstance(e, Compaction))
    return derive_state(events, base=base, policies=policies)


def _window_event(
    note: str, *, first_kept_seq: int, covered_to: int, state: TaskState, details: dict[str, JSONValue]
) -> Compaction:
    return Compaction(
        summary=note,
        first_kept_seq=first_kept_seq,
        covered_to_seq=covered_to,
        summarizer=MIRROR_SUMMARIZER,
        state=state.to_dict(),
        details=details,
    )
