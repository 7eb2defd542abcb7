"""Retention probes: what must be visible in every request, checked on the rendered request.

The probes follow the transcript, not the strategy: :class:`ProbeTracker` folds the events as they
happened into the derived task state, and :meth:`ProbeTracker.check` asks of one rendered request
(OpenAI Chat body) whether the model can see

- ``task``: the original task statement (the first user message), verbatim;
- ``constraints``: every user constraint known at that point (``TaskState.constraints``), verbatim;
- ``latest_tool_result``: the most recent tool result, verbatim up to its truncation marker
  (a result cut at ingestion passes when the part before ``[... output truncated``, or a byte cut's
  head between its header and ``[… N bytes omitted``, is its start); a result sent as a reference to
  an earlier output it repeats (``[same output as call X above]``) counts where that output shows;
- ``failing_evidence``: the latest failing test run or unresolved error output, the same way,
  until a later run passes or the error is resolved;
- ``files_modified``: the name of every file modified so far;
- ``next_action_evidence``: what the action about to be taken depends on. The request is the one
  sent before an assistant turn, and that turn's tool calls are known (they are the transcript's);
  for every file a call runs, edits or reads, the latest successful read of that file must be
  visible, verbatim up to a truncation marker, unless the file was written since (then there is no
  current read to keep). Each miss names the request, the file and what the request showed instead.

Re-reads are counted alongside: a read of a file whose latest read is still current (the file was
not written since) but not visible in the request. The actions are the transcript's own, so this is
the number of reads the strategy would have made necessary; raw never has one.

Texts are compared with whitespace collapsed, and tool outputs after the lossless terminal
normalization every strategy may apply (ANSI escapes, progress lines, repeated lines), so a
strategy is not penalized for reformatting, only for losing content. A probe with nothing to
check yet (no tool result, no failure, no modified file) is not applicable and not counted.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..log.events import AssistantMessage, Event, ToolCall, ToolResult
from ..window.policies.bytecut import BYTE_CUT_HEADER, BYTE_CUT_MARKER
from ..window.policies.normalize import normalize_output
from ..window.policies.presets import CODING_TOOL_POLICIES, policy_for
from ..window.policies.resources import Resource, command_of, resources_of
from ..window.references import referenced_call
from ..window.state import StateBuilder, TaskState

PROBE_KINDS: tuple[str, ...] = (
    "task",
    "constraints",
    "latest_tool_result",
    "failing_evidence",
    "files_modified",
    "next_action_evidence",
)
"""Every probe, in report order."""
RETENTION_PROBES: tuple[str, ...] = PROBE_KINDS[:5]
"""The probes the ``retention`` figure is over: the facts that must stay visible. ``next_action_evidence``
is reported on its own (per-probe retention, its misses listed): it asks more of a strategy (every file the
next action touches), and mixing it in would change what the long-standing retention targets mean."""
TRUNCATION_MARKER = "[... output truncated"
"""How a tool output cut at ingestion announces the cut (``contextwarden.window.policies.truncate``)."""


_CHUNK = 1 << 20


def _ws(text: str) -> str:
    """``text`` with every whitespace run collapsed to one space, stripped.

    Split a megabyte at a time: a word list of a whole 100 MB request would take gigabytes.
    """
    if len(text) <= _CHUNK:
        return " ".join(text.split())
    return "".join(_ws_pieces(text[start : start + _CHUNK] for start in range(0, len(text), _CHUNK)))


def _ws_pieces(chunks: Iterable[str]) -> Iterator[str]:
    """The pieces of ``_ws("".join(chunks))`` in order, one chunk at a time."""
    started = False
    space = False  # whitespace seen since the last word written
    for chunk in chunks:
        words = " ".join(chunk.split())
        if not words:
            space = space or bool(chunk)
            continue
        if started and (space or chunk[0].isspace()):
            yield " "
        yield words
        started = True
        space = chunk[-1].isspace()


def _found_in(parts: Sequence[str], needles: Sequence[str]) -> set[str]:
    """The ``needles`` that occur in the collapsed text of ``parts`` joined by newlines, without building it.

    A request can hold hundreds of megabytes; its collapsed text would be two more copies. The text
    is walked a piece at a time instead, keeping the last ``longest needle - 1`` characters before
    each piece so that a needle across two pieces is found too.
    """
    wanted = {n for n in needles if n}
    found: set[str] = {n for n in needles if not n}
    if not wanted:
        return found
    keep = max(map(len, wanted)) - 1
    size = max(_CHUNK, keep)  # a piece at least as long as the tail: copying stays linear in the text
    tail = ""
    for piece in _ws_pieces(_slices(parts, size)):
        window = tail + piece
        hits = {n for n in wanted if n in window}
        wanted -= hits
        found |= hits
        if not wanted:
            break
        tail = window[-keep:] if keep else ""
    return found


def _canon_output(text: str) -> str:
    return _ws(normalize_output(text).text)


@dataclass(frozen=True, kw_only=True)
class EvidenceMiss:
    """One piece of evidence the next action depended on that the request did not show."""

    path: str
    """The file."""
    seq: int
    """The seq of its latest read."""
    shown: str
    """What the request showed for that read instead (a placeholder), or ``absent``."""

    def describe(self, request: int) -> str:
        """One line for the report."""
        return f"request {request}: {self.path} (read at seq {self.seq}) shown as {self.shown}"


@dataclass(frozen=True, kw_only=True)
class ProbeOutcome:
    """The probes of one request: ``True`` kept, ``False`` missed, absent when not applicable."""

    results: dict[str, bool] = field(default_factory=dict)
    """Probe kind → kept."""
    missing: dict[str, str] = field(default_factory=dict)
    """Probe kind → what was not visible (for the report)."""
    evidence_misses: tuple[EvidenceMiss, ...] = ()
    """Every file the next action needed whose latest read was not visible."""
    reads: int = 0
    """Files the next action reads."""
    rereads: int = 0
    """Of those, files whose latest read is current but not visible (a read the strategy made necessary)."""

    @property
    def kept(self) -> int:
        """Probes satisfied."""
        return sum(1 for v in self.results.values() if v)

    @property
    def applicable(self) -> int:
        """Probes that had something to check."""
        return len(self.results)


def _slices(parts: Sequence[str], size: int) -> Iterator[str]:
    """``parts`` joined by newlines, in slices of at most ``size`` characters."""
    for n, part in enumerate(parts):
        if n:
            yield "\n"
        for start in range(0, len(part), size):
            yield part[start : start + size]


def request_texts(body: Mapping[str, Any]) -> tuple[str, dict[str, str]]:
    """All visible text of a request (whitespace collapsed) and the content of each tool message by call id."""
    parts, tools = _request_parts(body)
    return _ws("\n".join(parts)), tools


def _request_parts(body: Mapping[str, Any]) -> tuple[list[str], dict[str, str]]:
    """The visible texts of a request in order (as rendered) and the content of each tool message by call id."""
    parts: list[str] = []
    tools: dict[str, str] = {}
    for message in body.get("messages", ()):
        content = message.get("content")
        text = (
            content
            if isinstance(content, str)
            else " ".join(str(p.get("text", "")) for p in content or () if isinstance(p, Mapping))
        )
        parts.append(text)
        for call in message.get("tool_calls") or ():
            function = call.get("function", {})
            parts.append(f"{function.get('name', '')} {function.get('arguments', '')}")
        if message.get("role") == "tool":
            tools[str(message.get("tool_call_id", ""))] = text
    return parts, tools


class ProbeTracker:
    """Follows a transcript's events and checks the probes against each request built from them."""

    def __init__(self) -> None:
        # The probes judge every strategy by one yardstick, so they classify tools by the coding
        # presets whatever policy a strategy builds with (a strategy's own choice must not move it).
        self._state = StateBuilder(policies=CODING_TOOL_POLICIES)
        self._latest: ToolResult | None = None
        self._results: dict[str, ToolResult] = {}
        self._canon: dict[str, str] = {}
        self._calls: dict[str, ToolCall] = {}
        self._current_read: dict[str, ToolResult] = {}
        """File → its latest successful read, while the file has not been written since."""

    @property
    def state(self) -> TaskState:
        """The derived task state after the events so far."""
        return self._state.state

    def add(self, event: Event) -> None:
        """Fold one transcript event (as stored, with its seq)."""
        self._state.apply(event)
        if isinstance(event, AssistantMessage):
            self._calls.update((c.id, c) for c in event.tool_calls)
        if isinstance(event, ToolResult):
            self._latest = event
            self._results[event.id] = event
            call = self._calls.pop(event.call_id, None)
            if call is not None and not (event.is_error or event.exit_code not in (None, 0)):
                for r in _files(call, event.tool_name, self._state.open_file):
                    if r.access == "write":
                        self._current_read.pop(r.key, None)
                    elif r.access == "read":
                        self._current_read[r.key] = event

    def latest_evidence(self) -> ToolResult | None:
        """The newest failing test run or unresolved error output, if any."""
        found = [self._results[i] for i in self.state.evidence_ids if i in self._results]
        return max(found, key=lambda r: r.seq, default=None)

    def protected_ids(self) -> frozenset[str]:
        """Tool results a reduction must keep verbatim now for the probes to hold."""
        ids = {r.id for r in (self._latest, self.latest_evidence()) if r is not None}
        return frozenset(ids)

    def check(self, body: Mapping[str, Any], upcoming: AssistantMessage | None = None) -> ProbeOutcome:
        """Check every applicable probe against one rendered OpenAI Chat request.

        ``upcoming`` is the assistant turn the request is for; without it ``next_action_evidence``
        is not applicable.
        """
        parts, tools = _request_parts(body)
        state = self.state
        results: dict[str, bool] = {}
        missing: dict[str, str] = {}

        def record(kind: str, ok: bool, what: str) -> None:
            results[kind] = ok
            if not ok:
                missing[kind] = what

        goal = _ws(state.goal) if state.goal else ""
        constraints = {c: _ws(c.rstrip("…")) for c in state.constraints}
        names = {f: posixpath.basename(f.rstrip("/")) for f in state.files_modified}
        seen = _found_in(parts, [goal, *constraints.values(), *names.values()])
        if state.goal:
            record("task", goal in seen, goal[:80])
        if state.constraints:
            lost = [c for c in state.constraints if constraints[c] not in seen]
            record("constraints", not lost, "; ".join(c[:60] for c in lost))
        if self._latest is not None:
            record(
                "latest_tool_result",
                self._visible(self._latest, tools),
                f"{self._latest.tool_name} result at seq {self._latest.seq}",
            )
        evidence = self.latest_evidence()
        if evidence is not None:
            record(
                "failing_evidence", self._visible(evidence, tools), f"{evidence.tool_name} result at seq {evidence.seq}"
            )
        if state.files_modified:
            lost = [f for f in state.files_modified if names[f] not in seen]
            record("files_modified", not lost, ", ".join(lost))
        misses: list[EvidenceMiss] = []
        reads = rereads = 0
        needed = self._needed(upcoming) if upcoming is not None else {}
        for path, (result, reading) in needed.items():
            visible = self._visible(result, tools)
            reads += reading
            rereads += reading and not visible
            if not visible:
                shown = tools.get(result.call_id)
                shown_as = "absent" if shown is None else repr(_ws(shown)[:80])
                misses.append(EvidenceMiss(path=path, seq=result.seq, shown=shown_as))
        if needed:
            record("next_action_evidence", not misses, "; ".join(f"{m.path} as {m.shown}" for m in misses))
        return ProbeOutcome(
            results=results, missing=missing, evidence_misses=tuple(misses), reads=reads, rereads=rereads
        )

    def _needed(self, upcoming: AssistantMessage) -> dict[str, tuple[ToolResult, bool]]:
        """File → (its current latest read, whether the action reads it) for every file the action touches."""
        needed: dict[str, tuple[ToolResult, bool]] = {}
        for call in upcoming.tool_calls:
            touched = [(r.key, r.access == "read") for r in _files(call, call.name, self._state.open_file)]
            touched += [(path, False) for path in _scripts_run(call)]
            for path, reading in touched:
                key = self._current_key(path)
                if key is not None:
                    current = self._current_read[key]
                    needed[key] = (current, needed.get(key, (current, False))[1] or reading)
        return needed

    def _current_key(self, path: str) -> str | None:
        """The tracked file ``path`` names: the same key, or the same path relative to another directory."""
        if path in self._current_read:
            return path
        tail = path.lstrip("./")
        for key in self._current_read:
            if tail and (key.endswith("/" + tail) or tail.endswith("/" + key.lstrip("./"))):
                return key
        return None

    def _visible(self, result: ToolResult, tools: Mapping[str, str]) -> bool:
        """Whether ``result`` shows verbatim (up to a truncation marker) among the request's tool messages.

        A result shown as a reference (:mod:`contextwarden.window.references`) is visible when the output of
        the call it names shows it: that one is searched instead.
        """
        shown = tools.get(result.call_id)
        twin = referenced_call(shown) if shown is not None else None
        if twin is not None and twin != result.call_id:
            shown = tools.get(twin)
        if shown is None:
            return False
        if shown == result.output:
            return True  # shown as recorded: no need to normalize (and copy) a large output twice
        original = self._canon.get(result.id)
        if original is None:
            original = self._canon[result.id] = _canon_output(result.output)
        if not original:
            return True
        if shown.startswith(BYTE_CUT_HEADER):  # a byte cut: its header line first, then the head
            shown = shown.partition("\n")[2]
            cut = shown.find(BYTE_CUT_MARKER)
        else:
            cut = shown.find(TRUNCATION_MARKER)
        if cut < 0:
            return original in _canon_output(shown)
        head = _canon_output(shown[:cut])
        return bool(head) and original.startswith(head)


def _files(call: ToolCall, tool_name: str, open_file: str) -> tuple[Resource, ...]:
    """The files ``call`` reads, writes or runs, as the derived task state sees them.

    ``open_file`` is the file a SWE-agent ``open`` made current: its ``edit`` writes that file.
    """
    category = policy_for(tool_name, call, CODING_TOOL_POLICIES).category
    return tuple(r for r in resources_of(call, category, open_file=open_file) if r.kind == "file")


_SCRIPT_SUFFIXES = (".py", ".sh", ".js", ".mjs", ".ts", ".rb", ".pl")


def _scripts_run(call: ToolCall) -> list[str]:
    """Script files a shell command runs (``python repro.py``, ``bash run.sh``, ``pytest t.py``, ``./x.sh``).

    The task state does not count running a script as touching it; the next action still depends on
    the script's content the agent read earlier, which is what the probe checks.
    """
    command = command_of(call)
    if not command:
        return []
    words = command.replace(";", " ").replace("&&", " ").replace("|", " ").split()
    return [w.strip("'\"") for w in words if w.strip("'\"").endswith(_SCRIPT_SUFFIXES) or w.startswith("./")]
