"""The proxy's core, one request at a time: identify, ingest the new suffix, project, forward, record.

Everything here is synchronous; the ASGI edge (:mod:`.app`) moves bytes and decides where it runs
(on the event loop or a worker thread). :meth:`Pipeline.prepare` decides the bytes to forward;
:meth:`Pipeline.record` files what came back. Any exception inside ``prepare`` is the caller's cue to
forward the original bytes.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ..assemble.manager import ContextManager
from ..context import ModelContext
from ..errors import ConflictError, SessionExists
from ..log.events import AssistantMessage, Event, JSONValue, UsageReport
from ..log.store import SessionStore, asynchronous_commits
from ..log.store._shared import header_and_events
from ..mirror import MIRROR_SUMMARIZER, content_digest, follow_appended, follow_created, follow_to, mirror_history
from ..plan.compaction import OVERFLOW_TRIGGER, compact
from ..plan.policy import ContextPolicy
from ..plan.spend import SpendLimit
from ..tokens import TokenCounter
from ..wire import AddressedBody
from ._db import ProxyDB
from .access import deployment_salts
from .accounting import Accountant, Job
from .carryover import carried_edits
from .count import counted_body
from .identity import Identity, SessionIndex, client_session_id, continued, namespace
from .ledger import Ledger
from .modelnote import ModelNotes
from .notices import log_restart
from .policy import provider_clears_tool_results, proxy_policy, with_recall, without_masking
from .projected import edited_body, rendered_body
from .settings import ProxySettings
from .spend import REFUSED, Spent, TaskSpending
from .suffix import Read, SuffixCache, last_assistant_reach


@dataclass
class Prepared:
    """What to forward for one request, and what the ledger needs afterwards."""

    fmt: str
    body: bytes
    """The bytes to forward (the client's own unless the projection changed something)."""
    outcome: str = "passthrough"
    """``projected`` (changed), ``unchanged``, ``observed``, ``passthrough``, ``fallback`` or ``budget_exhausted``."""
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
    """The session's last seq after the request's build (the answer's turn goes after it)."""
    filed: bool = False
    """Whether the answer's turn is in the log (:meth:`Pipeline.answered`)."""
    turn_seq: int = 0
    """The seq of the turn's last event once filed."""
    refused: Spent | None = None
    """Set when the task reached its spend limit: the proxy answers with an error and forwards nothing."""
    stand_in: str = ""
    """The listed profile the model was planned with when the table does not name it."""
    policy: ContextPolicy | None = None
    """The policy the request was built under (a compaction after an overflow runs under it too)."""


class Pipeline:
    """Sessions, projection and the ledger behind one proxy process."""

    def __init__(
        self, settings: ProxySettings, store: SessionStore, db: ProxyDB, *, counter: TokenCounter | None = None
    ) -> None:
        """Serve ``settings`` with ``store`` for session logs and ``db`` for the proxy's tables."""
        self.settings = settings
        self.store = store
        # a window checkpoint is saved after the answer is out (:meth:`record`), never inside a request's build
        self.manager = ContextManager(
            store, counter=counter, policy=proxy_policy(settings.policy), checkpoints="caller"
        )
        limit = settings.spend_limit
        self.spending = TaskSpending(SpendLimit(limit=limit), db) if limit is not None else None
        self.salt = settings.salt or deployment_salts(db)[0]
        """Keys each caller's namespace: the configured salt, else the store's own."""
        self.index = SessionIndex(db, salt=self.salt)
        self.reader = SuffixCache()
        self.models = ModelNotes()
        self._known: set[str] = set()
        """Sessions this worker has seen in the store (no lookup before each request)."""
        self.ledger = Ledger(db)
        self.accountant = Accountant(self.ledger, self.manager.counter)

    # ------------------------------------------------------------------ before forwarding

    def prepare(
        self,
        fmt: str,
        raw: bytes,
        headers: Mapping[str, str],
        credential: str,
        *,
        identity: Identity | None = None,
        model: str = "",
        stream: bool = False,
    ) -> Prepared:
        """The bytes to forward for one request (the caller falls back to ``raw`` if this raises).

        ``identity`` skips the session lookup (a retry of a request already identified). ``model``
        and ``stream`` are for a format whose path, not its body, names them (Gemini).

        Its appends (the client's new messages, what the build records) commit without waiting for
        the disk (:func:`~contextwarden.log.store.asynchronous_commits`): the client's next request
        brings the messages back, and the ledger row written after the answer waits for the disk.
        """
        with asynchronous_commits():
            return self._prepare(fmt, raw, headers, credential, identity=identity, model=model, stream=stream)

    def _prepare(
        self,
        fmt: str,
        raw: bytes,
        headers: Mapping[str, str],
        credential: str,
        *,
        identity: Identity | None,
        model: str,
        stream: bool,
    ) -> Prepared:
        started = time.perf_counter()
        caller = namespace(credential, self.salt)
        try:
            loaded = self.reader.load(fmt, raw, caller)
        except ValueError:
            return Prepared(fmt=fmt, body=raw, note="body is not JSON; the upstream answers it")
        body = loaded.body
        if not isinstance(body, dict):
            return Prepared(fmt=fmt, body=raw, note="body is not a JSON object; the upstream answers it")
        prepared = Prepared(
            fmt=fmt, body=raw, model=model or str(body.get("model", "")), stream=stream or bool(body.get("stream"))
        )
        if fmt == "openai_responses" and (body.get("previous_response_id") or body.get("conversation")):
            prepared.note = "server-side state (previous_response_id) the proxy cannot see"
            return prepared
        # one parse and one digest pass, of the new suffix only, serve identity and the mirror alike
        read = self.reader.read(fmt, body, caller, loaded=loaded)
        parsed, root, prepared.chain = read.parsed, read.root, read.chain
        prepared.root = root
        identity = identity or self.index.identify(
            credential=credential,
            headers=headers,
            body=body,
            root=root,
            chain=prepared.chain,
            reach=last_assistant_reach(parsed.events),
        )
        prepared.identity = identity
        self._ensure(identity.session_id, client_session_id(headers, body))
        if self.spending is not None and (spent := self.spending.check(identity)).exhausted:
            prepared.outcome, prepared.note, prepared.refused = REFUSED, spent.message, spent
            return prepared
        instructions = [content_digest(i) for i in parsed.instructions]
        history = [*parsed.instructions, *parsed.events]
        mirrored = mirror_history(
            self.store,
            identity.session_id,
            history,
            digests=[*instructions, *read.digests],
            policies=self.manager.policy.tool_policies,
        )
        log_restart(identity.session_id, mirrored)
        if mirrored.outcome == "reset" and mirrored.window_event is not None:
            carried = carried_edits(self.store, identity.session_id, mirrored.window_event, mirrored.appended)
            if carried is not None:
                with contextlib.suppress(ConflictError):  # another writer came first: the plain restart stands
                    self.store.append(identity.session_id, [carried], expected_last_seq=mirrored.last_seq)
        profile = self.models.profile(prepared.model, prepared.fmt)
        prepared.stand_in = profile.family_match or ""
        policy = with_recall(self.manager.policy, parsed.tools, parsed.instructions)
        if provider_clears_tool_results(body):
            policy = without_masking(policy)
        prepared.policy = policy
        # the mirror's compare-and-append showed the log held nothing after what it appended: no read
        appended = mirrored.appended if mirrored.outcome == "extend" else ()
        ctx, prepared.logged_seq = self.manager.build_with_last_seq(
            identity.session_id, model=profile, tools=parsed.tools, policy=policy, appended=appended
        )
        edited = self._forwarded(identity.session_id, read, raw, body, ctx, policy, addressed=loaded.addressed)
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

    def prepare_count(self, raw: bytes, headers: Mapping[str, str], credential: str, fmt: str = "anthropic") -> bytes:
        """The body to count for a counting request of format ``fmt``: what its model route would forward."""
        return counted_body(
            raw, headers, credential, reader=self.reader, index=self.index, manager=self.manager, fmt=fmt
        )

    def _forwarded(
        self,
        session_id: str,
        read: Read,
        raw: bytes,
        body: dict[str, Any],
        ctx: ModelContext,
        policy: ContextPolicy,
        *,
        addressed: AddressedBody | None = None,
    ) -> tuple[dict[str, Any], bytes] | None:
        """The body to forward for ``ctx`` (built under ``policy``), or ``None`` when the client's own bytes are."""
        parsed = read.parsed
        # the window the build just caught up and planned on: what ``ctx`` was built from
        projection = self.manager.projection(session_id, policy=policy, catch_up=False)
        compaction = projection.compaction
        if compaction is None or compaction.summarizer == MIRROR_SUMMARIZER:
            # the client's own history (a trim or reset by the client is already in its body); every
            # standing change of the window applies, not only the ones this build made
            standing = projection.decisions
            return edited_body(
                parsed.format, raw, body, ctx.messages, standing, ctx.cache_breakpoints, read=read, addressed=addressed
            )
        return rendered_body(parsed, raw, body, ctx)

    def compact_for_overflow(self, prepared: Prepared, raw: bytes) -> Prepared | None:
        """After the upstream refused the request as too long: compact once and prepare it again.

        The compaction goes through the one entry point, recorded with trigger ``overflow`` and the
        upstream's refusal as its reason. Returns ``None`` when there is nothing to compact (the
        caller passes the error on).
        """
        identity = prepared.identity
        if identity is None or self.manager.compactor is None or self.settings.mode != "manage":
            return None
        compaction = compact(
            self.manager,
            identity.session_id,
            model=self.models.profile(prepared.model, prepared.fmt),
            policy=prepared.policy,
            trigger=OVERFLOW_TRIGGER,
            reason="the upstream reported a context overflow",
        )
        if compaction is None:
            return None
        retried = self.prepare(
            prepared.fmt, raw, {}, "", identity=identity, model=prepared.model, stream=prepared.stream
        )
        retried.note = "compacted after a context overflow from the upstream"
        return retried

    def _ensure(self, session_id: str, client_session: str = "") -> None:
        """Create the session unless this worker has seen it: one statement, which a session that exists refuses."""
        if session_id in self._known:
            return
        metadata: dict[str, JSONValue] = {"source": "proxy"}
        if client_session:  # ``name=value``: what the client calls this session, as listings show it
            name, _, value = client_session.partition("=")
            metadata.update(client_session=value, title=f"proxy: {name} {value}")
        try:
            self.store.create_session(session_id, metadata=metadata)
            follow_created(self.store, session_id)  # empty: the first mirror call reads nothing
        except SessionExists:  # an earlier process or another worker created it
            pass
        self._known.add(session_id)

    # ------------------------------------------------------------------ after the answer

    def answered(self, prepared: Prepared, assistant: AssistantMessage | None, usage: UsageReport | None) -> None:
        """The answer is complete, before its last byte reaches the client: file its turn now.

        The client cannot send the session's next request before that byte, so that request finds the
        turn in the log (else the mirror would take the reply from the client's copy and a later filing
        would add it twice), and any worker finds the session by the history it extends, remembered here.
        Neither write waits for the disk (as in :meth:`prepare`): the turn is visible at once, and the
        client holds it and sends it again with its next request.
        """
        with asynchronous_commits():
            self._file_turn(prepared, assistant, usage)

    def _file_turn(self, prepared: Prepared, assistant: AssistantMessage | None, usage: UsageReport | None) -> None:
        identity = prepared.identity
        if identity is None or assistant is None or prepared.filed:
            return
        prepared.filed = True
        # usage anchors the size estimate of the next projection, so it is logged only when it
        # measured the projection; observing, it measured the client's own (larger) request
        measured = usage if prepared.outcome in ("projected", "unchanged") else None
        stored = self._append_turn(identity, assistant, measured, since=prepared.logged_seq)
        prepared.turn_seq = stored[-1].seq if stored else 0
        # the chain and the window take the turn as stored: the next request reads nothing before its append
        follow_appended(self.store, identity.session_id, stored)
        self.manager.follow(identity.session_id, stored, policy=prepared.policy)
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
        """File what is left of the answer once it is out: a ledger row (written soon after), and the checkpoint.

        The turn itself was filed by :meth:`answered`; if that failed (the store was down), it is
        filed here. The window's checkpoint is saved when due: here the answer is already out, so no
        request waits for it (the manager saves none inside a build).
        """
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
        if identity is None:
            return
        if status == 200 and outcome is None:
            self._file_turn(prepared, assistant, usage)
        # the build's own events (its settings, a batch) came between the history and the turn: read them now
        follow_to(self.store, identity.session_id, prepared.turn_seq)
        # the window as the last build or turn left it: no read
        self.manager.save_checkpoint(identity.session_id, policy=prepared.policy, catch_up=False)

    def close(self) -> None:
        """Write the remaining ledger rows."""
        self.accountant.close()

    def _append_turn(
        self, identity: Identity, assistant: AssistantMessage, usage: UsageReport | None, *, since: int
    ) -> list[Event]:
        """Append the answer's turn after seq ``since`` (after another worker's events, if any); the stored events."""
        digest = content_digest(assistant)
        for attempt in range(5):
            if attempt == 0:
                # first the usual case, without a read: nothing was appended since the request's own writes
                last, new = since, None
            else:
                info, new = header_and_events(self.store, identity.session_id, since_seq=since)
                last = info.last_seq
            # another worker may have served the client's next request first and taken this turn
            # from the client's copy of the history: then only the usage is still to file
            taken = _taken(new, digest) if new is not None and last > since else None
            events: list[Event] = [] if taken is not None else [assistant]
            if usage is not None:
                events.append(replace(usage, response_event_id=taken or assistant.id))
            if not events:
                return []
            try:
                return self.store.append(identity.session_id, events, expected_last_seq=last)
            except ConflictError:
                continue  # another worker appended in between; our turn goes after theirs
        return []


def _taken(events: Iterable[Event], digest: str) -> str | None:
    """The id of the assistant message among ``events`` whose content digests to ``digest``, if one is there."""
    return next((e.id for e in events if isinstance(e, AssistantMessage) and content_digest(e) == digest), None)


_MODEL = re.compile(rb'"model"\s*:\s*"([^"\\]{1,200})"')
"""A ``"model": "..."`` member, found by a scan that cannot fail on any body (the ledger's model column)."""


def fallback(fmt: str, raw: bytes, exc: Exception) -> Prepared:
    """A fall-back: the client's bytes go upstream unread (whatever broke the pipeline may break a parser too)."""
    prepared = Prepared(fmt=fmt, body=raw, outcome="fallback", note=f"{type(exc).__name__}: {exc}"[:300])
    if found := _MODEL.search(raw, 0, 4096):
        prepared.model = found.group(1).decode("utf-8", "replace")
    return prepared
