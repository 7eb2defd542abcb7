"""Tool-call/result pairing normalization: what every provider requires, made true before rendering.

The rule: the results answering an assistant message's tool calls are the contiguous run of ``tool``
messages right after it, one per call, in call order. :func:`normalize_pairing` makes any message
sequence obey it, deterministically, and says what it changed:

- a ``tool`` message outside such a run, answering a call id the preceding assistant message does not
  have, or answering a call already answered, is an orphan and is dropped;
- a call with no result in its run gets a synthetic error result (:data:`ABORTED_TEXT`);
- call ids are unique in the whole sequence, as every provider requires: a call whose id an
  earlier call already used (in an earlier turn, or earlier in the same message) is renamed
  ``<id>_dup<n>`` (the smallest ``n`` from 2 not yet used), and the results carrying that id answer
  the calls in order: the first result the first call, the next one the renamed call. Nothing is
  dropped;
- results are put in the order of their calls, so parallel calls stay together.

Each message group (an assistant message and its run) is normalized knowing only the ids used before
it, so appending messages never changes how an earlier group normalizes. The one exception is the
last group while its results may still arrive: ``pending_tail=True`` leaves its missing results
alone instead of aborting them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Container, Sequence

from .context import Decision, Message
from .log.events import ToolCall

ABORTED_TEXT = "[aborted: no result was recorded for this call]"
"""The content of the synthetic result given to a call that never got one."""

__all__ = ["ABORTED_TEXT", "normalize_pairing", "normalize_with_origins", "unique_call_id"]


def normalize_pairing(
    messages: Sequence[Message], *, pending_tail: bool = False, used_ids: set[str] | None = None
) -> tuple[tuple[Message, ...], tuple[Decision, ...]]:
    """Return the messages with every tool call paired to exactly one result, and the decisions taken.

    ``pending_tail``: when the last assistant message with tool calls is followed by nothing but tool
    messages, its calls may still be running; leave their missing results missing instead of adding
    aborted ones. A group closed by any later non-tool message is never pending.

    ``used_ids``: the call ids of messages before these (a caller normalizing a long sequence in
    pieces); the ids these messages end up using are added to it.

    Idempotent: a normalized sequence normalizes (with the same ``pending_tail``) to itself, with no
    decisions.
    """
    out, decisions, _ = normalize_with_origins(messages, pending_tail=pending_tail, used_ids=used_ids)
    return out, decisions


def normalize_with_origins(
    messages: Sequence[Message], *, pending_tail: bool = False, used_ids: set[str] | None = None
) -> tuple[tuple[Message, ...], tuple[Decision, ...], tuple[int, ...]]:
    """Normalize like :func:`normalize_pairing`, and say where each output message comes from.

    The third element gives, for each output message, the index of the input message it comes from (a
    synthetic result: the last message of its group). Renderers use it to map
    ``ModelContext.cache_breakpoints`` onto the normalized messages.
    """
    out: list[Message] = []
    origins: list[int] = []
    decisions: list[Decision] = []
    used = set() if used_ids is None else used_ids
    count = len(messages)
    i = 0
    while i < count:
        message = messages[i]
        if message.role == "tool":
            decisions.append(_orphan(message, "it does not follow an assistant message with tool calls"))
            i += 1
            continue
        if message.role != "assistant" or not message.tool_calls:
            out.append(message)
            origins.append(i)
            i += 1
            continue
        end = i + 1
        while end < count and messages[end].role == "tool":
            end += 1
        pending = pending_tail and end == count
        before = len(out)
        copies: dict[int, int] = {}
        _normalize_group(message, messages[i + 1 : end], pending, out, decisions, used, copies)
        # Kept results are the input objects themselves; a synthetic one belongs to the group's end
        # (the assistant itself when the run is empty).
        where = {id(messages[k]): k for k in range(i + 1, end)}
        origins.append(i)
        # A result answering a renamed call is a copy: it comes from the message it copies.
        origins.extend(where.get(copies.get(id(result), id(result)), end - 1) for result in out[before + 1 :])
        i = end
    return tuple(out), tuple(decisions), tuple(origins)


def _normalize_group(
    assistant: Message,
    run: Sequence[Message],
    pending: bool,
    out: list[Message],
    decisions: list[Decision],
    used: set[str],
    copies: dict[int, int],
) -> None:
    sent_ids = [call.id for call in assistant.tool_calls]
    if (
        [result.tool_call_id for result in run] == sent_ids
        and used.isdisjoint(sent_ids)
        and len(set(sent_ids)) == len(sent_ids)
    ):
        # The usual group (new ids, one result each, in call order) needs no change: skip the work.
        used.update(sent_ids)
        out.append(assistant)
        out.extend(run)
        return
    calls = _unique_calls(assistant, decisions, used)
    if calls != list(assistant.tool_calls):
        assistant = dataclasses.replace(assistant, tool_calls=tuple(calls))
    # The ids each sent id stands for, in call order: a result with that id answers the first unanswered.
    waiting: dict[str, list[str]] = {}
    for sent, call in zip(sent_ids, calls, strict=True):
        waiting.setdefault(sent, []).append(call.id)
        if sent != call.id:
            waiting.setdefault(call.id, []).append(call.id)
    answers: dict[str, Message] = {}
    for result in run:
        queue = [i for i in waiting.get(result.tool_call_id, ()) if i not in answers]
        if not queue:
            why = (
                f"call {result.tool_call_id!r} was already answered"
                if result.tool_call_id in waiting
                else "it answers no call of the assistant message before it"
            )
            decisions.append(_orphan(result, why))
            continue
        kept = result if queue[0] == result.tool_call_id else dataclasses.replace(result, tool_call_id=queue[0])
        copies[id(kept)] = id(result)
        answers[queue[0]] = kept
    answered_order = list(answers)
    call_order = [call.id for call in calls if call.id in answers]
    if answered_order != call_order:
        decisions.append(
            Decision(
                action="pairing",
                target=assistant.source_ids[0] if assistant.source_ids else call_order[0],
                reason="tool results reordered to follow the order of their calls",
            )
        )
    out.append(assistant)
    for call in calls:
        answer = answers.get(call.id)
        if answer is not None:
            out.append(answer)
        elif not pending:
            out.append(_aborted(call))
            decisions.append(
                Decision(
                    action="pairing",
                    target=call.id,
                    reason=f"call {call.id!r} to {call.name!r} had no result; an aborted result was added",
                )
            )


def unique_call_id(call_id: str, used: Container[str]) -> str:
    """The id a call reusing ``call_id`` is given: ``<id>_dup<n>``, the smallest ``n`` from 2 not in ``used``.

    The one renaming rule: rendering uses it, and so do transcript importers for agents that reuse ids.
    """
    n = 2
    while f"{call_id}_dup{n}" in used:
        n += 1
    return f"{call_id}_dup{n}"


def _unique_calls(assistant: Message, decisions: list[Decision], used: set[str]) -> list[ToolCall]:
    calls: list[ToolCall] = []
    for call in assistant.tool_calls:
        if call.id in used:
            renamed = unique_call_id(call.id, used)
            decisions.append(
                Decision(
                    action="pairing",
                    target=call.id,
                    reason=f"call id {call.id!r} was already used; this call to {call.name!r} is sent as {renamed!r}",
                )
            )
            call = dataclasses.replace(call, id=renamed)
        used.add(call.id)
        calls.append(call)
    return calls


def _aborted(call: ToolCall) -> Message:
    return Message(
        role="tool",
        text=ABORTED_TEXT,
        tool_call_id=call.id,
        tool_name=call.name,
        is_error=True,
        section="tool_output",
    )


def _orphan(message: Message, why: str) -> Decision:
    target = message.source_ids[0] if message.source_ids else message.tool_call_id
    return Decision(
        action="pairing",
        target=target,
        reason=f"orphan tool result for call {message.tool_call_id!r} dropped: {why}",
    )
