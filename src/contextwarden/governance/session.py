"""Our own sessions as request sequences: replay a log through a fresh manager, turn by turn.

:func:`replay_session` copies a session's events, in order, into a :class:`MemoryStore` watched by a
new :class:`~contextwarden.assemble.manager.ContextManager` (with the offline structured compactor), and
builds the request the manager would send before each assistant message, with the model profile,
tools and policy the session's own builds recorded (:mod:`contextwarden.assemble.buildrecord`), so the
requests are the ones the agent sent. Window decisions are the fresh manager's own: compactions
and context-edit batches recorded in the original log are not copied (the replay re-derives them
from the same inputs), tool-set changes are (they are the agent's choice), and so are compactions
something other than the planner decided (a hook, an overflow, a caller: the log is all that knows
why they ran). Each turn
knows the window events recorded since the previous one, which is what tells a planned prefix
change from a history rewrite.

:func:`~.sent.rebuild_as_sent` is the other way to get one request back: it copies the log up to that call,
window events and build records included, and builds once on the copy, as a resumed process would.
That is the request the live manager sent, whatever trimmed or rewound the client's history in
between (the mirror's window events are not the planner's to re-derive).

:func:`lint_session` runs the six rules over those requests, exactly: it knows which items the
harness injected and checks them against the fragment registry, and knows every item's hard cap.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace

from ..assemble.buildrecord import BUILD_KEY, BuildSettings, build_settings_of
from ..assemble.manager import ContextManager, ContextPolicy
from ..context import ModelContext, ToolDefinition
from ..errors import BudgetExceededError
from ..fragments import DEFAULT_REGISTRY, FragmentRegistry
from ..log.events import (
    AssistantMessage,
    Compaction,
    ContextEditBatch,
    Event,
    ForkMarker,
    Instruction,
    Pin,
    SettingChange,
    Steering,
    ToolCall,
    ToolResult,
    UsageReport,
    UserMessage,
)
from ..log.store import MemoryStore, SessionStore
from ..models import ModelProfile, get_profile, resolve_profile
from ..plan.compaction import WindowCompactor
from ..plan.compaction.entry import recorded_only
from ..tokens import MESSAGE_OVERHEAD, TokenCounter, best_counter
from ..window.items import ContextItem
from ..window.policies.presets import policy_for
from ._contexts import ContextRequestOptions, request_from_context
from ._items import fragment_tag
from ._proxied import copy_client_window_event, is_client_window_event, is_proxied, is_request
from .findings import RuleId
from .lint import Finding, Linter, LintOptions, LintReport

DEFAULT_MODEL = "claude-sonnet-4-5"
"""The model a replay builds for when neither the caller nor the log names one."""

CAP_SLACK = 64
"""Tokens an item may exceed its text cap by: message framing and supersession notes."""


@dataclass(frozen=True, kw_only=True)
class ReplayedTurn:
    """One request the manager would have built for a session."""

    turn: int
    """1-based position among the session's model calls."""
    seq: int
    """Seq (in the original log) of the assistant message the request produced."""
    context: ModelContext | None
    """The request, or ``None`` when it could not be built (see ``error``)."""
    window_events: tuple[str, ...]
    """Kinds of the window events recorded since the previous request."""
    injected: frozenset[str]
    """Ids of the request's source events the harness injected (instructions after the start, pins,
    steering)."""
    caps: dict[str, int]
    """Hard caps in tokens of the request's source events, by id."""
    new_events: tuple[Event, ...] = ()
    """Events appended to the replay since the previous request: the log's own, then the window
    events this build recorded."""
    items: tuple[ContextItem, ...] = ()
    """The window's items after the build (only for the turn asked for with ``items_at``)."""
    response: AssistantMessage | None = None
    """The assistant message the call produced (from the original log)."""
    usage: UsageReport | None = None
    """The provider usage recorded for the call, when the log has it."""
    profile: ModelProfile | None = None
    """The model profile the request was built for."""
    policy: ContextPolicy | None = None
    """The policy it was built under."""
    error: str = ""
    """Why the request could not be built (over the budget after every reduction)."""


class _Replay:
    """State of one replay: the copy, the manager, what is known about each event."""

    def __init__(self, session_id: str, *, policy: ContextPolicy | None, counter: TokenCounter | None) -> None:
        self.store = MemoryStore()
        self.session_id = session_id
        self.store.create_session(session_id)
        self.policy = policy or ContextPolicy()
        counter = counter or best_counter()
        self.manager = ContextManager(
            self.store, counter=counter, policy=self.policy, compactor=WindowCompactor(self.store, counter=counter)
        )
        self.pending: list[Event] = []
        self.pending_seqs: list[int] = []
        self.seq_map: dict[int, int] = {}
        """The log's seq -> the copy's, of every event copied so far."""
        self.window: list[str] = []
        self.injected: set[str] = set()
        self.caps: dict[str, int] = {}
        self.calls: dict[str, ToolCall] = {}
        self.seen_user = False
        self.last_original_seq = 0

    def note(self, event: Event) -> None:
        if isinstance(event, UserMessage):
            self.seen_user = True
        elif isinstance(event, (Pin, Steering)) or (isinstance(event, Instruction) and self.seen_user):
            self.injected.add(event.id)
        if isinstance(event, AssistantMessage):
            self.calls.update((c.id, c) for c in event.tool_calls)
        elif isinstance(event, ToolResult):
            policy = policy_for(event.tool_name, self.calls.get(event.call_id), self.policy.tool_policies)
            self.caps[event.id] = min(policy.max_tokens, self.policy.max_item_tokens) + CAP_SLACK
        elif isinstance(event, (UserMessage, Instruction)):
            self.caps[event.id] = self.policy.max_item_tokens + CAP_SLACK
        if event.is_window_event:
            self.window.append(event.kind)

    def flush(self) -> list[Event]:
        if not self.pending:
            return []
        last = self.store.get_session(self.session_id).last_seq
        stored = self.store.append(self.session_id, self.pending, expected_last_seq=last)
        self.seq_map.update(zip(self.pending_seqs, (e.seq for e in stored), strict=True))
        self.pending, self.pending_seqs = [], []
        return stored


def _copy(event: Event) -> Event | None:
    """The event as the replay appends it, or ``None`` for what the fresh manager re-derives."""
    if isinstance(event, (Compaction, ContextEditBatch, ForkMarker)):
        return None
    if isinstance(event, SettingChange) and BUILD_KEY in event.settings:
        return None  # the fresh manager records its own
    return replace(event, session_id="", seq=0)


def replay_session(
    store: SessionStore,
    session_id: str,
    *,
    model: str | None = None,
    tools: Sequence[ToolDefinition] = (),
    policy: ContextPolicy | None = None,
    counter: TokenCounter | None = None,
    items_at: int | None = None,
    final: bool = False,
) -> Iterator[ReplayedTurn]:
    """Yield, turn by turn, the request a fresh manager would build before each assistant message.

    ``model``, ``tools`` and ``policy`` fix what they name (an unknown ``model`` is an
    ``UnknownModelError``). Otherwise each turn uses what the session's last build record says; a
    session with none (an imported transcript) uses the model its assistant message names (or the
    last :class:`SettingChange`, the session's ``metadata["model"]``, or :data:`DEFAULT_MODEL`), no
    tools and the default policy.
    ``final`` adds the request the manager would build now, after the last event (its ``response``
    is ``None``). ``items_at`` attaches the window's items to that turn.
    """
    info = store.get_session(session_id)
    fixed = _Fixed(
        profile=resolve_profile(model) if model is not None else None, tools=tuple(tools) or None, policy=policy
    )
    replay = _Replay(session_id, policy=policy, counter=counter)
    proxied = is_proxied(info.metadata)
    current = str(info.metadata.get("model") or DEFAULT_MODEL)
    recorded: BuildSettings | None = None
    turn = 0
    waiting: ReplayedTurn | None = None
    for event in store.iter_events(session_id):
        if isinstance(event, UsageReport) and waiting is not None and waiting.usage is None:
            waiting = replace(waiting, usage=event)
        if isinstance(event, SettingChange):
            recorded = build_settings_of(event) or recorded
            current = event.model or current
        if isinstance(event, AssistantMessage) and is_request(event, proxied=proxied):
            if waiting is not None:
                yield waiting
            turn += 1
            flushed = replay.flush()
            settings = fixed.settings(recorded, event.model or current)
            waiting = _build(replay, turn, event, settings, flushed, items_at == turn)
        replay.last_original_seq = event.seq
        if (proxied and is_client_window_event(event)) or (isinstance(event, Compaction) and recorded_only(event)):
            replay.flush()
            copy_client_window_event(replay.store, session_id, event, replay.seq_map)
            replay.note(event)
            continue
        copied = _copy(event)
        if copied is not None:
            replay.note(copied)
            replay.pending.append(copied)
            replay.pending_seqs.append(event.seq)
    if waiting is not None:
        yield waiting
    if final:
        flushed = replay.flush()
        yield _build(replay, turn + 1, None, fixed.settings(recorded, current), flushed, items_at == turn + 1)


@dataclass(frozen=True, kw_only=True)
class _Fixed:
    """What the caller fixed; the rest comes from the session's build records."""

    profile: ModelProfile | None
    tools: tuple[ToolDefinition, ...] | None
    policy: ContextPolicy | None

    def settings(
        self, recorded: BuildSettings | None, named: str
    ) -> tuple[ModelProfile, tuple[ToolDefinition, ...], ContextPolicy | None]:
        """The profile, tools and policy of one replayed build (a log's model name may be unknown)."""
        profile = self.profile or (recorded.profile if recorded else get_profile(named))
        tools: tuple[ToolDefinition, ...] = (
            self.tools if self.tools is not None else (recorded.tools if recorded else ())
        )
        policy = self.policy or (recorded.policy if recorded else None)
        return profile, tools, policy


def _build(
    replay: _Replay,
    turn: int,
    event: AssistantMessage | None,
    settings: tuple[ModelProfile, tuple[ToolDefinition, ...], ContextPolicy | None],
    flushed: list[Event],
    with_items: bool,
) -> ReplayedTurn:
    seq = event.seq if event is not None else replay.last_original_seq + 1
    window = tuple(replay.window)
    replay.window = []
    profile, tools, policy = settings
    if policy is not None:
        replay.policy = policy
    try:
        ctx = replay.manager.build(replay.session_id, model=profile, tools=tools, policy=replay.policy)
    except BudgetExceededError as exc:
        return ReplayedTurn(
            turn=turn,
            seq=seq,
            context=None,
            window_events=window,
            injected=frozenset(),
            caps={},
            response=event,
            error=str(exc),
            new_events=tuple(flushed),
            profile=profile,
            policy=replay.policy,
        )
    appended = _appended(replay, ctx.window_event_ids)
    sources = {m.source_ids[0] for m in ctx.messages if m.source_ids}
    items = tuple(replay.manager.projection(replay.session_id, policy=replay.policy).items) if with_items else ()
    return ReplayedTurn(
        turn=turn,
        seq=seq,
        context=ctx,
        window_events=(*window, *(e.kind for e in appended)),
        injected=frozenset(sources & replay.injected),
        caps={s: replay.caps[s] for s in sources if s in replay.caps},
        response=event,
        new_events=(*flushed, *appended),
        items=items,
        profile=profile,
        policy=replay.policy,
    )


def _appended(replay: _Replay, ids: tuple[str, ...]) -> list[Event]:
    """The window events the build just appended (they are the newest events)."""
    if not ids:
        return []
    last = replay.store.get_session(replay.session_id).last_seq
    recent = replay.store.read(replay.session_id, since_seq=max(last - len(ids) - 2, 0))
    wanted = set(ids)
    return [e for e in recent if e.id in wanted]


_BUILD_FINDINGS: dict[str, RuleId] = {"dynamic_prefix": "R2", "escape_fragment": "R6"}
"""Decisions a build records about what it was given, and the rule each breaks."""


def _system_findings(store: SessionStore, session_id: str, registry: FragmentRegistry) -> list[Finding]:
    """Tagged blocks in the leading instructions must come from registered fragment types."""
    findings: list[Finding] = []
    for event in store.iter_events(session_id):
        if isinstance(event, UserMessage):
            break
        if isinstance(event, Instruction):
            tag = fragment_tag(event.text)
            if tag is not None and registry.find(event.text) is None:
                findings.append(
                    Finding(
                        rule="R6",
                        request=1,
                        line=0,
                        item=f"system (event {event.id})",
                        message=f"system instruction block <{tag}> is not a registered fragment type",
                        details={"tag": tag, "source": event.id},
                    )
                )
    return findings


def lint_session(
    store: SessionStore,
    session_id: str,
    *,
    model: str | None = None,
    options: LintOptions | None = None,
    policy: ContextPolicy | None = None,
    counter: TokenCounter | None = None,
) -> LintReport:
    """Check the requests a fresh manager builds for a stored session against the six rules."""
    options = options or LintOptions()
    registry = options.registry or DEFAULT_REGISTRY
    if options.registry is None:
        options = replace(options, registry=registry)
    counter = counter or best_counter()
    linter = Linter(options, source=f"session {session_id}")
    for finding in _system_findings(store, session_id, registry):
        linter.add(finding)
    for turn in replay_session(store, session_id, model=model, policy=policy, counter=counter):
        if turn.context is None:
            linter.add(
                Finding(
                    rule="R4",
                    request=turn.turn,
                    line=0,
                    item=f"request before event {turn.seq}",
                    message=f"no request fits: {turn.error}",
                    details={"error": turn.error},
                )
            )
            continue
        for decision in turn.context.decisions:
            # An injected instruction is checked against the registry below; a user's text only here.
            if decision.action in _BUILD_FINDINGS and decision.target not in turn.injected:
                linter.add(
                    Finding(
                        rule=_BUILD_FINDINGS[decision.action],
                        request=turn.turn,
                        line=0,
                        item=f"event {decision.target}",
                        message=decision.reason,
                        details={"decision": decision.action},
                    )
                )
        caps = dict(turn.caps)
        for message in turn.context.messages:
            source = message.source_ids[0] if message.source_ids else ""
            ftype = (
                registry.find(message.text)
                if source in turn.injected or message.section in ("pinned", "summary")
                else None
            )
            if ftype is not None and ftype.max_tokens is not None:
                caps[source] = ftype.max_tokens + MESSAGE_OVERHEAD
        request = request_from_context(
            turn.context,
            number=turn.turn,
            counter=counter,
            options=ContextRequestOptions(injected=turn.injected, caps=caps, window_events=turn.window_events),
        )
        linter.feed(request)
    return linter.report()
