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
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ._reply import TOOL_SEARCH, Reply
from ._validate import encrypted, signature

TASK_MARKER = "[conformance task]"
"""Opens the task prompt; a request whose conversation holds it is the task's, any other is a side call."""

RECALL_CALL = re.compile(r'Get it back with ([\w.-]+)\(id="([0-9a-f]{32})"\)')
"""A placeholder's recall call, as the proxy writes it when the client lists a recall tool: ``(tool, id)``."""

RANGE_CALL = re.compile(r'call ([\w.-]+)\(id="([0-9a-f]{32})", start_line=(\d+), end_line=(\d+)\)')
"""A truncation marker's recall call for the lines it omitted: ``(tool, id, start_line, end_line)``."""

RECALL_SUFFIX = "recall"
"""How a recall call's id goes on after the script's prefix (then its number)."""

SEARCH_SUFFIX = "search"
"""How a tool search call's id goes on after the script's prefix (then its number)."""

RECALL_SEARCH = "contextwarden recall"
"""What the agent searches for to load a deferred recall tool (Codex's ``tool_search`` ranks tools with BM25)."""

MCP_FRAMING = re.compile(r"\AWall time: \d+(?:\.\d+)? seconds\nOutput:\n")
"""How Codex opens an MCP tool's answer: a text item of its own, before the tool's content."""

MAX_RECALLS = 8
"""The most recall calls one run makes."""


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
    recall: bool = False
    """Whether to call the recall tool once: on the first request that shows a step's output as a
    placeholder naming a recall call, the move is that call (parsed from the placeholder), and the
    script goes on after its result; an answer the proxy cut is followed by the recall its marker names
    for the omitted lines. A call ``<namespace>.recall`` of a namespace the request has not loaded is
    preceded by a ``tool_search`` call that loads it (Codex defers MCP tools)."""


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
    recall_of: str = ""
    """The call id of the output the first recall call asked for (its placeholder named the call)."""
    recall_calls: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    """The recall calls made, as ``(call id, tool, arguments)``: the one a placeholder named, then the
    one each truncated answer's marker named for the lines it omitted."""
    recalled: dict[str, str] = field(default_factory=dict)
    """Each recall call's result by call id, as the upstream received it (the tool's answer alone:
    :func:`mcp_answer`)."""
    searches: list[str] = field(default_factory=list)
    """The call ids of the tool searches made to load a deferred recall tool."""
    wanted: tuple[str, dict[str, Any]] | None = None
    """The recall call the first placeholder named, as ``(tool, arguments)``, until it is made."""

    def __call__(self, fmt: str, body: dict[str, Any]) -> Reply:
        """The next move for one request."""
        calls, results = calls_and_results(fmt, body)
        if fmt == "anthropic":
            thinking_on = (body.get("thinking") or {}).get("type") in ("enabled", "adaptive")
        else:
            thinking_on = "reasoning.encrypted_content" in (body.get("include") or [])
        if TASK_MARKER not in _text_of(body):
            self.side_calls += 1
            return Reply(text="Conformance task", output_tokens=4, ident=f"cwside{self.side_calls:03d}")
        prefix = self.script.prefix
        done = [int(c[len(prefix) :]) for c in calls if c.startswith(prefix) and c[len(prefix) :].isdigit()]
        step = max(done) + 1 if done else 0
        for call_id, *_ in self.recall_calls:
            if call_id in results:
                self.recalled.setdefault(call_id, mcp_answer(results[call_id]))
        if calls and calls[-1] == f"{prefix}{step - 1:03d}":
            self._check(step - 1, results.get(calls[-1]))
        move = self._recall_move(results, calls, loaded_namespaces(fmt, body)) if self.script.recall else None
        self.played.append(-1 if move else step)
        note = f"Step {step}: " + ("finishing." if step >= len(self.script.steps) else "next tool call.")
        thinking = None
        if thinking_on:
            text = f"{note} The plan continues from the last result."
            thinking = (text, signature(text) if fmt == "anthropic" else encrypted(text))
            sent = thinking if fmt == "anthropic" else ("", thinking[1])
            self.issued.append(sent)
            self.issued_for[len(self.played) - 1] = sent
        if move is not None:
            # its own message id: a client merges turns that share one (Claude Code does)
            ident = f"cwconf{move[0][len(prefix) :]}"
            return Reply(text="", tool_calls=(move,), thinking=thinking, output_tokens=30, ident=ident)
        if step >= len(self.script.steps):
            return Reply(text=self.script.final, thinking=thinking, output_tokens=40, ident=f"cwconf{step:03d}")
        next_step = self.script.steps[step]
        call = (f"{prefix}{step:03d}", next_step.tool, next_step.arguments)
        return Reply(text="", tool_calls=(call,), thinking=thinking, output_tokens=60, ident=f"cwconf{step:03d}")

    def recalled_as_seen(self) -> str:
        """The first recall's answer as the model saw it, each cut filled in with the range recall its marker named.

        The proxy bounds a tool output, a recall's included: an answer over the bound reaches the model
        cut, with a marker line naming the recall of the omitted lines, and the agent calls that next.
        """
        if not self.recall_calls:
            return ""
        text = self.recalled.get(self.recall_calls[0][0], "")
        for call_id, _, arguments in self.recall_calls[1:]:
            span = f"start_line={arguments['start_line']}, end_line={arguments['end_line']})"
            lines = text.split("\n")
            at = next((i for i, line in enumerate(lines) if span in line), None)
            if at is None:
                break
            piece = self.recalled.get(call_id, "")
            lines[at : at + 1] = [piece[:-1] if piece.endswith("\n") else piece]
            text = "\n".join(lines)
        return text

    def _recall_move(
        self, results: Mapping[str, str], calls: list[str], loaded: set[str]
    ) -> tuple[str, str, dict[str, Any]] | None:
        """The next recall call: the first placeholder's, then the omitted lines of a cut answer (``None``: none).

        ``loaded``: the namespaces the request offers; a recall of another namespace loads it first.
        """
        if not self.recall_calls:
            if self.wanted is None and not self.searches:
                for call_id, text in results.items():
                    found = RECALL_CALL.search(text) if call_id.startswith(self.script.prefix) else None
                    if found:
                        self.recall_of = call_id
                        self.wanted = (found.group(1), {"id": found.group(2)})
                        break
            return self._load_or_recall(results, loaded) if self.wanted is not None else None
        last = self.recall_calls[-1][0]
        if not calls or calls[-1] != last or last not in results:
            return None
        found = RANGE_CALL.search(results[last])
        if found is None or len(self.recall_calls) >= MAX_RECALLS:
            return None
        tool, rid, first, end = found.groups()
        return self._recall(tool, {"id": rid, "start_line": int(first), "end_line": int(end)})

    def _load_or_recall(self, results: Mapping[str, str], loaded: set[str]) -> tuple[str, str, dict[str, Any]] | None:
        """The wanted recall, or first the tool search that loads its namespace (``None``: the search found nothing)."""
        assert self.wanted is not None
        tool, arguments = self.wanted
        namespace = tool.rpartition(".")[0]
        if not namespace or namespace in loaded:
            self.wanted = None
            return self._recall(tool, arguments)
        if self.searches and self.searches[-1] in results:
            self.failures.append(f"{TOOL_SEARCH} did not load {namespace}: {results[self.searches[-1]][:300]!r}")
            self.wanted = None
            return None
        call_id = f"{self.script.prefix}{SEARCH_SUFFIX}{len(self.searches)}"
        self.searches.append(call_id)
        return (call_id, TOOL_SEARCH, {"query": RECALL_SEARCH})

    def _recall(self, tool: str, arguments: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
        call_id = f"{self.script.prefix}{RECALL_SUFFIX}{len(self.recall_calls)}"
        self.recall_calls.append((call_id, tool, arguments))
        return (call_id, tool, arguments)

    def _check(self, step: int, result: str | None) -> None:
        if step >= len(self.script.steps):
            return
        move = self.script.steps[step]
        if result is None:
            self.failures.append(f"step {step} ({move.tool}): no result in the request")
        elif move.expect not in result:
            self.failures.append(f"step {step} ({move.tool}): {move.expect!r} not in {result[:300]!r}")


def mcp_answer(text: str) -> str:
    """An MCP tool's answer as the client returned it, without the client's own framing.

    Codex puts a ``Wall time: ... Output:`` item before the tool's content; what is left is the content
    as the server sent it.
    """
    return MCP_FRAMING.sub("", text, count=1)


def loaded_namespaces(fmt: str, body: Mapping[str, Any]) -> set[str]:
    """The Responses namespaces a request offers: declared in its tools, or loaded by a tool search."""
    if fmt != "openai_responses":
        return set()
    tools = list(body.get("tools") or [])
    for item in body.get("input") or []:
        if isinstance(item, Mapping) and item.get("type") == "tool_search_output":
            tools += item.get("tools") or []
    return {str(t.get("name")) for t in tools if isinstance(t, Mapping) and t.get("type") == "namespace"}


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


def calls_and_results(fmt: str, body: Mapping[str, Any]) -> tuple[list[str], dict[str, str]]:
    """A request's tool call ids in order, and each result's text by call id (text blocks joined by newlines)."""
    return _anthropic_calls(body) if fmt == "anthropic" else _responses_calls(body)


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
        if item.get("type") in ("function_call", "custom_tool_call", "tool_search_call"):
            calls.append(str(item.get("call_id")))
        elif item.get("type") in ("function_call_output", "custom_tool_call_output"):
            results[str(item.get("call_id"))] = _flatten(item.get("output"))
        elif item.get("type") == "tool_search_output":
            results[str(item.get("call_id"))] = json.dumps(item.get("tools"))
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
