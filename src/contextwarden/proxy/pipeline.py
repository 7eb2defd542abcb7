"""The proxy's core, one request at a time: identify, ingest the new suffix, project, forward, record.

Everything here is synchronous and runs on a worker thread; the ASGI edge (:mod:`.app`) only moves
bytes. :meth:`Pipeline.prepare` decides the bytes to forward; :meth:`Pipeline.record` files what
came back. Any exception inside ``prepare`` is the caller's cue to forward the original bytes.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..assemble.manager import ContextManager, ContextPolicy
from ..context import ModelContext
from ..errors import ConflictError, SessionExists, SessionNotFound
from ..log.events import AssistantMessage, Event, UsageReport
from ..log.store import SessionStore
from ..mirror import MIRROR_SUMMARIZER, content_digest, mirror_history, unmirrored
from ..models import get_profile
from ..pairing import normalize_pairing
from ..plan.planner import PlannerSettings
from ..tokens import TokenCounter
from ..wire import AddressedBody, ParsedRequest, get_codec
from . import bodyedit
from ._db import ProxyDB
from .accounting import Accountant, Job
from .identity import Identity, SessionIndex, continued, namespace
from .ledger import Ledger
from .settings import ProxySettings
from .suffix import Read, SuffixCache
from .turns import PendingTurns


def _frontier_calls(messages: Sequence[Any], breakpoints: Sequence[int]) -> list[str]:
    """Call ids of the tool results right after the context's inner breakpoints (the planner's frontier)."""
    calls = []
    for point in breakpoints:
        if 0 <= point < len(messages) - 1 and messages[point + 1].role == "tool":
            calls.append(messages[point + 1].tool_call_id)
    return calls


CHANGING_ACTIONS = frozenset({"mask", "supersede", "stale", "clear", "truncate"})
"""Decisions that change what a tool result shows, so the forwarded body changes there."""


@dataclass
class Prepared:
    """What to forward for one request, and what the ledger needs afterwards."""

    fmt: str
    body: bytes
    """The bytes to forward (the client's own unless the projection changed something)."""
    outcome: str = "passthrough"
    """``projected`` (changed), ``unchanged``, ``observed``, ``passthrough`` or ``fallback``."""
    note: str = ""
    model: str = ""
    stream: bool = False
    identity: Identity | None = None
    root: str = ""
    chain: list[str] = field(default_factory=list)
    client_body: dict[str, Any] | None = None
    """The client's parsed body, for the ledger's arithmetic."""
    projected_body: dict[str, Any] | None = None
    """What contextwarden forwards (or, observing, would forward)."""
    added_ms: float = 0.0
    at: float = field(default_factory=time.time)
    logged_seq: int = 0
    """The session's last seq once the client's history was ingested (the turn goes after it)."""
    pending: bool = False
    """Whether :meth:`Pipeline.answered` counted its turn as pending (``record`` files it)."""


class Pipeline:
    """Sessions, projection and the ledger behind one proxy process."""

    def __init__(
        self, settings: ProxySettings, store: SessionStore, db: ProxyDB, *, counter: TokenCounter | None = None
    ) -> None:
        """Serve ``settings`` with ``store`` for session logs and ``db`` for the proxy's tables."""
        self.settings = settings
        self.store = store
        # The proxy keeps the client's tools as they are (no retrieval tools of ours) and leaves thinking
        # blocks with their signatures alone, so the planner must not count on dropping them.
        # A batch the session does not live to pay back costs more than going direct, so the proxy expects
        # a session to run a third as long again, not half (docs/proxy.md, "Measured"). Keeping an exploring
        # session's reads took the A/B total over issue 12's 0.80x direct (0.802x / 0.806x), so it is off here.
        planner = PlannerSettings(drop_old_thinking=False, horizon_share=1 / 3, protect_exploration_reads=False)
        policy = ContextPolicy(retrieval_tools=False, planner=planner)
        self.manager = ContextManager(store, counter=counter, policy=policy)
        self.index = SessionIndex(db, salt=settings.salt)
        self.reader = SuffixCache()
        self.turns = PendingTurns()
        self._known: set[str] = set()
        """Sessions this worker has seen in the store (no lookup before each request)."""
        self.ledger = Ledger(db)
        self.accountant = Accountant(self.ledger, self.manager.counter)

    # ------------------------------------------------------------------ before forwarding

    def prepare(
        self, fmt: str, raw: bytes, headers: Mapping[str, str], credential: str, *, identity: Identity | None = None
    ) -> Prepared:
        """The bytes to forward for one request (the caller falls back to ``raw`` if this raises).

        ``identity`` skips the session lookup (a retry of a request already identified).
        """
        started = time.perf_counter()
        caller = namespace(credential, self.settings.salt)
        try:
            loaded = self.reader.load(fmt, raw, caller)
        except ValueError:
            return Prepared(fmt=fmt, body=raw, note="body is not JSON; the upstream answers it")
        body = loaded.body
        if not isinstance(body, dict):
            return Prepared(fmt=fmt, body=raw, note="body is not a JSON object; the upstream answers it")
        prepared = Prepared(fmt=fmt, body=raw, model=str(body.get("model", "")), stream=bool(body.get("stream")))
        if fmt == "openai_responses" and (body.get("previous_response_id") or body.get("conversation")):
            prepared.note = "server-side state (previous_response_id) the proxy cannot see"
            return prepared
        # one parse and one digest pass, of the new suffix only, serve identity and the mirror alike
        read = self.reader.read(fmt, body, caller, loaded=loaded)
        parsed, root, prepared.chain = read.parsed, read.root, read.chain
        prepared.root = root
        reach = next(
            (i + 1 for i in range(len(parsed.events) - 1, -1, -1) if isinstance(parsed.events[i], AssistantMessage)), 0
        )
        identity = identity or self.index.identify(
            credential=credential, headers=headers, body=body, root=root, chain=prepared.chain, reach=reach
        )
        prepared.identity = identity
        self._ensure(identity.session_id)
        self.turns.wait(identity.session_id)  # the previous answer's turn goes into the log first
        instructions = [content_digest(i) for i in parsed.instructions]
        history = [*parsed.instructions, *parsed.events]
        mirrored = mirror_history(
            self.store,
            identity.session_id,
            history,
            digests=[*instructions, *read.digests],
            policies=self.manager.policy.tool_policies,
        )
        prepared.logged_seq = mirrored.last_seq
        profile = get_profile(prepared.model)
        ctx = self.manager.build(identity.session_id, model=profile, tools=parsed.tools)
        edited = self._forwarded(identity.session_id, read, raw, body, ctx, addressed=loaded.addressed)
        prepared.client_body = body
        prepared.projected_body = edited[0] if edited is not None else body
        if self.settings.mode == "observe":
            prepared.outcome = "observed"
        elif edited is None:
            prepared.outcome = "unchanged"
        else:
            prepared.body, prepared.outcome = edited[1], "projected"
        prepared.added_ms = (time.perf_counter() - started) * 1000
        return prepared

    def prepare_count(self, raw: bytes, headers: Mapping[str, str], credential: str) -> bytes:
        """The body to count for an Anthropic ``count_tokens`` request: what ``/v1/messages`` would forward.

        Counting must not change the session, so this only reads: the session is looked up (never
        created), nothing is ingested and nothing is planned. The log's standing reductions are
        applied to the client's body, the way :meth:`prepare` applies them; the new messages at the
        end are not reduced yet, as they would not be in the next request either. A window compacted
        by the planner is rendered from the log, as :meth:`prepare` forwards it, followed by the
        client's messages the log does not hold yet. A request of no known session, or one whose
        history no longer extends the log (a trim or rewind the next request would record), is
        counted as the client sent it.
        """
        caller = namespace(credential, self.settings.salt)
        loaded = self.reader.load("anthropic", raw, caller)
        body = loaded.body
        if not isinstance(body, dict):
            return raw
        read = self.reader.read("anthropic", body, caller, loaded=loaded)
        identity = self.index.find(
            credential=credential,
            headers=headers,
            body=body,
            root=read.root,
            chain=read.chain,
            reach=_reach(read.parsed),
        )
        if identity is None:
            return raw
        try:
            projection = self.manager.projection(identity.session_id)
        except SessionNotFound:
            return raw
        compaction = projection.compaction
        if compaction is not None and compaction.summarizer != MIRROR_SUMMARIZER:
            parsed = read.parsed
            history = [*parsed.instructions, *parsed.events]
            digests = [*(content_digest(i) for i in parsed.instructions), *read.digests]
            new = unmirrored(self.store, identity.session_id, history, digests)
            if new is None:
                return raw
            added = replace(parsed, instructions=(), events=tuple(new)).to_context().messages
            # paired again as a whole: a call the window ends with is answered by the client's new result
            joined, _ = normalize_pairing([*(i.message for i in projection.list.items), *added])
            ctx = ModelContext(model=parsed.model, system=projection.system, messages=tuple(joined))
            return self._rendered(parsed, raw, body, ctx)[1]
        messages, _, _ = projection.normalized()
        edited = self._edited(
            "anthropic", raw, body, messages, projection.decisions, read=read, addressed=loaded.addressed
        )
        return edited[1] if edited is not None else raw

    def _forwarded(
        self,
        session_id: str,
        read: Read,
        raw: bytes,
        body: dict[str, Any],
        ctx: ModelContext,
        *,
        addressed: AddressedBody | None = None,
    ) -> tuple[dict[str, Any], bytes] | None:
        """The body to forward for ``ctx``, or ``None`` when the client's own bytes are the answer."""
        parsed = read.parsed
        projection = self.manager.projection(session_id)
        compaction = projection.compaction
        if compaction is None or compaction.summarizer == MIRROR_SUMMARIZER:
            # the client's own history (a trim or reset by the client is already in its body); every
            # standing change of the window applies, not only the ones this build made
            standing = projection.decisions
            return self._edited(
                parsed.format, raw, body, ctx.messages, standing, ctx.cache_breakpoints, read=read, addressed=addressed
            )
        return self._rendered(parsed, raw, body, ctx)

    def _rendered(
        self, parsed: ParsedRequest, raw: bytes, body: dict[str, Any], ctx: ModelContext
    ) -> tuple[dict[str, Any], bytes]:
        """A compacted window: the conversation rendered from the log, the client's system, tools and settings kept.

        A compaction is a window event, so the request changes at its front once; rendering is a
        pure function of the window, so the requests after it extend each other again.
        """
        rendered = get_codec(parsed.format).render_request(
            ctx, model=parsed.model, max_tokens=parsed.max_tokens, extra=parsed.extra
        )
        key = "input" if parsed.format == "openai_responses" else "messages"
        edit = bodyedit.Edit(body={k: (rendered.get(key, v) if k == key else v) for k, v in body.items()}, key=key)
        if parsed.format == "anthropic":
            bodyedit.mark_tail(edit)
        dump = bodyedit.client_style(raw, body) or bodyedit.compact
        return edit.body, dump(edit.body)

    def compact_for_overflow(self, prepared: Prepared, raw: bytes) -> Prepared | None:
        """After the upstream refused the request as too long: compact once and prepare it again.

        Returns ``None`` when there is nothing to compact (the caller passes the error on).
        """
        identity = prepared.identity
        compactor = self.manager.compactor
        if identity is None or compactor is None or self.settings.mode != "manage":
            return None
        projection = self.manager.projection(identity.session_id)
        profile = get_profile(prepared.model)
        compaction = compactor.compact_window(
            identity.session_id, projection, profile=profile, reason="the upstream reported a context overflow"
        )
        if compaction is None:
            return None
        self.store.append(identity.session_id, [compaction], expected_last_seq=projection.last_seq)
        retried = self.prepare(prepared.fmt, raw, {}, "", identity=identity)
        retried.note = "compacted after a context overflow from the upstream"
        return retried

    def _edited(
        self,
        fmt: str,
        raw: bytes,
        body: dict[str, Any],
        messages: Sequence[Any],
        decisions: Sequence[Any],
        breakpoints: Sequence[int] = (),
        *,
        read: Read | None = None,
        addressed: AddressedBody | None = None,
    ) -> tuple[dict[str, Any], bytes] | None:
        """The client's body with the projection's changes applied, or ``None`` when nothing changes.

        ``read`` (its counts over the messages) and ``addressed`` (where each message lies in ``raw``)
        spare the edit a walk of the whole history.
        """
        marks, holders = (read.marks, read.holders) if read is not None else (None, None)
        targets = {d.target for d in decisions if d.action in CHANGING_ACTIONS}
        replacements = (
            {
                m.tool_call_id: m.text
                for m in messages
                if m.role == "tool" and m.tool_call_id and targets.intersection(m.source_ids)
            }
            if targets
            else {}
        )
        edit = bodyedit.replace_tool_outputs(fmt, body, replacements, holders=holders)
        edit.addressed = addressed
        if fmt == "anthropic":
            edit.breakpoints = bodyedit.count_breakpoints(body, message_marks=marks)
            bodyedit.mark_tail(edit)
            for call_id in _frontier_calls(messages, breakpoints):
                bodyedit.mark_before_result(edit, call_id, holders=holders)
        if not edit.replaced:
            return None
        written = edit.write(raw, body)
        if written is None:
            return None  # a serialization we cannot reproduce: forwarding the original is the safe choice
        return edit.body, written

    def _ensure(self, session_id: str) -> None:
        if session_id in self._known:
            return
        try:
            self.store.get_session(session_id)
        except SessionNotFound:
            with contextlib.suppress(SessionExists):  # another worker created it first
                self.store.create_session(session_id, metadata={"source": "proxy"})
        self._known.add(session_id)

    # ------------------------------------------------------------------ after the answer

    def answered(self, prepared: Prepared, assistant: AssistantMessage | None) -> None:
        """The answer is complete (before its last byte reaches the client): hold the session's next request.

        The session's next request waits for :meth:`record` (filed after the response) on this
        worker; any worker finds the session by the history it extends, since the prefix is
        remembered here, before the client can send that request.
        """
        identity = prepared.identity
        if identity is None or assistant is None or prepared.pending:
            return
        prepared.pending = True
        self.turns.start(identity.session_id)
        after = continued(prepared.root, prepared.chain, content_digest(assistant))
        self.index.remember(identity, after, len(prepared.chain) + 1)

    def record(
        self,
        prepared: Prepared,
        *,
        status: int,
        assistant: AssistantMessage | None,
        usage: UsageReport | None,
        outcome: str | None = None,
    ) -> None:
        """File the answer: a ledger row (written soon after), then the assistant turn and usage into the log."""
        identity = prepared.identity
        # the row first: the request happened even if the log cannot take its turn now
        self.accountant.submit(
            Job(
                session_id=identity.session_id if identity else "",
                model=prepared.model,
                fmt=prepared.fmt,
                mode=self.settings.mode,
                outcome=outcome or (prepared.outcome if status < 400 else "upstream_error"),
                status=status,
                note=prepared.note,
                added_ms=prepared.added_ms,
                at=prepared.at,
                client_body=prepared.client_body,
                projected_body=prepared.projected_body,
                usage=usage,
            )
        )
        try:
            if identity is not None and assistant is not None and status == 200 and outcome is None:
                # usage anchors the size estimate of the next projection, so it is logged only when it
                # measured the projection; observing, it measured the client's own (larger) request
                measured = usage if prepared.outcome in ("projected", "unchanged") else None
                self._append_turn(identity, assistant, measured, since=prepared.logged_seq)
                if not prepared.pending:  # not announced by ``answered``: remember the prefix now
                    after = continued(prepared.root, prepared.chain, content_digest(assistant))
                    self.index.remember(identity, after, len(prepared.chain) + 1)
        finally:
            if prepared.pending and identity is not None:
                prepared.pending = False
                self.turns.done(identity.session_id)

    def close(self) -> None:
        """Write the remaining ledger rows."""
        self.accountant.close()

    def _append_turn(
        self, identity: Identity, assistant: AssistantMessage, usage: UsageReport | None, *, since: int
    ) -> None:
        digest = content_digest(assistant)
        for _ in range(5):
            last = self.store.get_session(identity.session_id).last_seq
            # another worker may have served the client's next request first and taken this turn
            # from the client's copy of the history: then only the usage is still to file
            taken = (
                _taken(self.store.iter_events(identity.session_id, since_seq=since), digest) if last > since else None
            )
            events: list[Event] = [] if taken is not None else [assistant]
            if usage is not None:
                events.append(replace(usage, response_event_id=taken or assistant.id))
            if not events:
                return
            try:
                self.store.append(identity.session_id, events, expected_last_seq=last)
                return
            except ConflictError:
                continue  # another worker appended in between; our turn goes after theirs


def _reach(parsed: ParsedRequest) -> int:
    """How many events of the request come up to and with its last assistant message."""
    events = parsed.events
    return next((i + 1 for i in range(len(events) - 1, -1, -1) if isinstance(events[i], AssistantMessage)), 0)


def _taken(events: Iterable[Event], digest: str) -> str | None:
    """The id of the assistant message among ``events`` whose content digests to ``digest``, if one is there."""
    return next((e.id for e in events if isinstance(e, AssistantMessage) and content_digest(e) == digest), None)
