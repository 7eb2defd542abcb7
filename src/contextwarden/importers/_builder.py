"""The event builder every importer writes through.

It keeps the invariants so no importer re-implements them:

- an assistant response split over several records (one line per content block, one item per tool
  call) is merged into one :class:`AssistantMessage` by a caller-chosen key;
- a :class:`ToolResult` is kept only when an earlier tool call has its id (orphans and duplicates are
  dropped with a warning), and it is named after that call; reused call ids are made unique;
- provider usage is attached to the assistant message it belongs to and emitted right after it;
- ``metadata["timestamps"]`` says whether every response carried its recorded time (``transcript``),
  some did (``partial``) or none did (``none``).
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ..log.events import (
    AssistantMessage,
    BinaryPart,
    Compaction,
    Event,
    Instruction,
    JSONValue,
    OpaquePart,
    ThinkingBlock,
    ToolCall,
    ToolResult,
    UsageReport,
    UserMessage,
)
from ..pairing import unique_call_id
from ._common import Transcript


@dataclass
class _Slot:
    event: Event
    usage: UsageReport | None = None


class TranscriptBuilder:
    """Collects events for one transcript and enforces the pairing and usage placement rules."""

    def __init__(self, *, source: str, format: str) -> None:
        self.source = source
        self.format = format
        self.metadata: dict[str, JSONValue] = {}
        self._slots: list[_Slot] = []
        self._by_key: dict[str, _Slot] = {}
        self._call_names: dict[str, str] = {}
        self._open: dict[str, str] = {}
        self._answered: set[str] = set()
        self._renamed = 0
        self._moved = 0
        self._warnings: list[str] = []
        self._skipped: Counter[str] = Counter()
        self._unknown: Counter[str] = Counter()
        self._stamped: Counter[bool] = Counter()

    # -- bookkeeping

    def warn(self, message: str) -> None:
        """Record a warning for the caller (something was dropped or could not be read)."""
        self._warnings.append(message)

    def skip(self, what: str) -> None:
        """Count a known record that the model never saw (UI state, snapshots); reported in metadata."""
        self._skipped[what] += 1

    def unknown(self, what: str) -> None:
        """Count a record of a type this importer does not know; reported as a warning."""
        self._unknown[what] += 1

    def tool_name(self, call_id: str) -> str:
        """Return the name of the latest tool call with this id (``""`` when unknown)."""
        return self._call_names.get(self._open.get(call_id, ""), "")

    # -- events

    def instruction(self, text: str, *, role: str = "system", source: str = "", at: float | None = None) -> None:
        """Append a system or developer instruction (empty text is ignored)."""
        if text:
            kind: Literal["system", "developer"] = "developer" if role == "developer" else "system"
            self._append(Instruction(text=text, role=kind, source=source, **_at(at)))

    def user(self, text: str, *, parts: Sequence[BinaryPart] = (), at: float | None = None) -> None:
        """Append a user message (nothing when both text and parts are empty)."""
        if text or parts:
            self._append(UserMessage(text=text, parts=tuple(parts), **_at(at)))

    def assistant(
        self,
        *,
        text: str = "",
        thinking: Sequence[ThinkingBlock] = (),
        tool_calls: Sequence[ToolCall] = (),
        opaque: Sequence[OpaquePart] = (),
        model: str = "",
        stop_reason: str = "",
        key: str | None = None,
        at: float | None = None,
    ) -> None:
        """Append an assistant response, or merge into the earlier one recorded under the same ``key``.

        ``opaque``: provider items kept verbatim (an OpenAI ``reasoning`` item with its
        ``encrypted_content``); each is placed after the items the response already holds, so its
        format's renderer sends it back where it came.

        A tool call id already used by an earlier call (some agents reuse ids) is made unique by the
        pairing rule's renaming (:func:`contextwarden.pairing.unique_call_id`, ``<id>_dup<n>``); results
        that follow are matched to the newest call with the original id.
        """
        slot = self._by_key.get(key) if key is not None else None
        if slot is not None and isinstance(slot.event, AssistantMessage):
            # Streamed records may repeat a block of the same response: keep each call once.
            seen = {self._open.get(c.id) for c in tool_calls} & {c.id for c in slot.event.tool_calls}
            tool_calls = [c for c in tool_calls if self._open.get(c.id) not in seen]
        tool_calls = [self._register(call) for call in tool_calls]
        if slot is not None and isinstance(slot.event, AssistantMessage):
            old = slot.event
            slot.event = dataclasses.replace(
                old,
                text=_join(old.text, text),
                thinking=old.thinking + tuple(thinking),
                tool_calls=old.tool_calls + tuple(tool_calls),
                opaque=old.opaque + _placed(opaque, _item_count(old)),
                model=old.model or model,
                stop_reason=stop_reason or old.stop_reason,
            )
            return
        if not (text or thinking or tool_calls or opaque):
            return
        self._stamped[at is not None] += 1
        event = AssistantMessage(
            text=text,
            thinking=tuple(thinking),
            tool_calls=tuple(tool_calls),
            opaque=_placed(opaque, 1 if text else 0),
            model=model,
            stop_reason=stop_reason,
            **_at(at),
        )
        new = self._append(event)
        if key is not None:
            self._by_key[key] = new

    def tool_result(
        self,
        call_id: str,
        output: str,
        *,
        is_error: bool = False,
        exit_code: int | None = None,
        parts: Sequence[BinaryPart] = (),
        where: str = "",
        at: float | None = None,
    ) -> None:
        """Append the result of an earlier tool call; drop an orphan or a second result with a warning."""
        place = f" at {where}" if where else ""
        unique_id = self._open.get(call_id)
        if unique_id is None:
            self.warn(f"dropped a tool result for unknown call id {call_id!r}{place}")
            return
        if unique_id in self._answered:
            self.warn(f"dropped a second tool result for call id {call_id!r}{place}")
            return
        self._answered.add(unique_id)
        result = ToolResult(
            call_id=unique_id,
            tool_name=self._call_names[unique_id],
            output=output,
            is_error=is_error,
            exit_code=exit_code,
            parts=tuple(parts),
            **_at(at),
        )
        self._place_result(result)

    def _place_result(self, result: ToolResult) -> None:
        """Append ``result``, or put it right after its call's results when a later assistant message came between.

        An agent that makes its next call before the previous result arrives writes the result after
        that call; a request needs each result right after its own call (the pairing rule would show the
        call aborted and drop the result). The move is counted and reported once per transcript.
        """
        at = len(self._slots)
        while at > 0 and isinstance(self._slots[at - 1].event, ToolResult):
            at -= 1
        owner = self._slots[at - 1].event if at else None
        if isinstance(owner, AssistantMessage) and any(c.id == result.call_id for c in owner.tool_calls):
            self._append(result)
            return
        for n in range(len(self._slots) - 1, -1, -1):
            event = self._slots[n].event
            if isinstance(event, AssistantMessage) and any(c.id == result.call_id for c in event.tool_calls):
                end = n + 1
                while end < len(self._slots) and isinstance(self._slots[end].event, ToolResult):
                    end += 1
                self._slots.insert(end, _Slot(result))
                self._moved += 1
                return
        self._append(result)

    def rewind_user_turns(self, turns: int) -> int:
        """Drop the last ``turns`` user turns (each from its user message on); returns how many events went.

        For agents that log a rollback as a marker after the turns it undoes (Codex's
        ``thread_rolled_back``): the undone turns are in the file but no longer in the conversation.
        """
        users = [n for n, slot in enumerate(self._slots) if isinstance(slot.event, UserMessage)]
        if turns <= 0 or not users:
            return 0
        cut = users[-min(turns, len(users))]
        dropped = self._slots[cut:]
        del self._slots[cut:]
        gone = {id(slot) for slot in dropped}
        self._by_key = {k: slot for k, slot in self._by_key.items() if id(slot) not in gone}
        for slot in dropped:
            if isinstance(slot.event, AssistantMessage):
                for call in slot.event.tool_calls:
                    self._call_names.pop(call.id, None)
                    self._answered.discard(call.id)
        self._open = {original: unique for original, unique in self._open.items() if unique in self._call_names}
        return len(dropped) + sum(1 for slot in dropped if slot.usage is not None)

    def usage(
        self,
        fields: Mapping[str, int],
        *,
        model: str = "",
        request_id: str = "",
        key: str | None = None,
    ) -> None:
        """Attach provider usage to the response it belongs to: the one under ``key``, else the latest.

        A later report for the same response replaces the earlier one (streamed records repeat it).
        Usage with no response to belong to (a summarization call, say) stands alone where it arrives.
        """
        slot = self._by_key.get(key) if key is not None else self._latest_assistant()
        at = slot.event.created_at if slot is not None else None
        report = UsageReport(
            input_tokens=fields.get("input_tokens", 0),
            output_tokens=fields.get("output_tokens", 0),
            cache_read_tokens=fields.get("cache_read", 0),
            cache_write_tokens=fields.get("cache_write", 0),
            cache_write_1h_tokens=fields.get("cache_write_1h", 0),
            reasoning_tokens=fields.get("reasoning", 0),
            request_id=request_id,
            model=model,
            **_at(at),
        )
        if slot is not None and (key is not None or slot.usage is None):
            slot.usage = dataclasses.replace(
                report, response_event_id=slot.event.id, model=model or _model_of(slot.event)
            )
        else:
            self._append(report)

    def compaction(self, summary: str, *, details: dict[str, JSONValue], at: float | None = None) -> None:
        """Append a compaction the agent itself made; its seq bounds are fixed in :meth:`build`."""
        text = summary or "[compaction summary not recorded in the transcript]"
        self._append(Compaction(summary=text, first_kept_seq=0, details=details, **_at(at)))

    # -- result

    def build(self) -> Transcript:
        """Flatten into a :class:`Transcript`; compaction seq bounds assume a fresh session from seq 1."""
        events: list[Event] = []
        for slot in self._slots:
            event = slot.event
            if isinstance(event, Compaction):
                # Appended to a new session, this event lands at seq len(events) + 1.
                own_seq = len(events) + 1
                event = dataclasses.replace(
                    event, covered_from_seq=1, covered_to_seq=own_seq - 1, first_kept_seq=own_seq + 1
                )
            events.append(event)
            if slot.usage is not None:
                events.append(slot.usage)
        warnings = list(self._warnings)
        if self._moved:
            warnings.append(
                f"moved {self._moved} tool result(s) up to their call: the agent made another call before they "
                "arrived, and a request needs each result right after its call"
            )
        for what, count in sorted(self._unknown.items()):
            warnings.append(f"skipped {count} record(s) of unknown type {what!r}")
        metadata = dict(self.metadata)
        if self._stamped:
            # Replay times requests by these; events without a recorded time carry their import time.
            metadata["timestamps"] = (
                "none" if not self._stamped[True] else "partial" if self._stamped[False] else "transcript"
            )
        if self._skipped:
            metadata["skipped"] = {k: v for k, v in sorted(self._skipped.items())}
        unanswered = [c for c in self._call_names if c not in self._answered]
        if unanswered:
            metadata["unanswered_calls"] = len(unanswered)
        if self._renamed:
            metadata["renamed_call_ids"] = self._renamed
        return Transcript(
            events=tuple(events),
            format=self.format,
            source=self.source,
            warnings=tuple(warnings),
            metadata=metadata,
        )

    def _register(self, call: ToolCall) -> ToolCall:
        original = call.id
        if original in self._call_names:
            call = dataclasses.replace(call, id=unique_call_id(original, self._call_names))
            self._renamed += 1
        self._call_names[call.id] = call.name
        self._open[original] = call.id
        return call

    def _append(self, event: Event) -> _Slot:
        slot = _Slot(event)
        self._slots.append(slot)
        return slot

    def _latest_assistant(self) -> _Slot | None:
        for slot in reversed(self._slots):
            if isinstance(slot.event, AssistantMessage):
                return slot
        return None


def _at(at: float | None) -> dict[str, Any]:
    return {} if at is None else {"created_at": at}


def _item_count(message: AssistantMessage) -> int:
    """How many output items the message renders as before anything added now (text, calls, opaque)."""
    return (1 if message.text else 0) + len(message.tool_calls) + len(message.opaque)


def _placed(opaque: Sequence[OpaquePart], start: int) -> tuple[OpaquePart, ...]:
    return tuple(dataclasses.replace(part, position=start + i) for i, part in enumerate(opaque))


def _join(first: str, second: str) -> str:
    if first and second:
        return f"{first}\n\n{second}"
    return first or second


def _model_of(event: Event) -> str:
    return event.model if isinstance(event, AssistantMessage) else ""
