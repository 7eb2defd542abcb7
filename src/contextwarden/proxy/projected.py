"""The bytes to forward for a projection: the client's own body edited, or a compacted window rendered.

Pure functions of the client's body and the projection; :mod:`.pipeline` (``/v1/messages`` and
the OpenAI routes) and :mod:`.count` (``count_tokens``) both forward what these return.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..context import ModelContext
from ..wire import AddressedBody, ParsedRequest, get_codec
from . import bodyedit
from .suffix import Read

CHANGING_ACTIONS = frozenset({"mask", "supersede", "stale", "clear", "truncate", "recall", "reference"})
"""Decisions that change what a tool result shows, so the forwarded body changes there."""


HISTORY_KEYS = {"openai_responses": "input", "gemini": "contents"}
"""The body field holding the conversation, where it is not ``messages``."""


def frontier_calls(messages: Sequence[Any], breakpoints: Sequence[int]) -> list[str]:
    """Call ids of the tool results right after the context's inner breakpoints (the planner's frontier)."""
    calls = []
    for point in breakpoints:
        if 0 <= point < len(messages) - 1 and messages[point + 1].role == "tool":
            calls.append(messages[point + 1].tool_call_id)
    return calls


def edited_body(
    fmt: str,
    raw: bytes,
    body: dict[str, Any],
    messages: Sequence[Any],
    decisions: Sequence[Any],
    breakpoints: Sequence[int] = (),
    *,
    read: Read | None = None,
    addressed: AddressedBody | None = None,
) -> tuple[dict[str, Any], bytes] | None:
    """The client's body with the projection's changes applied, or ``None`` when nothing changes.

    ``read`` (its counts over the messages) and ``addressed`` (where each message lies in ``raw``)
    spare the edit a walk of the whole history.
    """
    marks, holders = (read.marks, read.holders) if read is not None else (None, None)
    targets = {d.target for d in decisions if d.action in CHANGING_ACTIONS}
    replacements = (
        {
            m.tool_call_id: m.text
            for m in messages
            if m.role == "tool" and m.tool_call_id and targets.intersection(m.source_ids)
        }
        if targets
        else {}
    )
    if fmt == "gemini":  # results are found by the parser's pairing, which ``read`` holds
        if read is None:
            return None
        edit = bodyedit.replace_gemini_results(body, replacements, read.parsed)
    else:
        edit = bodyedit.replace_tool_outputs(fmt, body, replacements, holders=holders)
    edit.addressed = addressed
    if fmt == "anthropic":
        edit.breakpoints = bodyedit.count_breakpoints(body, message_marks=marks)
        bodyedit.mark_tail(edit)
        for call_id in frontier_calls(messages, breakpoints):
            bodyedit.mark_before_result(edit, call_id, holders=holders)
    if not edit.replaced:
        return None
    written = edit.write(raw, body)
    if written is None:
        return None  # a serialization we cannot reproduce: forwarding the original is the safe choice
    return edit.body, written


def rendered_body(
    parsed: ParsedRequest, raw: bytes, body: dict[str, Any], ctx: ModelContext
) -> tuple[dict[str, Any], bytes]:
    """A compacted window: the conversation rendered from the log, the client's system, tools and settings kept.

    A compaction is a window event, so the request changes at its front once; rendering is a
    pure function of the window, so the requests after it extend each other again.
    """
    rendered = get_codec(parsed.format).render_request(
        ctx, model=parsed.model, max_tokens=parsed.max_tokens, extra=parsed.extra
    )
    key = HISTORY_KEYS.get(parsed.format, "messages")
    edit = bodyedit.Edit(body={k: (rendered.get(key, v) if k == key else v) for k, v in body.items()}, key=key)
    if parsed.format == "anthropic":
        bodyedit.mark_tail(edit)
    dump = bodyedit.client_style(raw, body) or bodyedit.compact
    return edit.body, dump(edit.body)
