"""The manager's cache of windows: one up-to-date projection per session and policy value.

A window is projected from the store once, then caught up with only the events appended since
(a compaction among them re-opens it). Builds of one session take the session's lock, so they run
one at a time; builds of different sessions never wait for each other.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..context import Decision
from ..errors import CodecError
from ..log.events import Compaction, Event, SettingChange, ToolResult
from ..log.store._protocol import SessionStore
from ..plan.credit import Credit
from ..plan.policy import ContextPolicy
from ..tokens import TokenCounter
from ..window.checkpoint import FragmentMemo
from ..window.ingest import EarlierOutput
from ..window.opening import compaction_blocks, latest_compaction
from ..window.projection import Projection, ProjectionConfig
from .buildrecord import BUILD_KEY, BuildSettings, build_settings_of
from .checkpoints import CHECKPOINT_EVERY, checkpoint_key, load_checkpoint, save_checkpoint

__all__ = ["CachedWindow", "WindowCache", "project"]


@dataclass
class CachedWindow:
    """One session's window under one policy (its projection, kept up to date), and what its builds recorded."""

    projection: Projection
    recorded: BuildSettings | None = None
    """The build settings last recorded in the log (a build records only a change)."""
    recorded_event: SettingChange | None = None
    """The event that recorded them (a checkpoint keeps it)."""
    checkpoint_seq: int = 0
    """The last seq the stored checkpoint of this window covers (0: none known)."""
    memo: FragmentMemo = field(default_factory=FragmentMemo)
    """The text of the parts the last checkpoint saved, so the next save encodes only new ones."""
    reported: set[Decision] = field(default_factory=set)
    """Decisions already returned by a build, so each build returns only its own."""
    credit: Credit = field(default_factory=Credit)
    """What the window saved against the raw history so far (what a voluntary batch may risk)."""


def projection_config(
    policy: ContextPolicy, counter: TokenCounter, *, earlier_output: EarlierOutput | None = None
) -> ProjectionConfig:
    """How ``policy`` projects events (``earlier_output`` reads the session's logged outputs back)."""
    return ProjectionConfig(
        counter=counter,
        tool_policies=policy.tool_policies,
        max_item_tokens=policy.max_item_tokens,
        retrieval=policy.recall_tool or policy.retrieval_tools,
        client_window_notes=policy.client_window_notes,
        earlier_output=earlier_output,
    )


def logged_output(store: SessionStore, session_id: str) -> EarlierOutput:
    """Reads the output of the session's tool result at a seq from ``store`` (one event read)."""

    def read(seq: int) -> str | None:
        event = next(iter(store.iter_events(session_id, since_seq=max(seq - 1, 0))), None)
        return event.output if isinstance(event, ToolResult) and event.seq == seq else None

    return read


def project(events: Sequence[Event], config: ProjectionConfig) -> Projection:
    """The projection of a window's events (they start at its compaction, if any)."""
    compaction = latest_compaction(events)
    projection = Projection(config, compaction=compaction)
    # a mirrored trim or rewind records ``details["mirror"]``: the client's own window, not a summary
    if compaction is not None and (config.client_window_notes or "mirror" not in compaction.details):
        projection.add_blocks(compaction_blocks(compaction, config.counter))
    for event in events:
        if isinstance(event, Compaction):
            projection.last_seq = max(projection.last_seq, event.seq)
            continue
        projection.add(event)
    return projection


class WindowCache:
    """Windows by session and policy value, with one lock per session."""

    def __init__(self, store: SessionStore, counter: TokenCounter) -> None:
        self.store = store
        self.counter = counter
        self._windows: dict[tuple[str, ContextPolicy], CachedWindow] = {}
        self._locks: dict[str, threading.RLock] = {}  # re-entrant: a compactor may ask for the projection
        self._guard = threading.Lock()  # held only to read or change the two dicts above

    def lock(self, session_id: str) -> threading.RLock:
        """The session's lock: hold it while building or reading the session's window."""
        with self._guard:
            lock = self._locks.get(session_id)
            if lock is None:
                lock = self._locks[session_id] = threading.RLock()
            return lock

    def window(
        self, session_id: str, policy: ContextPolicy, *, catch_up: bool = True, appended: Sequence[Event] = ()
    ) -> CachedWindow:
        """The session's cached window under ``policy``, caught up (the caller holds the session lock).

        ``catch_up=False`` skips the store's read when the window is cached: it stands as the last
        build or read left it (events appended since are not in it). ``appended``: events the caller
        just appended with a compare-and-append, as the store returned them; the log then held
        nothing after them, so a cached window they directly extend takes them without a read.
        """
        key = (session_id, policy)
        with self._guard:
            window = self._windows.get(key)
        if window is None:
            window = self._open(session_id, policy, appended)
            with self._guard:
                self._windows[key] = window
            return window
        if not catch_up:
            return window
        if _take(window, appended):
            return window
        new = self.store.read(session_id, since_seq=window.projection.last_seq)
        if any(isinstance(e, Compaction) for e in new):
            window.projection = project(self.store.read_window(session_id), self._config(session_id, policy))
            window.checkpoint_seq = 0
        else:
            for event in new:
                window.projection.add(event)
        note_settings(window, new)
        return window

    def follow(self, session_id: str, policy: ContextPolicy, appended: Sequence[Event]) -> None:
        """The cached window takes ``appended`` (a compare-and-append's stored events) if they come right after it."""
        with self._guard:
            window = self._windows.get((session_id, policy))
        if window is not None:
            _take(window, appended)

    def _open(self, session_id: str, policy: ContextPolicy, appended: Sequence[Event] = ()) -> CachedWindow:
        """The session's window, resumed from its checkpoint when one is usable, else projected from the log.

        ``appended`` from seq 1 on is the whole log (the caller's compare-and-append found it empty): no read.
        """
        config = self._config(session_id, policy)
        if _follows(0, appended):
            window = CachedWindow(projection=project(appended, config))
            note_settings(window, appended)
            return window
        resumed = load_checkpoint(self.store, session_id, checkpoint_key(policy, self.counter), config)
        if resumed is not None:
            projection, settings, newer = resumed
            window = CachedWindow(projection=projection, checkpoint_seq=projection.last_seq - len(newer))
            if settings is not None:
                note_settings(window, [settings])
            note_settings(window, newer)
            return window
        events = self.store.read_window(session_id)
        window = CachedWindow(projection=project(events, config))
        note_settings(window, events)
        return window

    def _config(self, session_id: str, policy: ContextPolicy) -> ProjectionConfig:
        return projection_config(policy, self.counter, earlier_output=logged_output(self.store, session_id))

    def save(self, session_id: str, policy: ContextPolicy, window: CachedWindow) -> bool:
        """Save the window's checkpoint when it moved on by :data:`CHECKPOINT_EVERY` events since the last one."""
        if window.projection.last_seq - window.checkpoint_seq < CHECKPOINT_EVERY:
            return False
        key = checkpoint_key(policy, self.counter)
        if save_checkpoint(self.store, session_id, key, window.projection, window.recorded_event, memo=window.memo):
            window.checkpoint_seq = window.projection.last_seq
            return True
        return False

    def forget(self, session_id: str) -> None:
        """Drop the session's cached windows (the next build reloads them from the store)."""
        with self._guard:
            for key in [k for k in self._windows if k[0] == session_id]:
                del self._windows[key]


def _follows(last_seq: int, appended: Sequence[Event]) -> bool:
    """Whether ``appended`` (a compare-and-append's stored events) come right after ``last_seq``, none re-opening it."""
    return bool(appended) and appended[0].seq == last_seq + 1 and not any(isinstance(e, Compaction) for e in appended)


def _take(window: CachedWindow, appended: Sequence[Event]) -> bool:
    """Add ``appended`` to the window if they come right after it; whether they did."""
    if not _follows(window.projection.last_seq, appended):
        return False
    for event in appended:
        window.projection.add(event)
    note_settings(window, appended)
    return True


def note_settings(window: CachedWindow, events: Sequence[Event]) -> None:
    """Remember the newest build settings ``events`` record (a malformed record is recorded again)."""
    for event in reversed(events):
        if isinstance(event, SettingChange) and BUILD_KEY in event.settings:
            window.recorded_event = event
            try:
                window.recorded = build_settings_of(event)
            except CodecError:
                window.recorded = None
            return
