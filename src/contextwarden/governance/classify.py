"""Running the failure taxonomy (:mod:`.taxonomy`) over request logs and stored sessions."""

from __future__ import annotations

from collections.abc import Iterable

from ..assemble.manager import ContextPolicy
from ..log.store import SessionStore
from ..tokens import TokenCounter, best_counter
from ..window.policies.presets import CODING_TOOL_POLICIES
from ..window.state import StateBuilder
from ._contexts import ContextRequestOptions, request_from_context
from .requests import BadLine, Request
from .session import replay_session
from .taxonomy import Classifier, Failure, TaxonomyReport, TaxonomySettings

__all__ = ["classify_requests", "classify_session"]


def classify_requests(
    requests: Iterable[Request | BadLine],
    *,
    settings: TaxonomySettings | None = None,
    source: str = "",
    policy: ContextPolicy | None = None,
) -> TaxonomyReport:
    """Tag a stream of requests (a foreign log or replayed session) with context failures.

    ``policy``: the agent's policy, whose tool policies say which resource each call touches
    (default: the coding presets).
    """
    classifier = Classifier(
        settings, source=source, tool_policies=policy.tool_policies if policy else CODING_TOOL_POLICIES
    )
    for request in requests:
        if isinstance(request, Request):
            classifier.feed(request)
    return classifier.report()


def classify_session(
    store: SessionStore,
    session_id: str,
    *,
    model: str | None = None,
    settings: TaxonomySettings | None = None,
    policy: ContextPolicy | None = None,
    counter: TokenCounter | None = None,
) -> TaxonomyReport:
    """Tag the requests a fresh manager builds for a stored session (see :func:`replay_session`).

    On top of the request detectors: a turn that cannot be built is an OVERFLOW, and a failing test
    run or unresolved error the agent is still working on that is no longer in view is MISSING_EVIDENCE.
    Each turn is classified under the policy it was built with (``policy``, else the session's
    build record).
    """
    counter = counter or best_counter()
    classifier = Classifier(settings, source=f"session {session_id}")
    masked: set[str] = set()
    events = store.iter_events(session_id)
    state: StateBuilder | None = None
    for turn in replay_session(store, session_id, model=model, policy=policy, counter=counter):
        if state is None:  # the task state follows the tools as the session's own policy classifies them
            state = StateBuilder(policies=(turn.policy or policy or ContextPolicy()).tool_policies)
        for event in events:
            state.apply(event)
            if event.seq >= turn.seq - 1:
                break
        if turn.policy is not None:
            classifier.tool_policies = turn.policy.tool_policies
        if turn.context is None:
            classifier.tag(Failure.OVERFLOW, turn.turn, "request", turn.error)
            continue
        request = request_from_context(
            turn.context,
            number=turn.turn,
            counter=counter,
            options=ContextRequestOptions(window_events=turn.window_events),
        )
        classifier.feed(request)
        visible = {m.source_ids[0] for m in turn.context.messages if m.source_ids}
        masked.update(d.target for d in turn.context.decisions if d.action in ("mask", "clear"))  # this build's
        for evidence in sorted(state.state.evidence_ids):
            if evidence and (evidence not in visible or evidence in masked):
                classifier.tag(
                    Failure.MISSING_EVIDENCE,
                    turn.turn,
                    f"event {evidence}",
                    "output of a failing run or unresolved error is no longer in view",
                )
    return classifier.report()
