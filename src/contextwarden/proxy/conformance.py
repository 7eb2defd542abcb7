"""One arm of the real-client conformance task, and what it left to check.

:func:`run_arm` runs a real CLI on the long task (:mod:`.agenttask`) against the strict scripted
upstream, either directly (``direct``) or through an in-process proxy (``observe``, ``manage``), and
returns an :class:`ArmResult` with everything the checks read: the CLI's exit, the repository, the
requests the upstream received and the usage it billed, the proxy's ledger and stats, the session
log's window events, and the proxy's warnings.

The checks are plain functions of that result: :func:`prefix_breaks` (where a forwarded request
does not extend the one before), :func:`unexplained_breaks` (breaks with no window event logged
while that request was prepared), :func:`thinking_problems` (thinking and encrypted reasoning not
sent back byte for byte).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..log.events import Compaction, ContextEditBatch, Event, ToolSetChange
from . import agentcli
from .agentscript import TASK_MARKER, ScriptedAgent, calls_and_results
from .agenttask import claude_code_script, codex_script, make_repo, repo_state
from .app import Proxy
from .ledger import LedgerRow
from .scripted import Received, ScriptedUpstream
from .serve import BackgroundServer
from .settings import ProxySettings

ARMS = ("direct", "observe", "manage")
RECALL_ARM = "recall"
"""``manage`` with ``contextwarden mcp`` configured in the client, and a script that recalls a masked output."""
CLIENT_FORMATS = {"claude-code": "anthropic", "codex": "openai_responses"}
MODEL_PATHS = ("/v1/messages", "/v1/responses")


@dataclass
class ArmResult:
    """What one arm left."""

    client: str
    arm: str
    cli: agentcli.CliRun
    agent: ScriptedAgent
    upstream: ScriptedUpstream
    repo: Path
    state: dict[str, Any]
    rows: list[LedgerRow] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    version: str = ""
    """The CLI's version."""
    store: str = ""
    """The proxy's store (empty in the direct arm), for the ``contextwarden`` commands that read it."""
    sent: list[bytes] = field(default_factory=list)
    """The model requests' bodies as the client sent them to the proxy (empty in the direct arm)."""

    def sent_task_bodies(self) -> list[dict[str, Any]]:
        """The task's requests as the client sent them (direct: as the upstream received them)."""
        if self.arm == "direct":
            return [json.loads(r.body) for r in self.task_requests()]
        return [json.loads(b) for b in self.sent if TASK_MARKER.encode() in b]

    @property
    def fmt(self) -> str:
        """The client's wire format."""
        return CLIENT_FORMATS[self.client]

    def task_requests(self) -> list[Received]:
        """The task's model requests as the upstream received them (side calls left out)."""
        marker = TASK_MARKER.encode()
        return [r for r in self.upstream.received if r.path in MODEL_PATHS and r.status == 200 and marker in r.body]

    def bill_usd(self) -> float:
        """The stand-in's own bill: the usage it reported on every request, priced."""
        return sum(r.usage.cost_usd for r in self.upstream.received if r.usage is not None)

    def first_output(self, call_id: str) -> str | None:
        """The result of call ``call_id`` as the client first sent it (``None``: never sent)."""
        for body in self.sent_task_bodies():
            found = calls_and_results(self.fmt, body)[1].get(call_id)
            if found is not None:
                return found
        return None

    def window_events(self) -> list[Event]:
        """The session log's window events (edits, compactions, tool-set changes), oldest first."""
        return [e for e in self.events if e.is_window_event]


class _Tap:
    """An ASGI wrapper that keeps the body of every model request before the proxy reads it."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.bodies: list[bytes] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope.get("type") != "http" or scope.get("path") not in MODEL_PATHS:
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []

        async def tapped() -> Any:
            message = await receive()
            if message.get("type") == "http.request":
                chunks.append(message.get("body", b""))
                if not message.get("more_body"):
                    self.bodies.append(b"".join(chunks))
            return message

        await self.app(scope, tapped, send)


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def run_arm(client: str, binary: str, arm: str, workdir: Path, *, timeout: float = 600) -> ArmResult:
    """Run ``client`` on the task in a fresh repository under ``workdir``, in ``arm`` (or :data:`RECALL_ARM`)."""
    repo = make_repo(workdir / "repo")
    script = claude_code_script(repo) if client == "claude-code" else codex_script(repo)
    store = str(workdir / "store.db")
    mcp = None
    if arm == RECALL_ARM:
        script, arm = replace(script, recall=True), "manage"
        mcp = agentcli.recall_server(client, store)
    agent = ScriptedAgent(script)
    upstream = ScriptedUpstream(agent=agent, strict=True, bill_as=agentcli.BILL_AS)
    with BackgroundServer(upstream.app) as up:
        if arm == "direct":
            cli = agentcli.run(client, binary, base_url=up.url, repo=repo, home=workdir / "home", timeout=timeout)
            return ArmResult(client, arm, cli, agent, upstream, repo, repo_state(repo))
        settings = ProxySettings(
            mode=arm,  # type: ignore[arg-type]
            anthropic_upstream=up.url,
            openai_upstream=up.url,
            store_url=store,
        )
        handler = _Collect()
        logger = logging.getLogger("contextwarden")
        logger.addHandler(handler)
        proxy = Proxy(settings)
        try:
            tap = _Tap(proxy.app)
            with BackgroundServer(tap) as px:
                home = workdir / "home"
                cli = agentcli.run(client, binary, base_url=px.url, repo=repo, home=home, timeout=timeout, mcp=mcp)
                proxy.settle()
            rows = proxy.pipeline.ledger.rows()
            stats = proxy.pipeline.ledger.stats()
            events = [e for s in proxy.store.list_sessions() for e in proxy.store.read(s.id)]
        finally:
            logger.removeHandler(handler)
            proxy.close()
    arm = RECALL_ARM if mcp is not None else arm
    result = ArmResult(client, arm, cli, agent, upstream, repo, repo_state(repo), rows, stats, events)
    result.warnings = handler.lines
    result.store = settings.store_url or ""
    result.sent = tap.bodies
    return result


# ---------------------------------------------------------------------------- checks


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def _units(fmt: str, body: Mapping[str, Any]) -> tuple[str, list[str]]:
    """A body as the cache reads it: its head (tools, system) and its items, each as JSON in the body's key order.

    Breakpoints are left out (moving one does not change the cached bytes) and an Anthropic string
    content is one text block (how the provider reads it; Claude Code itself sends its latest system
    message as blocks, then as a string).
    """
    if fmt == "anthropic":
        head = json.dumps([_strip(body.get("tools")), _strip(body.get("system"))])
        items = []
        for message in _strip(body.get("messages") or []):
            content = message.get("content")
            if isinstance(content, str):
                message = {**message, "content": [{"type": "text", "text": content}]}
            items.append(json.dumps(message))
        return head, items
    raw = body.get("input")
    return json.dumps([body.get("tools"), body.get("instructions")]), [json.dumps(i) for i in raw or []]


def prefix_breaks(fmt: str, bodies: Sequence[Mapping[str, Any]]) -> list[tuple[int, str]]:
    """``(k, where)`` for each request ``k`` that does not extend request ``k - 1``."""
    out: list[tuple[int, str]] = []
    for k in range(1, len(bodies)):
        head0, items0 = _units(fmt, bodies[k - 1])
        head1, items1 = _units(fmt, bodies[k])
        if head0 != head1:
            out.append((k, "tools or system changed"))
            continue
        for i, item in enumerate(items0):
            if i >= len(items1) or items1[i] != item:
                out.append((k, f"item {i} of {len(items0)} changed: {item[:160]}"))
                break
    return out


def cause(event: Event) -> str:
    """The cause a window event names ("" when it names none)."""
    if isinstance(event, ContextEditBatch | ToolSetChange):
        return event.reason
    if isinstance(event, Compaction):
        mirror = event.details.get("mirror")
        return f"mirror {mirror}: {event.summary[:200]}" if mirror else event.summary[:200] or event.summarizer
    return ""


def cause_kind(event: Event) -> str:
    """A window event's cause in a word or two, for tables: ``planner``, ``client rewrite``, ``compaction``..."""
    if isinstance(event, ContextEditBatch):
        return "planner" if event.reason else "(none)"
    if isinstance(event, ToolSetChange):
        return "tool set" if event.reason else "(none)"
    if isinstance(event, Compaction):
        mirror = event.details.get("mirror")
        return f"client {mirror}" if mirror else "compaction" if cause(event) else "(none)"
    return "(none)"


def unexplained_breaks(result: ArmResult) -> list[str]:
    """Prefix breaks in the forwarded requests with no window event logged while that request was prepared."""
    requests = result.task_requests()
    bodies = [json.loads(r.body) for r in requests]
    events = result.window_events()
    out = []
    for k, where in prefix_breaks(result.fmt, bodies):
        start, end = requests[k - 1].at, requests[k].at
        if not any(start <= e.created_at <= end and cause(e) for e in events):
            out.append(f"request {k}: {where}")
    return out


def thinking_problems(result: ArmResult) -> list[str]:
    """Thinking blocks or reasoning items that did not come back exactly as issued.

    Every one a request holds must be one the upstream issued, byte for byte, and the latest turn's
    must be there (the provider needs it to continue the turn).
    """
    issued = {json.dumps(t) for t in result.agent.issued}
    out: list[str] = []
    for k, request in enumerate(result.task_requests()):
        body = json.loads(request.body)
        found = _thinking(result.fmt, body)
        out += [f"request {k}: not as issued: {t[:200]}" for t in found if t not in issued]
        latest = result.agent.issued_for.get(k - 1)
        if k and latest is not None and json.dumps(latest) not in found:
            out.append(f"request {k}: the previous turn's thinking is missing")
    return out


def _thinking(fmt: str, body: Mapping[str, Any]) -> list[str]:
    found = []
    if fmt == "anthropic":
        for message in body.get("messages") or []:
            content = message.get("content") if isinstance(message, Mapping) else None
            for block in content if isinstance(content, list) else []:
                if isinstance(block, Mapping) and block.get("type") == "thinking":
                    found.append(json.dumps([block.get("thinking"), block.get("signature")]))
        return found
    for item in body.get("input") or []:
        if isinstance(item, Mapping) and item.get("type") == "reasoning":
            found.append(json.dumps(["", item.get("encrypted_content")]))
    return found


UNCHANGED_READ = "file unchanged since your last Read"
"""Claude Code's answer to a re-read of an unchanged file; it points the model back to the earlier result."""


def _results_by_call(body: Mapping[str, Any]) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """An Anthropic body's tool calls by id, and its ``(call id, result text)`` pairs in order."""
    calls: dict[str, Any] = {}
    results: list[tuple[str, str]] = []
    for message in body.get("messages") or []:
        content = message.get("content") if isinstance(message, Mapping) else None
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, Mapping):
                continue
            if block.get("type") == "tool_use":
                calls[str(block.get("id"))] = block
            elif block.get("type") == "tool_result":
                results.append((str(block.get("tool_use_id")), json.dumps(block.get("content"))))
    return calls, results


def hidden_references(sent: Sequence[Mapping[str, Any]], forwarded: Sequence[Mapping[str, Any]]) -> list[str]:
    """Earlier results the client points back to that the forwarded request no longer shows as sent.

    ``sent[k]`` is what the client sent and ``forwarded[k]`` what reached the upstream. When a result
    says the file is unchanged since the last Read, the model must see that earlier Read: forwarded
    exactly as the client sent it, or its content shown in the pointer's own result (the proxy's
    choice when the earlier one is masked: the newest result changes no cached prefix).
    """
    out: list[str] = []
    for k, (mine, theirs) in enumerate(zip(sent, forwarded, strict=False)):
        calls, results = _results_by_call(mine)
        forwarded_results = dict(_results_by_call(theirs)[1])
        for i, (call_id, text) in enumerate(results):
            if UNCHANGED_READ not in text:
                continue
            path = calls.get(call_id, {}).get("input", {}).get("file_path")
            earlier = [
                (c, t)
                for c, t in results[:i]
                if calls.get(c, {}).get("name") == "Read"
                and calls[c].get("input", {}).get("file_path") == path
                and UNCHANGED_READ not in t
            ]
            if not earlier or forwarded_results.get(earlier[-1][0]) == earlier[-1][1]:
                continue
            head = _text_of(earlier[-1][1])[:200]
            if not head or head not in _text_of(forwarded_results.get(call_id, "")):
                out.append(f"request {k}: the Read of {path} that {call_id} points back to was not forwarded as sent")
    return out


def _text_of(dumped: str) -> str:
    """The text of a tool result's JSON-dumped ``content`` (a string, or text blocks joined)."""
    try:
        value = json.loads(dumped)
    except ValueError:
        return dumped
    if isinstance(value, list):
        return "\n".join(str(b.get("text", "")) for b in value if isinstance(b, Mapping))
    return value if isinstance(value, str) else ""


SUPERSEDED = " superseded by "
"""What the proxy's placeholder for a result made redundant by a newer one says."""


def _outputs(fmt: str, body: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(call id, result text)`` of every tool result in ``body``, in order."""
    if fmt == "anthropic":
        return [(c, json.loads(t) if t.startswith('"') else t) for c, t in _results_by_call(body)[1]]
    out = []
    for item in body.get("input") or []:
        if isinstance(item, Mapping) and item.get("type") in ("function_call_output", "custom_tool_call_output"):
            output = item.get("output")
            out.append((str(item.get("call_id")), output if isinstance(output, str) else json.dumps(output)))
    return out


_LINE_NUMBER = re.compile(r"^ *\d+\t", re.MULTILINE)


def _payload(text: str) -> str:
    """A result's own output, without a client's framing and without line numbers.

    The framing is Codex's lines up to ``Output:``; line numbers (``nl``, Claude Code's Read) are
    dropped so that a numbered view of lines a later plain output holds counts as held.
    """
    head, sep, rest = text.partition("\nOutput:\n")
    return _LINE_NUMBER.sub("", rest if sep and head.startswith("Chunk ID:") else text)


def uncovered_supersessions(
    fmt: str, sent: Sequence[Mapping[str, Any]], forwarded: Sequence[Mapping[str, Any]]
) -> list[str]:
    """Results forwarded as superseded that no later result covers.

    A later output supersedes an earlier one only when it holds all of it: a ranged read, a head or
    tail, or an output the client truncated is not covered by a later output that lacks part of it.
    """
    out: list[str] = []
    for k, (mine, theirs) in enumerate(zip(sent, forwarded, strict=False)):
        original = _outputs(fmt, mine)
        shown = dict(_outputs(fmt, theirs))
        for i, (call_id, text) in enumerate(original):
            now = shown.get(call_id, text)
            if now == text or SUPERSEDED not in now:
                continue
            payload = _payload(text)
            if not any(payload in _payload(later) for _, later in original[i + 1 :]):
                out.append(f"request {k}: {call_id} shown as {now[:160]!r}, but no later result holds it")
    return out
