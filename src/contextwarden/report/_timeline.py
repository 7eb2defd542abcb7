"""The transcript beside the charts: the task, and what came in and went out at each request.

Request *k* of a replay is the transcript's *k*-th assistant message; its row shows what arrived since
the previous request (user text, tool results) and what the model answered (text, tool calls), each
cut to a short excerpt. Everything here is transcript text, so everything is escaped.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from ..log.events import AssistantMessage, Event, Steering, ToolResult, UserMessage
from ._tables import table
from .svg import esc

EXCERPT_CHARS = 240
"""Characters of each input or output shown per request."""
TASK_CHARS = 3_000
"""Characters of the task statement shown."""


def _cut(text: str, limit: int = EXCERPT_CHARS) -> str:
    """``text`` with whitespace collapsed, cut to ``limit`` characters.

    Only a growing head of the text is collapsed: its collapsed form is a prefix of the whole text's,
    so once it is longer than ``limit`` the excerpt is known, and a 100 MB tool output is never split
    into a list of millions of words.
    """
    size = 4 * limit
    while True:
        flat = " ".join(text[:size].split())
        if len(flat) > limit:
            return flat[: limit - 1] + "…"
        if size >= len(text):
            return flat
        size *= 4


def _incoming(event: Event) -> str:
    if isinstance(event, ToolResult):
        lines = event.output.count("\n") + 1 if event.output else 0
        flag = " (error)" if event.is_error or event.exit_code not in (None, 0) else ""
        return f"<b>{esc(event.tool_name)}</b>{flag} → {esc(_cut(event.output))} <i>({lines:,} lines)</i>"
    if isinstance(event, Steering):
        return f"<b>steering</b>: {esc(_cut(event.text))}"
    if isinstance(event, UserMessage):
        return f"<b>user</b>: {esc(_cut(event.text))}"
    return ""


def _outgoing(event: AssistantMessage) -> str:
    parts = [esc(_cut(event.text))] if event.text.strip() else []
    for call in event.tool_calls:
        args = json.dumps(call.arguments, ensure_ascii=False, default=str)
        parts.append(f"<b>{esc(call.name)}</b>({esc(_cut(args, 160))})")
    return "<br>".join(parts) or "<i>(empty)</i>"


def timeline(events: Sequence[Event]) -> str:
    """The task statement and a row per request (collapsed), as HTML."""
    task = next((e.text for e in events if isinstance(e, UserMessage)), "")
    rows: list[list[str]] = []
    pending: list[str] = []
    for event in events:
        if isinstance(event, AssistantMessage):
            rows.append([str(len(rows) + 1), "<br>".join(pending) or "–", _outgoing(event)])
            pending = []
        else:
            text = _incoming(event)
            if text:
                pending.append(text)
    shown = task if len(task) <= TASK_CHARS else task[: TASK_CHARS - 1] + "…"
    return (
        f'<h3>Task</h3><pre class="ex task">{esc(shown)}</pre>'
        '<details><summary>Transcript, request by request</summary><div class="scroll">'
        + table(
            ["request", "new since the previous request", "the model's answer"], rows, cls="fig tl", numeric=range(0, 1)
        )
        + "</div></details>"
    )
