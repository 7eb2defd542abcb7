"""Subagents: a scoped context for a subtask, and its result back into the parent as one bounded item.

A subagent gets the context its subtask needs, never a copy of the parent's whole history
(``docs/behaviours.md``, row 35). :func:`project_for_subtask` opens a child session in the session tree
(``parent_session_id`` set, ``metadata["task"]`` naming the task) and seeds it with:

1. the parent's system prompt (or one given for the subagent);
2. the parent's pinned constraints and latest steering, as pins (visible verbatim in every request);
3. the task definition, with a line about the parent's goal;
4. the items the caller selects, or, when it selects none, the latest reads of the parent's working
   set: tool results are replayed as call/result pairs so the child's own task state knows what was
   read; other items are quoted in the task message. Each item is cut to ``max_item_tokens`` and all
   of them together to ``max_context_tokens``; what did not fit is listed in ``skipped``.

:func:`return_to_parent` appends the subagent's final answer to the parent as a ``subagent_result``
fragment (bounded, labelled as data) naming the child session, where the full transcript stays:
as the tool result of the call that started the subagent when there is one, else as a user item.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..context import ModelContext, ToolDefinition
from ..errors import UsageError
from ..fragments import DEFAULT_REGISTRY, FragmentRegistry, cut_middle
from ..log.events import AssistantMessage, ContextEdit, Event, Instruction, Pin, ToolCall, ToolResult, UserMessage
from ..models import ModelProfile
from ..plan.seams import WindowManager
from ..tokens import TokenCounter
from ..window.items import ContextItem, Lifecycle
from ..window.policies.truncate import truncate_output
from ..window.projection import Projection

__all__ = ["SubtaskContext", "project_for_subtask", "return_to_parent"]

MAX_GOAL_CHARS = 1_000
"""The parent's goal is quoted in the task message up to this many characters."""

_LIVE = (Lifecycle.FRESH, Lifecycle.MASKED)


@dataclass(frozen=True, kw_only=True)
class SubtaskContext:
    """The child session made for a subtask, and what was put into it."""

    session_id: str
    """The child session (its transcript is the subagent's full record)."""
    parent_session_id: str
    """The session the subtask came from."""
    task: str
    """The task definition."""
    items: tuple[str, ...]
    """Ids of the parent's items carried into the child."""
    skipped: tuple[tuple[str, str], ...]
    """Selected items left out, with why (``not found``, ``superseded``, ``over the budget``)."""
    tokens: int
    """Tokens of the carried items, as seeded."""
    context: ModelContext | None = None
    """The child's first request, when a model was given."""


def _find(selector: str, items: Sequence[ContextItem], pending: Mapping[str, ContextEdit]) -> ContextItem | None:
    """The item ``selector`` names: an item id, or the newest live result that read a resource key.

    Live: not superseded or stale, and no pending edit says it is about to be.
    """
    for item in items:
        if item.id == selector:
            return item
    touching = [
        i for i in items if any(r.key == selector for r in i.resources) and i.state in _LIVE and i.id not in pending
    ]
    reads = [i for i in touching if any(r.key == selector and r.access == "read" for r in i.resources)]
    chosen = reads or touching
    return chosen[-1] if chosen else None


def _selected(
    projection: Projection, select: Sequence[str], suggest: int
) -> tuple[list[ContextItem], list[tuple[str, str]]]:
    selectors = list(select) or list(projection.state.working_set[:suggest])
    chosen: list[ContextItem] = []
    skipped: list[tuple[str, str]] = []
    for selector in dict.fromkeys(selectors):
        item = _find(selector, projection.items, projection.candidates)
        pending = projection.candidates.get(item.id) if item is not None else None
        if item is None:
            skipped.append((selector, "not found in the parent's current window"))
        elif item.state in (Lifecycle.SUPERSEDED, Lifecycle.STALE):
            skipped.append((selector, f"{item.state.value}: a newer version exists"))
        elif pending is not None and pending.action in ("supersede", "stale"):
            skipped.append((selector, f"{pending.action}d: a newer version exists"))
        elif item.id not in {c.id for c in chosen}:
            chosen.append(item)
    return chosen, skipped


@dataclass
class _Seed:
    calls: list[ToolCall]
    results: list[ToolResult]
    quotes: list[str]
    carried: list[str]
    skipped: list[tuple[str, str]]
    tokens: int = 0


def _seed_items(
    chosen: Sequence[ContextItem],
    originals: dict[str, Event],
    calls: dict[str, ToolCall],
    counter: TokenCounter,
    *,
    max_item_tokens: int,
    max_context_tokens: int,
    skipped: list[tuple[str, str]],
) -> _Seed:
    seed = _Seed(calls=[], results=[], quotes=[], carried=[], skipped=skipped)
    for item in chosen:
        original = originals.get(item.id)
        full = original.output if isinstance(original, ToolResult) else item.message.text
        cut = truncate_output(full, max_tokens=max_item_tokens, counter=counter, artifact_id=item.id)
        tokens = counter.count(cut.text)
        if seed.tokens + tokens > max_context_tokens:
            seed.skipped.append((item.id, f"over the {max_context_tokens}-token budget for carried items"))
            continue
        seed.tokens += tokens
        seed.carried.append(item.id)
        call = calls.get(item.message.tool_call_id) if item.message.role == "tool" else None
        if call is None:
            seed.quotes.append(f"[{item.message.role} item {item.id}]\n{cut.text}")
            continue
        call_id = f"parent-{len(seed.calls) + 1}-{call.id}"[:64]
        seed.calls.append(ToolCall(id=call_id, name=call.name, arguments=call.arguments))
        seed.results.append(
            ToolResult(
                call_id=call_id, tool_name=item.message.tool_name, output=cut.text, is_error=item.message.is_error
            )
        )
    return seed


def _task_text(task: str, goal: str, quotes: Sequence[str]) -> str:
    lines = [task.strip()]
    if goal:
        quoted = goal[:MAX_GOAL_CHARS] + "…" if len(goal) > MAX_GOAL_CHARS else goal
        lines += ["", f"You are a subagent working on one part of a larger task. The larger task was:\n{quoted}"]
    if quotes:
        lines += [
            "",
            "Context carried over from the parent session (check it before relying on it):",
            "",
            "\n\n".join(quotes),
        ]
    return "\n".join(lines)


def project_for_subtask(
    manager: WindowManager,
    session_id: str,
    task: str,
    *,
    select: Sequence[str] = (),
    model: str | ModelProfile | None = None,
    tools: Sequence[ToolDefinition] = (),
    system: str | None = None,
    suggest: int = 5,
    max_item_tokens: int = 2_000,
    max_context_tokens: int = 8_000,
    include_goal: bool = True,
) -> SubtaskContext:
    """Open a child session for ``task`` seeded with a scoped projection of ``session_id``.

    ``select`` names parent items by id or resources by key (a file path, a URL); empty selects
    the latest reads of the first ``suggest`` files of the parent's working set. ``model`` builds
    the child's first request (returned as ``context``). See the module docstring.
    """
    if not task.strip():
        raise UsageError("a subtask needs a task definition")
    if max_item_tokens < 1 or max_context_tokens < 1:
        raise UsageError("max_item_tokens and max_context_tokens must be positive")
    store = manager.store
    projection = manager.projection(session_id)
    state = projection.state
    chosen, skipped = _selected(projection, select, suggest)
    wanted = {i.id for i in chosen}
    window = store.read_window(session_id)
    originals: dict[str, Event] = {e.id: e for e in window if e.id in wanted}
    calls = {c.id: c for e in window if isinstance(e, AssistantMessage) for c in e.tool_calls}
    seed = _seed_items(
        chosen,
        originals,
        calls,
        manager.counter,
        max_item_tokens=max_item_tokens,
        max_context_tokens=max_context_tokens,
        skipped=skipped,
    )
    events: list[Event] = []
    system_text = projection.system if system is None else system
    if system_text:
        events.append(Instruction(text=system_text, role="system", source=f"session {session_id}"))
    pins = list(state.constraints)
    if state.latest_steering and state.latest_steering not in pins:
        pins.append(state.latest_steering)
    events += [Pin(text=text, label="constraint") for text in pins]
    events.append(UserMessage(text=_task_text(task, state.goal if include_goal else "", seed.quotes)))
    if seed.calls:
        events.append(AssistantMessage(tool_calls=tuple(seed.calls), stop_reason="tool_use"))
        events += seed.results
    child = store.create_session(
        parent_session_id=session_id, metadata={"task": task, "kind": "subagent", "parent_session_id": session_id}
    )
    store.append(child.id, events, expected_last_seq=0)
    context = manager.build(child.id, model=model, tools=tools) if model is not None else None
    return SubtaskContext(
        session_id=child.id,
        parent_session_id=session_id,
        task=task,
        items=tuple(seed.carried),
        skipped=tuple(seed.skipped),
        tokens=seed.tokens,
        context=context,
    )


def _final_answer(events: Sequence[Event]) -> str:
    for event in reversed(events):
        if isinstance(event, AssistantMessage) and event.text.strip():
            return event.text
    return ""


def return_to_parent(
    manager: WindowManager,
    child_session_id: str,
    *,
    result: str | None = None,
    call_id: str = "",
    tool_name: str = "subagent",
    registry: FragmentRegistry | None = None,
) -> Event:
    """Append the subagent's result to its parent as one bounded item; returns the stored event.

    ``result`` defaults to the child's last assistant text. With ``call_id`` the item is the
    :class:`ToolResult` answering the parent's call that started the subagent; without, a user item.
    Either way it is a ``subagent_result`` fragment (cut from the middle to its cap) that names the
    child session holding the full transcript.
    """
    store = manager.store
    info = store.get_session(child_session_id)
    if info.parent_session_id is None:
        raise UsageError(f"session {child_session_id!r} has no parent session to return to")
    events = store.read(child_session_id)
    answer = _final_answer(events) if result is None else result
    task = str(info.metadata.get("task", ""))
    task_line, _ = cut_middle(task, 200, manager.counter, what="task") if task else ("", False)
    body = (
        f"Subagent finished{': ' + task_line if task_line else ''}\n"
        f"Full transcript: session {child_session_id} ({len(events)} events).\n\n"
        f"{answer.strip() or '(the subagent gave no final answer)'}"
    )
    text = (registry or DEFAULT_REGISTRY).render("subagent_result", body, manager.counter).text
    item: Event = ToolResult(call_id=call_id, tool_name=tool_name, output=text) if call_id else UserMessage(text=text)
    parent = info.parent_session_id
    stored = store.append(parent, [item], expected_last_seq=store.get_session(parent).last_seq)
    return stored[0]
