"""The planner: when to reduce the context and how much, knowing what the cache costs.

Every reduction rewrites the request from the first changed item on, so the provider must
re-read (and, with explicit caching, re-write) that part at full price once. Clearing ``X``
tokens whose first change sits ``P`` tokens into a cached tail pays back after about

    turns = (write - read) / read * (P - X) / X

later requests (each saves ``read * X``). The planner therefore waits and batches: it reduces
when the context passes the trigger (the hard budget always wins), or earlier when the pending
batch pays back within the turns the session is expected to still run. Lossless reductions
(superseded, stale, duplicate outputs) come first, then masking of old tool results and old
thinking; compaction is left to the caller as the last resort.
"""

from __future__ import annotations

import warnings
from dataclasses import InitVar, dataclass, field, replace
from typing import Any, Protocol

from ..context import Decision
from ..log.events import EVICTING_EDITS, ContextEdit
from ..models import ModelProfile
from .protection import Protection, WorkingSetFacts, protect


class ReductionPool(WorkingSetFacts, Protocol):
    """What the planner can reduce, kept up to date incrementally (``Projection`` implements it)."""

    def lossless_edits(self) -> list[ContextEdit]:
        """Recorded candidates: superseded, stale and duplicate outputs."""
        ...

    def mask_edits(self, keep_recent: int, protected: frozenset[str]) -> list[ContextEdit]:
        """Masking edits for tool results older than the last ``keep_recent``, oldest first."""
        ...

    def thinking_edits(self) -> list[ContextEdit]:
        """Edits dropping thinking blocks of turns before the latest user message."""
        ...

    def loss_key(self, edit: ContextEdit) -> tuple[int, int, int]:
        """Sort key of the order of loss under pressure (smallest goes first)."""
        ...

    def savings(self, edit: ContextEdit) -> int:
        """Tokens ``edit`` would take out."""
        ...

    def settled_tokens(self, protected: frozenset[str]) -> int:
        """Tokens no batch can change: pinned items, placeholders and the ``protected`` results."""
        ...

    def position(self, item_id: str) -> int:
        """Index of the item in the window."""
        ...

    def tail_tokens(self, position: int) -> int:
        """Tokens of the items from ``position`` to the end."""
        ...


@dataclass(frozen=True, kw_only=True)
class PlannerSettings:
    """Knobs of the planner (part of :class:`~contextwarden.assemble.manager.ContextPolicy`)."""

    keep_recent_tool_results: int = 1
    """Tool results newer than this many stay verbatim when masking; a tool policy's own ``keep_recent``
    raises the floor for its results. The first batch that evicts something rewrites the tool list, so
    batches come late and few; keeping more results then only costs more (docs/benchmarks.md, "Planner
    defaults and why")."""
    min_batch_tokens: int = 2_048
    """A voluntary batch must save at least this many tokens (the hard budget ignores it)."""
    min_batch_share: float = 0.45
    """...and, under a cache that charges a write premium (Anthropic's breakpoints), at least this share of
    what a batch could still change (the conversation less pinned items, placeholders and protected
    evidence; a share of everything would grow with what no batch can take out and starve batches late in
    a session). Every batch pays the premium again on what it rewrites, so few, large batches cost less.
    Under an automatic cache or none the payback rule alone holds batches back: a share there changed
    nothing measurable (docs/benchmarks.md, "Planner defaults and why")."""
    min_batch_share_automatic: InitVar[float | None] = None
    """Deprecated and without effect: no share applies without a write premium."""
    cache_aware: bool = True
    """Batch by payback; False reduces at every request as soon as something is reducible."""
    expected_turns: int | None = None
    """Turns the session is expected to still run; None estimates ``horizon_share`` of the turns so far (min 4
    turns)."""
    horizon_share: float = 0.4
    """Share of the turns so far a session is expected to still run, when ``expected_turns`` is None: a
    batch the session does not live to pay back costs more than keeping the cache, so the estimate is
    cautious (docs/benchmarks.md, "Planner defaults and why")."""
    drop_old_thinking: bool = True
    """Drop thinking blocks of turns before the latest user message."""
    mask: bool = True
    """Mask old tool results at all (False: only lossless reductions)."""
    protection: Protection = field(default_factory=Protection)
    """Which tool results stay verbatim: the task's evidence and the working set's reads (:mod:`.protection`)."""
    working_set_files: InitVar[int | None] = None
    """Deprecated: ``protection=Protection(working_set_files=N)``."""
    protect_modified_files: InitVar[int | None] = None
    """Deprecated: ``protection=Protection(modified_files=N)``."""
    protect_exploration_reads: InitVar[bool | None] = None
    """Deprecated: ``protection=Protection(exploration_reads=...)``."""
    protect_revisited_files: InitVar[bool | None] = None
    """Deprecated and without effect: the working set's reads are kept (``Protection.working_set_reads``),
    files the session came back to among them."""
    pressure_target: float = 0.6
    """Under pressure, mask down towards this share of the trigger."""
    uncovered_payback_turns: float = 8.0
    """A voluntary batch that would cost more than the window has saved against the raw history so far
    (plus 1% of the raw history's cost), were the session to end right after it, must pay back within
    this many turns instead of within the expected remaining turns (``plan/credit.py``; 0: never risk
    more; ``inf``: no limit). A session's first evicting batch is never covered. 8 keeps the generated
    replay sessions' batches and stops the late ones that left real SWE-bench sessions above 1.01x raw
    (docs/benchmarks.md, "A bound on what a batch can lose")."""

    def __post_init__(
        self,
        min_batch_share_automatic: float | None,
        working_set_files: int | None,
        protect_modified_files: int | None,
        protect_exploration_reads: bool | None,
        protect_revisited_files: bool | None,
    ) -> None:
        if min_batch_share_automatic is not None:
            warnings.warn(
                "PlannerSettings.min_batch_share_automatic has no effect: the payback rule alone holds batches "
                "back under a cache without a write premium",
                DeprecationWarning,
                stacklevel=3,
            )
        renamed = {
            "working_set_files": working_set_files,
            "modified_files": protect_modified_files,
            "exploration_reads": protect_exploration_reads,
        }
        # ``dataclasses.replace`` passes the old names back as read (``_Read``): those are no change.
        given: dict[str, Any] = {k: v for k, v in renamed.items() if v is not None and not isinstance(v, _Read)}
        if given or (protect_revisited_files is not None and not isinstance(protect_revisited_files, _Read)):
            warnings.warn(
                "PlannerSettings protection knobs moved to PlannerSettings(protection=Protection(...)) "
                "(working_set_files, modified_files, exploration_reads); protect_revisited_files has no effect",
                DeprecationWarning,
                stacklevel=3,
            )
        if given:
            object.__setattr__(self, "protection", replace(self.protection, **given))


class _Read(int):
    """A deprecated field's value as read: ``dataclasses.replace`` passes it back, which changes nothing."""


def _alias(name: str) -> property:
    """An old ``PlannerSettings`` field that reads its ``Protection`` value, for one release."""
    return property(lambda self: _Read(getattr(self.protection, name) if name else False))


# Without these the old names would read the InitVar's default (None) left on the class.
for _old, _new in (
    ("working_set_files", "working_set_files"),
    ("protect_modified_files", "modified_files"),
    ("protect_exploration_reads", "exploration_reads"),
    ("protect_revisited_files", ""),
):
    setattr(PlannerSettings, _old, _alias(_new))


@dataclass(frozen=True, kw_only=True)
class Plan:
    """What the planner decided for this request."""

    edits: tuple[ContextEdit, ...] = ()
    """The batch to record (empty: change nothing, keep the cache)."""
    reason: str = ""
    """Why, in words."""
    saved_tokens: int = 0
    """Tokens the batch takes out."""
    needs_compaction: bool = False
    """Still over the trigger after every edit: the caller should compact."""
    loss: float = 0.0
    """What a voluntary batch's request costs more than keeping the cache (uncached-price tokens)."""


def cache_prices(profile: ModelProfile) -> tuple[float, float]:
    """(write, read) price multipliers relative to uncached input for the profile's cache style."""
    base = profile.input_price or 1.0
    if profile.cache_style == "none" or not profile.cache_read_price:
        return 1.0, 1.0
    write = (profile.cache_write_price or profile.input_price or base) / base
    if profile.cache_style != "anthropic-breakpoints":
        write = 1.0  # automatic caches charge a miss at the normal input price
    return write, profile.cache_read_price / base


def payback_turns(*, rewritten: int, saved: int, write: float, read: float) -> float:
    """Later requests needed before clearing ``saved`` tokens beats keeping the cache."""
    if saved <= 0:
        return float("inf")
    if read >= write:
        return 0.0
    return (write - read) / read * max(rewritten - saved, 0) / saved


def batch_loss(*, rewritten: int, saved: int, write: float, read: float) -> float:
    """What a request rewriting ``rewritten`` tokens to save ``saved`` costs more than keeping the cache.

    In uncached-price tokens, were the session to end right after it (``plan/credit.py``).
    """
    return write * max(rewritten - saved, 0) - read * rewritten


def plan(
    pool: ReductionPool,
    *,
    total: int,
    trigger: int,
    profile: ModelProfile,
    turns_so_far: int,
    settings: PlannerSettings,
    evidence: frozenset[str] = frozenset(),
    kept: frozenset[str] = frozenset(),
    conversation_tokens: int | None = None,
    tools_join: bool = False,
    cut_pending: bool = False,
    credit: float | None = None,
) -> Plan:
    """Decide the next batch of reductions (see the module docstring).

    ``total`` is the whole request (system and tool schemas included) and is what the trigger
    compares; ``conversation_tokens`` is the conversation (default: ``total``), so the number of tools
    offered does not change when to batch; under a cache with a write premium ``min_batch_share`` is a
    share of it, less what no batch can change (pinned items, placeholders, the protected results).

    What stays verbatim is ``settings.protection`` applied to the pool's working set
    (:func:`~.protection.protect`): its evidence is never masked, only superseded by a newer result on
    the same thing; what it keeps a voluntary batch leaves alone, and pressure may mask. ``evidence``
    and ``kept`` add results of the caller's own to either. Every edit's saving is net (placeholder
    included) and positive.

    ``tools_join`` says tools join the tool list with the first batch that evicts something (the
    retrieval tools): tool schemas open the cached prefix, so that batch rewrites the whole request,
    and its payback counts ``total`` as rewritten rather than the tail from its first edit.
    ``cut_pending`` says an output cut at ingestion awaits them: any batch brings them, so the same holds.

    ``credit`` (see ``plan/credit.py``) is what a voluntary batch may cost more than keeping the cache,
    were the session to end right after it; a batch over it must pay back within
    ``uncovered_payback_turns``. None: no credit kept.
    """
    shield = protect(pool, settings.protection)
    evidence |= shield.evidence
    kept = (kept | shield.kept) - evidence
    lossless = pool.lossless_edits()
    pressure = total > trigger
    if not pressure:
        evidence |= kept
    skip = frozenset(e.target_id for e in lossless) | evidence
    masking: list[ContextEdit] = []
    if settings.mask:
        masking = pool.mask_edits(settings.keep_recent_tool_results, skip)
        if settings.drop_old_thinking:
            masking += pool.thinking_edits()
    if pressure:
        return _under_pressure(pool, lossless, masking, total=total, trigger=trigger, settings=settings)
    batch = lossless + masking
    saved = sum(pool.savings(e) for e in batch)
    conversation = total if conversation_tokens is None else conversation_tokens
    write, read = cache_prices(profile)
    # The floor is a share of what a batch can still change, so settled tokens (pinned items, placeholders,
    # protected evidence) do not starve batches late in a session. An explicit cache charges a write premium
    # on every batch, so only there a share holds batches back (fewer, larger ones).
    share = settings.min_batch_share if write > 1.0 else 0.0
    floor = max(settings.min_batch_tokens, int(share * max(conversation - pool.settled_tokens(evidence), 0)))
    if not batch or saved < floor:
        return Plan(reason=f"nothing worth a batch ({saved} tokens reducible, {floor} needed)")
    if not settings.cache_aware:
        return Plan(edits=tuple(batch), saved_tokens=saved, reason="reduce at every request (cache-unaware)")
    if tools_join and (cut_pending or any(e.action in EVICTING_EDITS for e in batch)):
        rewritten = total
    else:
        rewritten = pool.tail_tokens(min(pool.position(e.target_id) for e in batch))
    turns = payback_turns(rewritten=rewritten, saved=saved, write=write, read=read)
    horizon = settings.expected_turns
    if horizon is None:
        horizon = max(int(turns_so_far * settings.horizon_share), 4)
    loss = batch_loss(rewritten=rewritten, saved=saved, write=write, read=read)
    limit: float = horizon
    if credit is not None and loss > credit:  # what the window saved does not cover it: it must pay back soon
        limit = min(horizon, settings.uncovered_payback_turns)
    if turns <= limit:
        return Plan(
            edits=tuple(batch),
            saved_tokens=saved,
            reason=f"batch of {len(batch)} edits saves {saved} tokens; pays back in {turns:.1f} turns (<= {limit:g})",
            loss=loss,
        )
    return Plan(reason=f"waiting: {saved} tokens reducible but payback {turns:.1f} turns > {limit:g}")


def _under_pressure(
    pool: ReductionPool,
    lossless: list[ContextEdit],
    masking: list[ContextEdit],
    *,
    total: int,
    trigger: int,
    settings: PlannerSettings,
) -> Plan:
    batch = list(lossless)
    saved = sum(pool.savings(e) for e in batch)
    target = int(trigger * settings.pressure_target)
    # The order of loss follows the tiers (6 first), then working-set relevance, then age.
    for edit in sorted(masking, key=pool.loss_key):
        if total - saved <= target:
            break
        batch.append(edit)
        saved += pool.savings(edit)
    needs = total - saved > trigger
    reason = f"over the trigger ({total} > {trigger}): {len(batch)} edits save {saved} tokens"
    if needs:
        reason += "; still over, compaction needed"
    return Plan(edits=tuple(batch), saved_tokens=saved, reason=reason, needs_compaction=needs)


def plan_of(decision: Plan) -> Decision:
    """The decision-log entry of the planner's verdict (why it reduced now, or did not)."""
    return Decision(action="plan", target="", reason=decision.reason)
