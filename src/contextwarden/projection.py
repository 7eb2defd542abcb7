"""Projection: the events of the current window become context items, one event at a time.

Every transformation here happens *at ingestion* and depends only on the event and what came
before it, so an item never changes later unless a recorded window event (a context-edit batch
or a compaction) says so. That is what keeps request t+1 a byte-for-byte extension of request t.

Supersession and staleness are *detected* here (as candidate edits with their placeholders);
the planner decides when to apply them, as one recorded batch.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, replace

from .context import Decision, Message
from .events import (
    AssistantMessage,
    Compaction,
    ContextEdit,
    ContextEditBatch,
    Event,
    Instruction,
    JSONValue,
    Pin,
    Steering,
    ToolCall,
    ToolResult,
    ToolSetChange,
    UsageReport,
    UserMessage,
)
from .fragments import DEFAULT_REGISTRY
from .items import ContextItem, Lifecycle, Tier
from .pairing import normalize_pairing
from .policies.placeholders import masked_placeholder, stale_placeholder, superseded_placeholder
from .policies.presets import ToolPolicy, apply_policy, policy_for
from .policies.resources import Resource, covers, resources_of
from .policies.truncate import truncate_output
from .state import StateBuilder, TaskState
from .tokens import IMAGE_TOKENS, MESSAGE_OVERHEAD, TOOL_CALL_OVERHEAD, TokenCounter

MAX_ARGUMENT_CHARS = 8_000
"""A string tool-call argument longer than this is cut in the middle with a marker."""
_REDUCED = frozenset({Lifecycle.MASKED, Lifecycle.SUPERSEDED, Lifecycle.STALE})


@dataclass(frozen=True, kw_only=True)
class ProjectionConfig:
    """How events are projected."""

    counter: TokenCounter
    """Counts every item once, at ingestion."""
    tool_policies: Sequence[ToolPolicy]
    """Per-tool normalize/truncate/retain rules."""
    max_item_tokens: int = 10_000
    """Hard cap of every item (seed 003 rule 4)."""


def message_tokens(message: Message, counter: TokenCounter) -> int:
    """Tokens of one message: its text, thinking and tool calls, plus framing overhead."""
    n = MESSAGE_OVERHEAD + counter.count(message.text) if message.text else MESSAGE_OVERHEAD
    for block in message.thinking:
        n += counter.count(block.text) + (len(block.signature) // 4)
    for call in message.tool_calls:
        n += TOOL_CALL_OVERHEAD + counter.count(call.name) + counter.count(_args_json(call.arguments))
    for part in message.parts:
        n += IMAGE_TOKENS if part.media_type.startswith("image/") else 16
    for item in message.opaque:  # encrypted or unknown provider items: about 4 bytes a token
        n += len(item.raw_json) // 4
    return n


def _args_json(arguments: dict[str, JSONValue]) -> str:
    raw = arguments.get("_raw") if len(arguments) == 1 else None
    if isinstance(raw, str):
        return raw
    return json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))


def _bound_arguments(call: ToolCall) -> tuple[ToolCall, bool]:
    """Cut oversized string arguments in the middle so no assistant item is unbounded."""
    changed = False
    bounded: dict[str, JSONValue] = {}
    for key, value in call.arguments.items():
        if isinstance(value, str) and len(value) > MAX_ARGUMENT_CHARS:
            half = MAX_ARGUMENT_CHARS // 2
            cut = len(value) - 2 * half
            value = f"{value[:half]}\n[... {cut} characters of this argument omitted ...]\n{value[-half:]}"
            changed = True
        bounded[key] = value
    return (replace(call, arguments=bounded) if changed else call), changed


class Projection:
    """The items of one window, updated incrementally with :meth:`add`.

    Start it from the window's compaction (or None for a session never compacted), then feed it
    the window's events in seq order. ``total`` is kept up to date, so measuring costs nothing.
    """

    def __init__(self, config: ProjectionConfig, *, compaction: Compaction | None = None) -> None:
        self.config = config
        self.items: list[ContextItem] = []
        self.total = 0
        self.last_seq = 0
        self.compaction = compaction
        base = TaskState.from_dict(compaction.state) if compaction is not None else None
        self.state_builder = StateBuilder(base)
        self.system_parts: list[str] = list(base.system) if base else []
        self.exposed_tools: tuple[str, ...] | None = None
        self.candidates: dict[str, ContextEdit] = {}
        self.decisions: list[Decision] = []
        self.last_usage: UsageReport | None = None
        self.tokens_at_last_usage = 0
        self._pos: dict[str, int] = {}
        self._calls: dict[str, ToolCall] = {}
        self._readers: dict[str, list[str]] = {}
        self._writers: dict[str, list[str]] = {}
        self._runs: dict[str, list[str]] = {}
        self._fingerprints: dict[str, str] = {}
        self._results: dict[str, tuple[ToolResult, int]] = {}
        self._seen_user = bool(base and base.goal)
        self.assistant_turns = 0
        # Pairing normalization is group-local, so the prefix up to the start of the last group
        # normalizes once and is reused; an edit inside it resets the cache.
        self._settled: list[Message] = []
        self._settled_decisions: list[Decision] = []
        self._settled_upto = 0
        self._settled_sections: dict[str, int] = {}
        self._settled_ids: set[str] = set()  # call ids the settled messages use (pairing keeps ids unique)
        self._tool_ids: list[str] = []
        self._tool_floor = 0
        self._thinking_ids: list[str] = []
        self._thinking_floor = 0
        self._last_user_pos = -1
        self._mask_cache: dict[str, ContextEdit | None] = {}
        self._savings_cache: dict[tuple[str, str], int] = {}
        self._cum: list[int] = []
        self._cum_valid = 0
        if compaction is not None:
            details = compaction.details.get("exposed_tools")
            if isinstance(details, list):
                self.exposed_tools = tuple(str(x) for x in details)

    # ------------------------------------------------------------------ public

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
        pos = self._pos.get(item_id)
        return self.items[pos] if pos is not None else None

    def normalized(self) -> tuple[tuple[Message, ...], tuple[Decision, ...], dict[str, int]]:
        """The items' messages, pairing-normalized, their decisions and tokens per section.

        O(new items) per call: only the part after the settled prefix is normalized and measured.
        """
        items = self.items
        boundary = len(items) - 1
        while boundary > self._settled_upto and items[boundary].message.role == "tool":
            boundary -= 1
        if boundary > self._settled_upto:
            done, decisions = normalize_pairing(
                [i.message for i in items[self._settled_upto : boundary]], used_ids=self._settled_ids
            )
            self._settled.extend(done)
            self._settled_decisions.extend(decisions)
            self._settled_upto = boundary
            self._add_sections(self._settled_sections, done)
        tail, tail_decisions = normalize_pairing(
            [i.message for i in items[self._settled_upto :]], used_ids=set(self._settled_ids)
        )
        sections = dict(self._settled_sections)
        self._add_sections(sections, tail)
        return (*self._settled, *tail), (*self._settled_decisions, *tail_decisions), sections

    def _add_sections(self, sections: dict[str, int], messages: Sequence[Message]) -> None:
        for m in messages:
            sections[m.section] = sections.get(m.section, 0) + (m.tokens or message_tokens(m, self.config.counter))

    # ------------------------------------------------------------------ the planner's pool

    def lossless_edits(self) -> list[ContextEdit]:
        """Recorded candidates (superseded, stale, duplicate), in detection order."""
        return list(self.candidates.values())

    def mask_edits(self, keep_recent: int, protected: frozenset[str]) -> list[ContextEdit]:
        """Masking edits for tool results older than the last ``keep_recent``, oldest first.

        A floor skips the prefix that is already reduced, so a call costs O(results still
        pending), not O(window).
        """
        end = max(len(self._tool_ids) - max(keep_recent, 0), 0)
        edits: list[ContextEdit] = []
        advancing = True
        for n in range(self._tool_floor, end):
            item_id = self._tool_ids[n]
            item = self.items[self._pos[item_id]]
            if item.state in _REDUCED:
                if advancing:
                    self._tool_floor = n + 1
                continue
            advancing = False
            if item_id in protected:
                continue
            if item_id not in self._mask_cache:
                edit = self.mask_edit(item_id, f"older than the last {keep_recent} tool results")
                worth = edit is not None and item.tokens > len(edit.replacement) // 2 + 16
                self._mask_cache[item_id] = edit if worth else None
            cached = self._mask_cache[item_id]
            if cached is not None:
                edits.append(cached)
        return edits

    def thinking_edits(self) -> list[ContextEdit]:
        """Edits dropping the thinking of assistant turns before the latest user message."""
        edits: list[ContextEdit] = []
        advancing = True
        for n in range(self._thinking_floor, len(self._thinking_ids)):
            item_id = self._thinking_ids[n]
            pos = self._pos[item_id]
            if pos > self._last_user_pos:
                break
            if not self.items[pos].message.thinking:
                if advancing:
                    self._thinking_floor = n + 1
                continue
            advancing = False
            edits.append(
                ContextEdit(
                    target_id=item_id, action="drop_thinking", replacement="", reason="thinking of an earlier turn"
                )
            )
        return edits

    def protected_ids(self, working_set_files: int) -> frozenset[str]:
        """Tool results never masked.

        The task's evidence (failing tests, unresolved errors) and the latest read of each of the
        ``working_set_files`` most relevant files.
        """
        state = self.state
        latest = (self._readers.get(key, [])[-1:] for key in state.working_set[:working_set_files])
        return state.evidence_ids | frozenset(i for ids in latest for i in ids)

    def frontier(self) -> int | None:
        """Position of the oldest tool result still shown verbatim (None when there is none).

        The next batch starts rewriting there, so a cache breakpoint just before it keeps
        everything older cached.
        """
        for n in range(self._tool_floor, len(self._tool_ids)):
            item = self.items[self._pos[self._tool_ids[n]]]
            if item.state not in _REDUCED:
                return self._pos[item.id]
        return None

    def savings(self, edit: ContextEdit) -> int:
        """Tokens ``edit`` would take out of the window (cached: pending edits are asked every call)."""
        key = (edit.target_id, edit.action)
        cached = self._savings_cache.get(key)
        if cached is not None:
            return cached
        item = self.item(edit.target_id)
        if item is None:
            return 0
        if edit.action == "drop_thinking":
            reduced = item.message.without_thinking()
        else:
            reduced = replace(item.message, text=edit.replacement, parts=())
        saved = max(item.tokens - message_tokens(reduced, self.config.counter), 0)
        self._savings_cache[key] = saved
        return saved

    def position(self, item_id: str) -> int:
        """Index of the item in the window."""
        return self._pos[item_id]

    def tail_tokens(self, position: int) -> int:
        """Tokens of the items from ``position`` on (prefix sums, rebuilt only after edits)."""
        if self._cum_valid < len(self.items):
            running = self._cum[self._cum_valid - 1] if self._cum_valid else 0
            del self._cum[self._cum_valid :]
            for item in self.items[self._cum_valid :]:
                running += item.tokens
                self._cum.append(running)
            self._cum_valid = len(self.items)
        before = self._cum[position - 1] if position > 0 else 0
        return self.total - before

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
            self.apply_edits(event.edits, seq=event.seq)
        elif isinstance(event, ToolSetChange):
            self.exposed_tools = event.exposed
        elif isinstance(event, UsageReport):
            self.last_usage = event
            self.tokens_at_last_usage = self.total

    def apply_edits(self, edits: Sequence[ContextEdit], *, seq: int = 0) -> None:
        """Apply recorded edits: the targets render as their replacements from now on."""
        for edit in edits:
            pos = self._pos.get(edit.target_id)
            self.candidates.pop(edit.target_id, None)
            if pos is None:
                continue
            if pos < self._settled_upto:
                self._settled, self._settled_decisions, self._settled_upto = [], [], 0
                self._settled_sections = {}
                self._settled_ids = set()
            self._cum_valid = min(self._cum_valid, pos)
            self._mask_cache.pop(edit.target_id, None)
            for action in ("mask", "supersede", "stale", "clear", "drop_thinking"):
                self._savings_cache.pop((edit.target_id, action), None)
            item = self.items[pos]
            if edit.action == "drop_thinking":
                message = item.message.without_thinking()
                state = item.state
            else:
                message = replace(item.message, text=edit.replacement, parts=())
                state = {
                    "supersede": Lifecycle.SUPERSEDED,
                    "stale": Lifecycle.STALE,
                }.get(edit.action, Lifecycle.MASKED)
            tokens = message_tokens(message, self.config.counter)
            message = replace(message, tokens=tokens)
            self.total += tokens - item.tokens
            self.items[pos] = replace(item, message=message, tokens=tokens, state=state, evictable=False)
            self.decisions.append(
                Decision(
                    action=edit.action, target=edit.target_id, reason=edit.reason, tokens_saved=item.tokens - tokens
                )
            )

    # ------------------------------------------------------------------ events

    def _push(self, item: ContextItem) -> None:
        role = item.message.role
        if role == "assistant":
            self.assistant_turns += 1
            if item.message.thinking:
                self._thinking_ids.append(item.id)
        elif role == "tool":
            self._tool_ids.append(item.id)
        elif role == "user" and item.kind == "user":
            self._last_user_pos = len(self.items)
        self._pos[item.id] = len(self.items)
        self.items.append(item)
        self.total += item.tokens

    def _bounded_text(self, text: str, artifact_id: str, max_tokens: int | None = None) -> tuple[str, bool, int]:
        limit = min(max_tokens or self.config.max_item_tokens, self.config.max_item_tokens)
        cut = truncate_output(text, max_tokens=limit, counter=self.config.counter, artifact_id=artifact_id)
        if cut.truncated:
            self.decisions.append(
                Decision(
                    action="truncate",
                    target=artifact_id,
                    reason=f"output of {cut.original_tokens} tokens cut to {limit} at ingestion",
                    tokens_saved=cut.original_tokens - limit,
                )
            )
        return cut.text, cut.truncated, cut.original_tokens

    def _message_item(self, event: Event, message: Message, **fields: object) -> ContextItem:
        tokens = message_tokens(message, self.config.counter)
        message = replace(message, tokens=tokens)
        base: dict[str, object] = {
            "id": event.id,
            "kind": event.kind,
            "message": message,
            "tokens": tokens,
            "tier": Tier.HISTORY,
            "source_ids": (event.id,),
            "recency": event.seq,
            "original_tokens": tokens,
        }
        base.update(fields)
        return ContextItem(**base)  # type: ignore[arg-type]

    def _add_instruction(self, event: Instruction) -> None:
        text, _, _ = self._bounded_text(event.text, event.id)
        if not self._seen_user and not self.items:
            self.system_parts.append(text)
            return
        message = Message(
            role="developer" if event.role == "developer" else "system",
            text=text,
            section="instructions",
            source_ids=(event.id,),
        )
        self._push(self._message_item(event, message, tier=Tier.SYSTEM, pinned=True, compressible=False))

    def _add_user(self, event: UserMessage) -> None:
        text, truncated, original = self._bounded_text(event.text, event.id)
        goal = not self._seen_user
        self._seen_user = True
        message = Message(role="user", text=text, parts=event.parts, opaque=event.opaque, source_ids=(event.id,))
        self._push(
            self._message_item(
                event,
                message,
                tier=Tier.GOAL if goal else Tier.HISTORY,
                pinned=goal,
                compressible=not goal,
                truncated=truncated,
                original_tokens=original,
            )
        )

    def _add_pinned_text(self, event: Steering | Pin) -> None:
        if isinstance(event, Steering):
            fragment = DEFAULT_REGISTRY.render("steering", event.text, self.config.counter)
        else:
            fragment = DEFAULT_REGISTRY.render("pinned_note", f"{event.label}: {event.text}", self.config.counter)
        message = Message(role="user", text=fragment.text, source_ids=(event.id,))
        self._push(self._message_item(event, message, tier=Tier.GOAL, pinned=True, compressible=False))

    def _add_assistant(self, event: AssistantMessage) -> None:
        calls: list[ToolCall] = []
        for call in event.tool_calls:
            bounded, changed = _bound_arguments(call)
            if changed:
                self.decisions.append(
                    Decision(
                        action="truncate",
                        target=event.id,
                        reason=f"oversized arguments of call {call.id} cut in the middle",
                    )
                )
            self._calls[call.id] = call
            calls.append(bounded)
        text, _, _ = self._bounded_text(event.text, event.id)
        message = Message(
            role="assistant",
            text=text,
            thinking=event.thinking,
            tool_calls=tuple(calls),
            opaque=event.opaque,
            source_ids=(event.id,),
        )
        self._push(self._message_item(event, message))

    def _add_tool_result(self, event: ToolResult) -> None:
        call = self._calls.get(event.call_id)
        policy = policy_for(event.tool_name, call, self.config.tool_policies)
        cut = apply_policy(
            event.output,
            policy,
            counter=self.config.counter,
            artifact_id=event.id,
            max_tokens=self.config.max_item_tokens,
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
        text, truncated, original = cut.text, cut.truncated, cut.original_tokens
        self._results[event.id] = (replace(event, output=""), cut.original_lines)
        resources = resources_of(call, policy.category) if call is not None else ()
        notes = self._detect_supersession(event, call, resources)
        if notes:
            text = f"{text}\n{notes}"
        for part in event.parts:
            text += f"\n[attachment: {part.media_type}, {len(part.data)} bytes, artifact {event.id}]"
        message = Message(
            role="tool",
            text=text,
            tool_call_id=event.call_id,
            tool_name=event.tool_name,
            is_error=event.is_error,
            parts=event.parts,
            section="tool_output",
            source_ids=(event.id,),
        )
        self._push(
            self._message_item(
                event,
                message,
                tier=Tier.RECENT_TOOL,
                evictable=True,
                resources=resources,
                truncated=truncated,
                original_tokens=original,
            )
        )

    def mask_edit(self, item_id: str, reason: str) -> ContextEdit | None:
        """The edit that masks a tool result for age or space (None for anything else)."""
        entry = self._results.get(item_id)
        if entry is None:
            return None
        stub, lines = entry
        item = self.item(item_id)
        tokens = item.original_tokens if item is not None else 0
        text = masked_placeholder(self._calls.get(stub.call_id), stub, tokens=tokens, lines=lines, reason=reason)
        return ContextEdit(target_id=item_id, action="mask", replacement=text, reason=f"masked: {reason}")

    # ------------------------------------------------------------------ supersession

    def _detect_supersession(self, event: ToolResult, call: ToolCall | None, resources: tuple[Resource, ...]) -> str:
        """Record candidate edits for older items this result supersedes or makes stale.

        Returns a note for this result's own text when it makes an earlier read stale, so no
        request presents the old version as current even before the planner masks it.
        """
        notes: list[str] = []
        failed = event.is_error or event.exit_code not in (None, 0)
        for r in resources:
            if r.kind == "file" and r.access == "write" and not failed:
                older = self._readers.pop(r.key, []) + self._writers.get(r.key, [])
                self._writers[r.key] = [event.id]
                for old in older:
                    self._candidate(old, "stale", stale_placeholder, event, r.key)
                if older:
                    seqs = ", ".join(str(self.items[self._pos[o]].recency) for o in older if o in self._pos)
                    notes.append(f"[note: {r.key} changed; its earlier output at seq {seqs} is out of date]")
            elif r.kind == "file" and r.access == "read" and not failed:
                remaining = []
                for old in self._readers.get(r.key, []):
                    if any(covers(r, o) for o in self._resources_of(old) if o.key == r.key):
                        self._candidate(old, "supersede", superseded_placeholder, event, r.key)
                    else:
                        remaining.append(old)  # a read of other lines stays current
                self._readers[r.key] = [*remaining, event.id]
            elif r.kind in ("test", "page"):
                for old in self._runs.get(r.key, []):
                    self._candidate(old, "supersede", superseded_placeholder, event, r.key)
                self._runs[r.key] = [event.id]
        if call is not None:
            fingerprint = hashlib.sha1(
                f"{call.name}\0{_args_json(call.arguments)}\0{event.output}".encode("utf-8", "surrogatepass")
            ).hexdigest()
            previous = self._fingerprints.get(fingerprint)
            if previous is not None:
                self._candidate(previous, "supersede", superseded_placeholder, event, "identical output")
            self._fingerprints[fingerprint] = event.id
        return "\n".join(notes)

    def _resources_of(self, item_id: str) -> tuple[Resource, ...]:
        item = self.item(item_id)
        return item.resources if item is not None else ()

    def _candidate(self, target_id: str, action: str, make: object, by: ToolResult, what: str) -> None:
        item = self.item(target_id)
        if item is None or item.state in (Lifecycle.MASKED, Lifecycle.SUPERSEDED, Lifecycle.STALE):
            return
        if target_id in self.candidates:
            return
        stub, lines = self._results[target_id]
        call = self._calls.get(stub.call_id)
        assert callable(make)
        by_call = self._calls.get(by.call_id)
        by_text = f"{by.tool_name} ({what})" if by_call is None else f"a later {by.tool_name} call ({what})"
        text = make(call, stub, tokens=item.original_tokens, lines=lines, by=by_text, at_seq=by.seq)
        reason = f"{action}d by {by.tool_name} at seq {by.seq} ({what})"
        self.candidates[target_id] = ContextEdit(
            target_id=target_id,
            action="supersede" if action == "supersede" else "stale",
            replacement=str(text),
            reason=reason,
        )
        pos = self._pos[target_id]
        new_state = Lifecycle.SUPERSEDED if action == "supersede" else Lifecycle.STALE
        self.items[pos] = replace(item, state=new_state)
