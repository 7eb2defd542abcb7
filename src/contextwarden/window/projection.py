"""Projection: the events of the current window become context items, one event at a time.

Every transformation here happens *at ingestion* and depends only on the event and what came
before it, so an item never changes later unless a recorded window event (a context-edit batch
or a compaction) says so. That is what keeps request t+1 a byte-for-byte extension of request t.

The pieces, each in its own module: the item list (:mod:`~contextwarden.window.items`), the lifecycle
that detects superseded and stale results (:mod:`~contextwarden.window.lifecycle`), token accounting
(:mod:`~contextwarden.window.accounting`) and the edit queue the planner draws from
(:mod:`~contextwarden.window.editqueue`), and ingestion, which bounds and counts each event's item
(:mod:`~contextwarden.window.ingest`). This module only feeds events to them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ..context import Decision, Message, tool_message
from ..fragments import DEFAULT_REGISTRY
from ..log.events import (
    AssistantMessage,
    Compaction,
    ContextEdit,
    ContextEditBatch,
    Event,
    Instruction,
    Pin,
    Steering,
    ToolCall,
    ToolResult,
    ToolSetChange,
    UsageReport,
    UserMessage,
)
from .accounting import Estimate, NormalizedPrefix, anchored_estimate, message_tokens
from .conflicts import overrides
from .editqueue import EditQueue, ToolRecord
from .ingest import MAX_ARGUMENT_CHARS, ProjectionConfig, bound_assistant, bounded_text, message_item
from .injected import dynamic_prefix, escape_unregistered
from .items import REDUCED, ContextItem, ItemList, Tier
from .lifecycle import ResourceLedger
from .pointers import points_back, read_pointer
from .policies.placeholders import extract_sources
from .policies.presets import apply_policy, policy_for
from .policies.resources import as_shown, resources_of
from .references import Twins
from .state import StateBuilder, TaskState

__all__ = ["MAX_ARGUMENT_CHARS", "Projection", "ProjectionConfig", "message_tokens"]


class Projection:
    """The items of one window, updated incrementally with :meth:`add`.

    Start it from the window's compaction (or None for a session never compacted), then feed it
    the window's events in seq order. ``total`` is kept up to date, so measuring costs nothing.
    """

    def __init__(self, config: ProjectionConfig, *, compaction: Compaction | None = None) -> None:
        self.config = config
        self.list = ItemList()
        self.last_seq = 0
        self.compaction = compaction
        base = TaskState.from_dict(compaction.state) if compaction is not None else None
        self.state_builder = StateBuilder(base, policies=config.tool_policies)
        self.system_parts: list[str] = list(base.system) if base else []
        self.exposed_tools: tuple[str, ...] | None = None
        self.decisions: list[Decision] = []
        self.cuts_offered = False
        """A context-edit batch came after a cut at ingestion: the retrieval tools are offered for it."""
        self.held_frontier: dict[bool, str] = {}
        """The item at the frontier (with and without thinking) as it stood before the latest batch of edits."""
        self.last_usage: UsageReport | None = None
        self.tokens_at_last_usage = 0
        self.assistant_turns = 0
        self._calls: dict[str, ToolCall] = {}
        self._ledger = ResourceLedger()
        self.twins = Twins(config, self.list, self._ledger)
        self.queue = EditQueue(self.list, config.counter, self._calls, retrievable=config.retrieval, twins=self.twins)
        self._prefix = NormalizedPrefix(config.counter)
        self._seen_user = bool(base and base.goal)
        if compaction is not None:
            details = compaction.details.get("exposed_tools")
            if isinstance(details, list):
                self.exposed_tools = tuple(str(x) for x in details)

    # ------------------------------------------------------------------ reading

    @property
    def items(self) -> list[ContextItem]:
        """The window's items, in order (read-only: change them through recorded edits)."""
        return self.list.items

    @property
    def total(self) -> int:
        """Tokens of every item."""
        return self.list.total

    @property
    def candidates(self) -> dict[str, ContextEdit]:
        """Lossless edits detected and not yet applied, by target id."""
        return self.queue.candidates

    @property
    def state(self) -> TaskState:
        """The derived task state after every event added so far."""
        return self.state_builder.state

    @property
    def system(self) -> str:
        """The stable system text: leading instructions, in order."""
        return "\n\n".join(self.system_parts)

    def item(self, item_id: str) -> ContextItem | None:
        """The item with that id, if it is in the window."""
        return self.list.get(item_id)

    def normalized(self) -> tuple[tuple[Message, ...], tuple[Decision, ...], dict[str, int]]:
        """The items' messages, pairing-normalized, their decisions and tokens per section.

        O(new items) per call: only the part after the settled prefix is normalized and measured.
        """
        return self._prefix.normalized(self.list.items)

    def estimate(self, fixed_tokens: int) -> Estimate:
        """The next request's size (``fixed_tokens``: system and tool schemas), anchored on usage."""
        return anchored_estimate(
            counted=fixed_tokens + self.total,
            window_tokens=self.total,
            usage=self.last_usage,
            tokens_at_usage=self.tokens_at_last_usage,
            window_opened_seq=self.compaction.seq if self.compaction is not None else 0,
        )

    # ------------------------------------------------------------------ the planner's pool

    def lossless_edits(self) -> list[ContextEdit]:
        """Recorded candidates (superseded, stale, duplicate), in detection order."""
        return self.queue.lossless_edits()

    def mask_edits(self, keep_recent: int, protected: frozenset[str]) -> list[ContextEdit]:
        """Masking edits for tool results past the ``keep_recent`` and per-policy floors, oldest first."""
        return self.queue.mask_edits(keep_recent, protected)

    def thinking_edits(self) -> list[ContextEdit]:
        """Edits dropping the thinking of assistant turns before the latest user message."""
        return self.queue.thinking_edits()

    def loss_key(self, edit: ContextEdit) -> tuple[int, int, int]:
        """Order of loss under pressure: tier, then working-set relevance, then age."""
        return self.queue.loss_key(edit, self.state.working_set)

    def savings(self, edit: ContextEdit) -> int:
        """Tokens ``edit`` would take out of the window."""
        return self.queue.savings(edit)

    def settled_tokens(self, protected: frozenset[str]) -> int:
        """Tokens no batch can change: pinned items, placeholders and the ``protected`` results."""
        kept = (self.list.get(i) for i in protected)
        unsettled = (i for i in kept if i is not None and not i.pinned and i.state not in REDUCED)
        return self.list.settled + sum(i.tokens for i in unsettled)

    def position(self, item_id: str) -> int:
        """Index of the item in the window."""
        return self.list.position(item_id)

    def tail_tokens(self, position: int) -> int:
        """Tokens of the items from ``position`` on."""
        return self.list.tail_tokens(position)

    def mask_edit(self, item_id: str, reason: str) -> ContextEdit | None:
        """The edit that masks a tool result for age or space (None for anything else)."""
        return self.queue.mask_edit(item_id, reason)

    def frontier(self, *, thinking: bool = True) -> int | None:
        """Position of the first item a pending or possible edit can change (see :mod:`.editqueue`)."""
        return self.queue.frontier(thinking=thinking)

    @property
    def task_files(self) -> tuple[str, ...]:
        """Working-set files the task names or an unresolved failure involves."""
        return self.state_builder.task_files

    def latest_read(self, key: str) -> str | None:
        """The id of the latest read of file ``key`` that no later write made stale, if any."""
        return self._ledger.latest_read(key)

    def recent_tool_results(self, count: int) -> list[str]:
        """Ids of the last ``count`` tool results, oldest first."""
        return self.queue.recent_tool_results(count)

    def pointed_files(self) -> list[str]:
        """Files a result still shown points back to: their latest read is what the model is told to use."""
        return self._ledger.pointed_files(self.list)

    # ------------------------------------------------------------------ events

    def add_blocks(self, blocks: Sequence[ContextItem]) -> None:
        """Put items made outside the event stream (a compaction's pinned block and summary)."""
        for block in blocks:
            self._push(block)

    def add(self, event: Event) -> None:
        """Project one event (in seq order)."""
        self.last_seq = max(self.last_seq, event.seq)
        self.state_builder.apply(event)
        if isinstance(event, Instruction):
            self._add_instruction(event)
        elif isinstance(event, UserMessage):
            self._add_user(event)
        elif isinstance(event, (Steering, Pin)):
            self._add_pinned_text(event)
        elif isinstance(event, AssistantMessage):
            self._add_assistant(event)
        elif isinstance(event, ToolResult):
            self._add_tool_result(event)
        elif isinstance(event, ContextEditBatch):
            self.cuts_offered = self.cuts_offered or any(d.action == "truncate" for d in self.decisions)
            self.apply_edits(event.edits, seq=event.seq)
        elif isinstance(event, ToolSetChange):
            self.exposed_tools = event.exposed
        elif isinstance(event, UsageReport):
            self.last_usage = event
            self.tokens_at_last_usage = self.total

    def apply_edits(self, edits: Sequence[ContextEdit], *, seq: int = 0) -> None:
        """Apply recorded edits: the targets render as their replacements from now on."""
        # Requests before this batch cached their prefix up to the frontier; the batch moves the
        # frontier on, often by more than a provider's lookback (Anthropic: 20 blocks), so a boundary
        # kept at the old one is what lets the next request read that prefix.
        for thinking in (False, True):
            held = self.queue.frontier(thinking=thinking)
            if held is None:
                self.held_frontier.pop(thinking, None)
            else:
                self.held_frontier[thinking] = self.list.items[held].id
        for position, decision in self.queue.apply(edits):
            self._prefix.invalidate(position)
            self.decisions.append(decision)

    def _push(self, item: ContextItem) -> None:
        role = item.message.role
        position = self.list.push(item)
        if role == "assistant":
            self.assistant_turns += 1
            self.queue.add_assistant(item)
        elif role == "user" and item.kind == "user" and (item.message.text.strip() or item.message.parts):
            self.queue.add_user(position)  # a turn's old thinking may go once the user speaks again

    def _flag(self, decision: Decision | None) -> None:
        if decision is not None:
            self.decisions.append(decision)

    def _bounded_text(self, text: str, artifact_id: str) -> tuple[str, bool, int]:
        text, truncated, original, decision = bounded_text(text, artifact_id, self.config)
        if decision is not None:
            self.decisions.append(decision)
        return text, truncated, original

    def _message_item(
        self, event: Event, message: Message, *, text_tokens: int | None = None, **fields: object
    ) -> ContextItem:
        return message_item(event, message, self.config.counter, text_tokens=text_tokens, **fields)

    def _add_instruction(self, event: Instruction) -> None:
        text, truncated, original = self._bounded_text(event.text, event.id)
        if not self._seen_user and not self.list.items:
            self._flag(dynamic_prefix(text, event.id))
            self.system_parts.append(text)
            return
        text, escaped = escape_unregistered(text, event.id)
        self._flag(escaped)
        truncated = truncated or escaped is not None
        message = Message(
            role="developer" if event.role == "developer" else "system",
            text=text,
            section="instructions",
            source_ids=(event.id,),
        )
        counted = None if truncated else original
        self._push(self._message_item(event, message, text_tokens=counted, tier=Tier.SYSTEM))

    def _add_user(self, event: UserMessage) -> None:
        text, truncated, original = self._bounded_text(event.text, event.id)
        goal = not self._seen_user and event.speaks
        escaped = None
        if not goal:  # the task as the person gave it is pinned verbatim (a SWE task's <pr_description> too)
            text, escaped = escape_unregistered(text, event.id)
            self._flag(escaped)
        note = overrides(event.text, self.list.items)
        if note:
            text = f"{text}\n{note}"
        self._seen_user = self._seen_user or event.speaks
        message = Message(role="user", text=text, parts=event.parts, opaque=event.opaque, source_ids=(event.id,))
        tier = Tier.GOAL if goal else Tier.HISTORY
        counted = None if truncated or note or escaped else original
        self._push(
            self._message_item(
                event, message, text_tokens=counted, tier=tier, truncated=truncated, original_tokens=original
            )
        )

    def _add_pinned_text(self, event: Steering | Pin) -> None:
        if isinstance(event, Steering):
            fragment = DEFAULT_REGISTRY.render("steering", event.text, self.config.counter)
        else:
            fragment = DEFAULT_REGISTRY.render("pinned_note", f"{event.label}: {event.text}", self.config.counter)
        note = overrides(event.text, self.list.items)
        message = Message(
            role="user", text=f"{fragment.text}\n{note}" if note else fragment.text, source_ids=(event.id,)
        )
        self._push(self._message_item(event, message, tier=Tier.GOAL))

    def _add_assistant(self, event: AssistantMessage) -> None:
        text, truncated, original, calls, decisions = bound_assistant(event, self.config)
        self.decisions += decisions
        for call in event.tool_calls:
            self._calls[call.id] = call
        message = Message(
            role="assistant",
            text=text,
            thinking=event.thinking,
            tool_calls=tuple(calls),
            opaque=event.opaque,
            source_ids=(event.id,),
        )
        self._push(self._message_item(event, message, text_tokens=None if truncated else original))

    def _add_tool_result(self, event: ToolResult) -> None:
        call = self._calls.get(event.call_id)
        policy = policy_for(event.tool_name, call, self.config.tool_policies)
        cut = apply_policy(
            event.output,
            policy,
            counter=self.config.counter,
            artifact_id=event.id,
            max_tokens=self.config.max_item_tokens,
            retrievable=self.config.retrieval,
        )
        if cut.truncated:
            self.decisions.append(
                Decision(
                    action="truncate",
                    target=event.id,
                    reason=f"{event.tool_name} output of {cut.original_tokens} tokens, {cut.original_lines} lines "
                    f"cut to {policy.max_tokens} tokens at ingestion ({policy.name} policy)",
                    tokens_saved=max(cut.original_tokens - policy.max_tokens, 0),
                )
            )
        resources = as_shown(resources_of(call, policy.category), event.output) if call is not None else ()
        if points_back(event.output):  # a client's note sending the model back to an earlier read
            found = read_pointer(event, resources, self.list.items, policy, self.config)
            self.decisions.extend(found.decisions)
            self._ledger.point(event.id, found.pointed)
            cut, resources = found.cut or cut, found.resources
        twin = self.twins.arrival(event, policy.name, cut, resources, self.queue.candidates, self.decisions)
        text = cut.text if twin is None else twin.text
        proposals, notes = self._ledger.observe(
            event, call, resources, policy, self.list, self.queue.shrinkable, twin=twin.twin_id if twin else None
        )
        if notes:
            text = f"{text}\n{notes}"
        message = tool_message(event, text)
        item = self._message_item(
            event,
            message,
            text_tokens=cut.original_tokens if text is cut.text and not cut.truncated else None,
            tier=policy.tier,
            evictable=True,
            resources=resources,
            truncated=cut.truncated,
            original_tokens=cut.original_tokens,
        )
        self._push(item)
        sources = extract_sources(event.output) if policy.keep_sources else ()
        record = ToolRecord(
            stub=replace(event, output=""),
            call=call,
            lines=cut.original_lines,
            policy=policy,
            sources=sources,
            odd_lines=cut.odd_lines,
        )
        self.queue.add_tool_result(item, record)
        for proposal in proposals:
            self.queue.propose(proposal)
