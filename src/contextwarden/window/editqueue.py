"""The edit queue: every edit the planner could make to a window, kept up to date incrementally.

It holds the proposed lossless edits (superseded, stale, duplicate), builds masking edits for old
tool results and thinking drops for old turns, knows what each would save, and applies recorded
edits. Two rules make the window honest:

- *Never pay to forget*: an edit is offered only when its placeholder is smaller than what it
  replaces, and an item whose mask would not save tokens is never edited at all.
- *The frontier*: the first item any pending or possible edit can change. Everything before it is
  final until the next compaction, so a cache breakpoint just before it holds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from ..context import Decision
from ..log.events import ContextEdit, ToolCall, ToolResult
from ..tokens import TokenCounter
from .accounting import message_tokens
from .items import REDUCED, ContextItem, ItemList, Lifecycle
from .lifecycle import Proposal
from .policies.placeholders import Retrievable, masked_placeholder, stale_placeholder, superseded_placeholder
from .policies.presets import ToolPolicy
from .references import Twins
from .tiers import Tier

__all__ = ["EditQueue", "ToolRecord"]

_SHRINK_MARGIN = 16
"""An item is editable only when its mask saves more than this many tokens: a stale or superseded
placeholder is a little longer than the mask, so the margin keeps every kind of placeholder a saving."""
_CANONICAL_REASON = "older than the last 10 tool results"
_STATE_OF = {"supersede": Lifecycle.SUPERSEDED, "stale": Lifecycle.STALE}


@dataclass(frozen=True, kw_only=True)
class ToolRecord:
    """What the queue keeps about a tool result to build its placeholders."""

    stub: ToolResult
    """The result without its output (ids, tool name, error flags)."""
    call: ToolCall | None
    """The call it answers, when seen."""
    lines: int
    """Lines of the original output."""
    policy: ToolPolicy
    """The policy it was ingested under."""
    sources: tuple[str, ...] = ()
    """URLs its placeholder keeps (``policy.keep_sources``)."""
    odd_lines: tuple[str, ...] = ()
    """Lines its mask placeholder quotes (``policy.odd_lines``)."""


class EditQueue:
    """Pending and possible edits of one window (the planner's pool, see :mod:`contextwarden.plan.planner`)."""

    def __init__(
        self,
        items: ItemList,
        counter: TokenCounter,
        calls: dict[str, ToolCall],
        *,
        retrievable: Retrievable = True,
        twins: Twins | None = None,
    ) -> None:
        """Queue edits of ``items``; ``retrievable``: how the model gets them back, which placeholders name.

        ``twins``: the references of the window, whose twins are kept while the references are.
        """
        self.items = items
        self.twins = twins
        self.counter = counter
        self._calls = calls
        self.retrievable = retrievable
        self.candidates: dict[str, ContextEdit] = {}
        self._records: dict[str, ToolRecord] = {}
        self._tool_ids: list[str] = []
        self._tool_floor = 0
        self._by_policy: dict[str, list[str]] = {}
        self._rank_in_policy: dict[str, int] = {}
        self._thinking_ids: list[str] = []
        self._thinking_floor = 0
        self._last_user_pos = -1
        self._mask_cache: dict[str, ContextEdit | None] = {}
        self._savings: dict[tuple[str, str], int] = {}
        self._shrinkable: dict[str, bool] = {}

    # ------------------------------------------------------------------ growth

    def add_tool_result(self, item: ContextItem, record: ToolRecord) -> None:
        """A tool result was pushed."""
        self._records[item.id] = record
        self._tool_ids.append(item.id)
        same = self._by_policy.setdefault(record.policy.name, [])
        self._rank_in_policy[item.id] = len(same)
        same.append(item.id)

    def recent_tool_results(self, count: int) -> list[str]:
        """Ids of the last ``count`` tool results, oldest first."""
        return self._tool_ids[-count:] if count > 0 else []

    def add_assistant(self, item: ContextItem) -> None:
        """An assistant turn was pushed (its thinking may be dropped once a user message follows)."""
        if item.message.thinking:
            self._thinking_ids.append(item.id)

    def add_user(self, position: int) -> None:
        """A user message was pushed at ``position``."""
        self._last_user_pos = position

    def propose(self, proposal: Proposal) -> None:
        """Record a lossless candidate, unless it would not pay or the target is already reduced."""
        target = proposal.target_id
        item = self.items.get(target)
        record = self._records.get(target)
        if item is None or record is None or item.state in REDUCED or target in self.candidates:
            return
        if not self.shrinkable(target):
            return
        # The subject already names the call and its file or target, and the later result is named by its
        # tool and call id, both of which the model sees: say why only when the resource does not (an
        # identical output). Placeholders ride on every later request.
        what = f" ({proposal.what})" if proposal.what == "identical output" else ""
        by_text = f"{proposal.by.tool_name} call {proposal.by.call_id}{what}"
        make = superseded_placeholder if proposal.action == "supersede" else stale_placeholder
        text = make(record.call, record.stub, tokens=item.original_tokens, lines=record.lines, by=by_text,
                    retrievable=self.retrievable)  # fmt: skip
        edit = ContextEdit(
            target_id=target,
            action=proposal.action,
            replacement=text,
            reason=f"{proposal.action}d by {proposal.by.tool_name} at seq {proposal.by.seq} ({proposal.what})",
        )
        if self.savings(edit) > 0:
            self.candidates[target] = edit

    # ------------------------------------------------------------------ the pool

    def lossless_edits(self) -> list[ContextEdit]:
        """Recorded candidates (superseded, stale, duplicate), in detection order."""
        return list(self.candidates.values())

    def mask_edits(self, keep_recent: int, protected: frozenset[str]) -> list[ContextEdit]:
        """Masking edits for tool results past both floors, oldest first.

        The floors: the last ``keep_recent`` tool results, and the last ``keep_recent`` of the
        result's own policy when the policy sets one. A position floor skips the prefix that is
        already reduced, so a call costs O(results still pending), not O(window). The twin of a
        reference either floor or ``protected`` keeps is kept with it (:mod:`.references`).
        """
        if self.twins:
            protected = self.twins.with_twins((*protected, *self.kept_ids(keep_recent)))
        end = max(len(self._tool_ids) - max(keep_recent, 0), 0)
        edits: list[ContextEdit] = []
        advancing = True
        for n in range(self._tool_floor, end):
            item_id = self._tool_ids[n]
            item = self.items.items[self.items.position(item_id)]
            if item.state in REDUCED:
                if advancing:
                    self._tool_floor = n + 1
                continue
            advancing = False
            if item_id in protected or not self._past_policy_floor(item_id):
                continue
            if item_id not in self._mask_cache:
                worth = self.shrinkable(item_id)
                self._mask_cache[item_id] = self.mask_edit(item_id, f"older than the last {keep_recent} tool results")
                if not worth:
                    self._mask_cache[item_id] = None
            cached = self._mask_cache[item_id]
            if cached is not None:
                edits.append(cached)
        return edits

    def kept_ids(self, keep_recent: int) -> list[str]:
        """The tool results :meth:`mask_edits` keeps for their age: the last ``keep_recent``, and each policy's own."""
        kept = self._tool_ids[len(self._tool_ids) - max(keep_recent, 0) :]
        for ids in self._by_policy.values():
            floor = self._records[ids[0]].policy.keep_recent
            if floor:
                kept += ids[-floor:]
        return kept

    def _past_policy_floor(self, item_id: str) -> bool:
        policy = self._records[item_id].policy
        if policy.keep_recent is None:
            return True
        newer = len(self._by_policy[policy.name]) - self._rank_in_policy[item_id] - 1
        return newer >= policy.keep_recent

    def thinking_edits(self) -> list[ContextEdit]:
        """Edits dropping the thinking of assistant turns before the latest user message."""
        edits: list[ContextEdit] = []
        advancing = True
        for n in range(self._thinking_floor, len(self._thinking_ids)):
            item_id = self._thinking_ids[n]
            pos = self.items.position(item_id)
            if pos > self._last_user_pos:
                break
            if not self.items.items[pos].message.thinking:
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

    def mask_edit(self, item_id: str, reason: str) -> ContextEdit | None:
        """The edit that masks a tool result for age or space (None for anything else)."""
        record = self._records.get(item_id)
        item = self.items.get(item_id)
        if record is None or item is None:
            return None
        text = masked_placeholder(
            record.call,
            record.stub,
            tokens=item.original_tokens,
            lines=record.lines,
            sources=record.sources,
            quotes=record.odd_lines,
            retrievable=self.retrievable,
        )
        return ContextEdit(target_id=item_id, action="mask", replacement=text, reason=f"masked: {reason}")

    def shrinkable(self, item_id: str) -> bool:
        """Whether a placeholder would save tokens on this tool result (the never-pay-to-forget rule)."""
        known = self._shrinkable.get(item_id)
        if known is None:
            edit = self.mask_edit(item_id, _CANONICAL_REASON)
            item = self.items.get(item_id)
            known = False
            if edit is not None and item is not None and item.state not in REDUCED:
                reduced = replace(item.message, text=edit.replacement, parts=())
                known = item.tokens - message_tokens(reduced, self.counter) > _SHRINK_MARGIN
            self._shrinkable[item_id] = known
        return known

    def savings(self, edit: ContextEdit) -> int:
        """Tokens ``edit`` would take out of the window (cached: pending edits are asked every call)."""
        key = (edit.target_id, edit.action)
        cached = self._savings.get(key)
        if cached is not None:
            return cached
        item = self.items.get(edit.target_id)
        if item is None:
            return 0
        if edit.action == "drop_thinking":
            reduced = item.message.without_thinking()
        else:
            reduced = replace(item.message, text=edit.replacement, parts=())
        saved = max(item.tokens - message_tokens(reduced, self.counter), 0)
        self._savings[key] = saved
        return saved

    def loss_key(self, edit: ContextEdit, working_set: Sequence[str]) -> tuple[int, int, int]:
        """Sort key of the order of loss: higher tier first, then less relevant, then older.

        Relevance is the rank of the most relevant working-set file the item touches (0: none). An item
        touching a working-set file counts as :attr:`Tier.WORKING_SET` at least, whatever tier its tool
        gave it: the read of the file being edited outlives a log of the same tier and age.
        """
        item = self.items.get(edit.target_id)
        if item is None:
            return (0, 0, 0)
        relevance = 0
        for r in item.resources:
            if r.key in working_set:
                relevance = max(relevance, len(working_set) - list(working_set).index(r.key))
        tier = min(int(item.tier), int(Tier.WORKING_SET)) if relevance else int(item.tier)
        return (-tier, relevance, item.recency)

    def frontier(self, *, thinking: bool = True) -> int | None:
        """Position of the first item a pending or possible edit can change (None: no such item).

        That is the oldest tool result still shown as ingested, or (with ``thinking``) the oldest
        assistant turn whose thinking is still shown. A result too small to ever be replaced counts
        too: the frontier may sit early, never late (measured: a boundary that stays put caches more
        over a session than one that skips ahead past small results).
        """
        found: int | None = None
        for n in range(self._tool_floor, len(self._tool_ids)):
            item_id = self._tool_ids[n]
            item = self.items.items[self.items.position(item_id)]
            if item.state not in REDUCED:
                found = self.items.position(item_id)
                break
        if thinking:
            for n in range(self._thinking_floor, len(self._thinking_ids)):
                pos = self.items.position(self._thinking_ids[n])
                if found is not None and pos >= found:
                    break
                if self.items.items[pos].message.thinking:
                    found = pos
                    break
        return found

    # ------------------------------------------------------------------ applying

    def apply(self, edits: Sequence[ContextEdit]) -> list[tuple[int, Decision]]:
        """Apply recorded edits; returns the position and decision of each one that changed an item.

        Items of tiers 0 and 1 (instructions, the goal, steering) are never edited.
        """
        changed: list[tuple[int, Decision]] = []
        for edit in edits:
            self.candidates.pop(edit.target_id, None)
            pos = self.items.find(edit.target_id)
            if pos is None:
                continue
            item = self.items.items[pos]
            if item.tier <= Tier.GOAL:
                continue
            self._mask_cache.pop(edit.target_id, None)
            for action in ("mask", "supersede", "stale", "clear", "drop_thinking"):
                self._savings.pop((edit.target_id, action), None)
            if edit.action == "drop_thinking":
                message = item.message.without_thinking()
                state = item.state
            else:
                message = replace(item.message, text=edit.replacement, parts=())
                state = _STATE_OF.get(edit.action, Lifecycle.MASKED)
            tokens = message_tokens(message, self.counter)
            message = replace(message, tokens=tokens)
            evictable = item.evictable and edit.action == "drop_thinking"
            self.items.put(pos, replace(item, message=message, tokens=tokens, state=state, evictable=evictable))
            if state in REDUCED:
                self._shrinkable[edit.target_id] = False
            decision = Decision(
                action=edit.action, target=edit.target_id, reason=edit.reason, tokens_saved=item.tokens - tokens
            )
            changed.append((pos, decision))
        return changed
