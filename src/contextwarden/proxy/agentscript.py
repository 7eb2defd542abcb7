"""A scripted agent for real coding CLIs: the model's side of a long task, played step by step.

A real client (Claude Code, Codex) runs its own tools; the :class:`ScriptedAgent`, given to
:class:`~.scripted.ScriptedUpstream` as its ``agent``, decides the next tool call from a
:class:`Script` written in that client's own tool vocabulary. The step to play is read from the
request itself (one past the newest call of the script the conversation holds), so a retried
request gets the same answer and a conversation the proxy trimmed still continues. When thinking is
on, each answer starts with a thinking block (Anthropic, signed) or an encrypted reasoning item
(Responses) the upstream can verify when the client sends it back.

Each step may name text the tool's result must contain; a result without it (the client did not
run the tool, or ran it differently) is kept in :attr:`ScriptedAgent.failures`. Requests that are
not the task's (a client's side calls to a small model for a title or a topic) get a short answer.

:class:`RecordedAgent` answers a recorded conversation again, for replaying a client's requests
without the client. The long task itself is in :mod:`.agenttask`.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ._reply import Reply
from ._validate import encrypted, signature

TASK_MARKER = "[conformance task]"
"""Opens the task prompt; a request whose conversation holds it is the task's, any other is a side call."""


@dataclass(frozen=True, kw_only=True)
class Step:
    """One tool call of the task."""

    tool: str
    """The client's tool name."""
    arguments: dict[str, Any] | str
    """Its arguments (a string: a freeform tool's input)."""
    expect: str = ""
    """Text the tool's result must contain."""


@dataclass(frozen=True, kw_only=True)
class Script:
    """A task for one client: its steps, then a final answer."""

    client: str
    """``claude-code`` or ``codex``."""
    prefix: str
    """How this script's call ids start (the client's own id style)."""
    steps: tuple[Step, ...]
    """The tool calls, in order."""
    final: str = "Done: fixed total(), the tests pass, and the fix is committed."
    """The answer that ends the task."""


def prompt() -> str:
    """The task as the user gives it to the client."""
    return (
        f"{TASK_MARKER} In this repository, engine.py has an off-by-one bug in total(). Read the code, "
        "run the tests, fix the bug, note what you did in NOTES.md and commit."
    )


@dataclass
class ScriptedAgent:
    """Plays ``script`` against a client: ``agent(fmt, body) -> Reply``."""

    script: Script
    failures: list[str] = field(default_factory=list)
    """Steps whose result lacked the expected text (``step N (tool): ...``)."""
    played: list[int] = field(default_factory=list)
    """The step answered to each task request (``len(steps)``: the final answer)."""
    side_calls: int = 0
    """Requests that were not the task's."""
    issued: list[tuple[str, str]] = field(default_factory=list)
    """Every thinking block issued, as ``(text, signature)`` (Responses: ``("", encrypted_content)``)."""
    issued_for: dict[int, tuple[str, str]] = field(default_factory=dict)
    """The thinking issued in answer to each task request, by the request's position."""

    def __call__(self, fmt: str, body: dict[str, Any]) -> Reply:
        """The next move for one request."""
        if fmt == "anthropic":
            calls, results = _anthropic_calls(body)
            thinking_on = (body.get("thinking") or {}).get("type") in ("enabled", "adaptive")
        else:
            calls, results = _responses_calls(body)
            thinking_on = "reasoning.encrypted_content" in (body.get("include") or [])
        if TASK_MARKER not in _text_of(body):
            self.side_calls += 1
            return Reply(text="Conformance task", output_tokens=4, ident=f"cwside{self.side_calls:03d}")
        done = [int(c[len(self.script.prefix) :]) for c in calls if c.startswith(self.script.prefix)]
        step = max(done) + 1 if done else 0
        if done:
            self._check(step - 1, results.get(f"{self.script.prefix}{step - 1:03d}"))
        self.played.append(step)
        note = f"Step {step}: " + ("finishing." if step >= len(self.script.steps) else "next tool call.")
        thinking = None
        if thinking_on:
            text = f"{note} The plan continues from the last result."
            thinking = (text, signature(text) if fmt == "anthropic" else encrypted(text))
            sent = thinking if fmt == "anthropic" else ("", thinking[1])
            self.issued.append(sent)
            self.issued_for[len(self.played) - 1] = sent
        if step >= len(self.script.steps):
            return Reply(text=self.script.final, thinking=thinking, output_tokens=40, ident=f"cwconf{step:03d}")
        move = self.script.steps[step]
        call = (f"{self.script.prefix}{step:03d}", move.tool, move.arguments)
        return Reply(text="", tool_calls=(call,), thinking=thinking, output_tokens=60, ident=f"cwconf{step:03d}")

    def _check(self, step: int, result: str | None) -> None:
        if step >= len(self.script.steps):
            return
        move = self.script.steps[step]
        if result is None:
            self.failures.append(f"step {step} ({move.tool}): no result in the request")
        elif move.expect not in result:
            self.failures.append(f"step {step} ({move.tool}): {move.expect!r} not in {result[:300]!r}")


def _text_of(body: Mapping[str, Any]) -> str:
    """The first user turn's text (where the task prompt is)."""
    items = body.get("messages") if "messages" in body else body.get("input")
    if isinstance(items, str):
        return items
    for item in items or []:
        if isinstance(item, Mapping) and item.get("role") == "user":
            content = item.get("content")
            if isinstance(content, str) and TASK_MARKER in content:
                return content
            for part in content or []:
                if isinstance(part, Mapping) and TASK_MARKER in str(part.get("text", "")):
                    return str(part["text"])
    return ""


def _flatten(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(_flatten(p.get("text", p.get("content", ""))) for p in content if isinstance(p, Mapping))
    return ""


def _anthropic_calls(body: Mapping[str, Any]) -> tuple[list[str], dict[str, str]]:
    calls: list[str] = []
    results: dict[str, str] = {}
    for message in body.get("messages") or []:
        content = message.get("content") if isinstance(message, Mapping) else None
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, Mapping):
                continue
            if block.get("type") == "tool_use":
                calls.append(str(block.get("id")))
            elif block.get("type") == "tool_result":
                results[str(block.get("tool_use_id"))] = _flatten(block.get("content"))
    return calls, results


def _responses_calls(body: Mapping[str, Any]) -> tuple[list[str], dict[str, str]]:
    calls: list[str] = []
    results: dict[str, str] = {}
    items = body.get("input")
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, Mapping):
            continue
        if item.get("type") in ("function_call", "custom_tool_call"):
            calls.append(str(item.get("call_id")))
        elif item.get("type") in ("function_call_output", "custom_tool_call_output"):
            results[str(item.get("call_id"))] = _flatten(item.get("output"))
    return calls, results


class RecordedAgent:
    """Answers a recorded conversation again: each request gets the turn the client echoed back next.

    Given the request bodies one client sent (in order), the reply to request ``i`` is what request
    ``i + 1`` adds after request ``i``'s last item: the assistant's thinking or reasoning, text and
    tool calls. Replaying the recorded bodies through a proxy then shows it the same conversation
    the client had, without the client.
    """

    def __init__(self, fmt: str, bodies: list[dict[str, Any]]) -> None:
        """Prepare the replies to ``bodies`` (all of one format)."""
        self.replies = [_next_turn(fmt, a, b) for a, b in itertools.pairwise(bodies)]
        self.replies.append(Reply(text="Done.", ident="recorded-last"))
        self.count = 0

    def __call__(self, fmt: str, body: dict[str, Any]) -> Reply:
        """The reply to the next recorded request."""
        reply = self.replies[min(self.count, len(self.replies) - 1)]
        self.count += 1
        return reply


def _next_turn(fmt: str, before: Mapping[str, Any], after: Mapping[str, Any]) -> Reply:
    if fmt == "anthropic":
        turns = [m for m in after.get("messages") or [] if isinstance(m, Mapping) and m.get("role") == "assistant"]
        blocks = turns[-1].get("content") if turns else []
        return _anthropic_reply(blocks if isinstance(blocks, list) else [])
    items = list(after.get("input") or [])[len(list(before.get("input") or [])) :]
    return _responses_reply(items)


def _anthropic_reply(blocks: list[Any]) -> Reply:
    thinking = next(((b["thinking"], b["signature"]) for b in blocks if b.get("type") == "thinking"), None)
    text = "".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")
    calls = tuple((b["id"], b["name"], b["input"]) for b in blocks if b.get("type") == "tool_use")
    ident = calls[0][0] if calls else "recorded"
    return Reply(text=text, tool_calls=calls, thinking=thinking, output_tokens=60, ident=ident)


def _responses_reply(items: list[Any]) -> Reply:
    thinking = None
    text = ""
    calls: list[tuple[str, str, dict[str, Any] | str]] = []
    ident = "recorded"
    for item in items:
        kind = item.get("type")
        if kind == "reasoning":
            thinking, ident = ("", str(item.get("encrypted_content"))), str(item.get("id", "rs_"))[3:]
        elif kind == "function_call":
            calls.append((item["call_id"], item["name"], json.loads(item["arguments"])))
        elif kind == "custom_tool_call":
            calls.append((item["call_id"], item["name"], item["input"]))
        elif kind == "message" and item.get("role") == "assistant":
            text += "".join(str(p.get("text", "")) for p in item.get("content") or [])
    return Reply(text=text, tool_calls=tuple(calls), thinking=thinking, output_tokens=60, ident=ident)
