"""Derived task state: a pure fold over the session's events.

The state is what must never be lost: the original goal, the user's constraints, the latest
steering, which files were read and modified, the last test run and what failed, unresolved
errors, and the working set. Compaction snapshots it into the compaction event
(:meth:`TaskState.to_dict`), so resuming needs no events older than the window.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from functools import lru_cache
from typing import NamedTuple

from ..log.events import (
    AssistantMessage,
    Compaction,
    Event,
    Instruction,
    Pin,
    Steering,
    ToolCall,
    ToolResult,
    UserMessage,
)
from .outcome import output_body, result_failed, test_not_run
from .policies._errors import find_error_lines
from .policies.presets import ToolPolicy, policy_for
from .policies.resources import Resource, opened_file, resources_of
from .taskstate import TaskState, TestStatus

__all__ = [
    "MAX_CONSTRAINTS",
    "MAX_CONSTRAINT_CHARS",
    "StateBuilder",
    "TaskState",
    "TestStatus",
    "derive_state",
    "extract_constraints",
]

MAX_CONSTRAINT_CHARS = 400
"""A constraint sentence longer than this is cut (with an ellipsis): every pinned item has a cap."""
MAX_CONSTRAINTS = 40
"""At most this many constraints are tracked; beyond it the oldest non-pinned ones go first."""
MAX_ERRORS = 8
"""Unresolved errors tracked at once (newest kept)."""
MAX_WORKING_SET = 12
"""Files in the working set."""
WORKING_SET_DECAY_EVENTS = 24
"""A file only read, by more than one call, leaves the working set after this many events without a
touch (old files decay); modified files, files the task names and files with unresolved
failures stay. A file read once joins only while it is the file touched last."""
_PATHLIKE = re.compile(r"[\w.-]+(?:/[\w.-]+)*\.\w+|[\w-]+(?:/[\w.-]+)+")

_RULE_WORDS = re.compile(
    r"\b(?:don'?t|do not|must(?:n'?t)?|never|always|keep|avoid|only|should(?:n'?t| not)?|"
    r"make sure|ensure|no longer|instead of|prefer|required?|forbidden|not allowed)\b"
    r"|不要|必须|保持|禁止|不能|不得|务必|只能|一定要|别",
    re.IGNORECASE,
)
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?。！？;；])\s+|\n+")
_FAILED_TEST = re.compile(r"^(?:FAILED|ERROR)\s+([^\s(]\S*)", re.MULTILINE)
"""pytest's ``FAILED tests/test_a.py::test_x`` (not unittest's tally ``FAILED (errors=1)``)."""
_UNITTEST_FAILED = re.compile(r"^(?:FAIL|ERROR): (\w+) \(([\w.]+)\)", re.MULTILINE)
"""unittest's ``FAIL: test_x (pkg.module.Case)``."""
_TEST_FILE = re.compile(r"(?:^|/)(?:test_[\w.-]*|[\w.-]*_test|[\w.-]*\.(?:test|spec))\.\w+$")
_PYTEST_SUMMARY = re.compile(r"=+ .*?(\d+) (?:failed|error)", re.IGNORECASE)


_QUOTED = re.compile(
    r"```.*?(?:```|\Z)|~~~.*?(?:~~~|\Z)|<([A-Za-z][\w-]*)(?:\s[^>]*)?>.*?</\1>|^[ \t]*>.*$",
    re.DOTALL | re.MULTILINE,
)
"""What a user message quotes rather than says: code blocks, ``<tagged>`` blocks (an issue text, a
framework's instructions), ``>`` quotes. A rule sentence in there belongs to the material."""


def own_words(text: str) -> str:
    """``text`` without the material it quotes (see :data:`_QUOTED`)."""
    return _QUOTED.sub("\n", text) if ("`" in text or "<" in text or ">" in text or "~~~" in text) else text


def extract_constraints(text: str, *, agent_text: str = "") -> list[str]:
    """Sentences of a user message that state a rule ("don't", "must", "keep", "不要", ...).

    Only the user's own words count: quoted material (:func:`own_words`) and sentences of the
    agent's own instructions (``agent_text``, its system prompt) are not the user's constraints.
    """
    found: list[str] = []
    for raw in _SENTENCE_SPLIT.split(own_words(text)):
        sentence = raw.strip()
        if sentence and _RULE_WORDS.search(sentence) and sentence not in agent_text:
            if len(sentence) > MAX_CONSTRAINT_CHARS:
                sentence = sentence[: MAX_CONSTRAINT_CHARS - 1] + "…"
            found.append(sentence)
    return found


def _append_unique(items: tuple[str, ...], *new: str) -> tuple[str, ...]:
    out = list(items)
    for n in new:
        if n and n not in out:
            out.append(n)
    return tuple(out)


_SUMMARY_TAIL = 200_000
"""Test runners print their summary at the end: only this many trailing characters are parsed."""


def _test_outcome(result: ToolResult) -> tuple[bool, tuple[str, ...]]:
    tail = result.output[-_SUMMARY_TAIL:]
    names = [*_FAILED_TEST.findall(tail), *(f"{case}.{test}" for test, case in _UNITTEST_FAILED.findall(tail))]
    failing = tuple(dict.fromkeys(names))
    failed = result_failed(result) or bool(failing) or bool(_PYTEST_SUMMARY.search(tail))
    return (not failed), failing


_BANNER = re.compile(r"^\s*([=_*#-])\1{2,}.*\1{3}\s*$")
"""A runner's section banner (pytest's ``=== FAILURES ===``, ``___ test_x ___``): it names a
section, not the error, though it can hold an error word."""


def _first_error_line(result: ToolResult) -> str:
    """The first error-like line that is not a banner, else the last line that is not one.

    The error lines come from a literal keyword scan (fast on 100 MB); with no line at all the exit
    code stands in.
    """
    output = output_body(result.output)
    for found in find_error_lines(output):
        line = output[found.start : found.end]
        if not _BANNER.match(line):
            return line.strip()[:200]
    for line in reversed(output[-2_000:].strip().split("\n")):
        if line.strip() and not _BANNER.match(line):
            return line.strip()[:200]
    return f"exit code {result.exit_code}" if result.exit_code is not None else "failed"


def _command(call: ToolCall) -> str:
    command = call.arguments.get("command") or call.arguments.get("cmd") or ""
    return " ".join(str(c) for c in command) if isinstance(command, list) else str(command)


def _action_key(tool_name: str, call: ToolCall, resources: tuple[Resource, ...]) -> str:
    """What a later success must repeat to resolve an error: the tool and what it acted on."""
    if resources:
        target = resources[0].key
    else:
        command = _command(call)
        target = command.split()[0] if command.split() else ""
    return f"[{tool_name} {target}] "


class WorkingSetInputs(NamedTuple):
    """What a tool result leaves for ranking the working set (see :meth:`StateBuilder._working_set`)."""

    touch: Mapping[str, int]
    refs: Mapping[str, int]
    read: tuple[str, ...]
    modified: tuple[str, ...]
    unresolved: str
    now: int
    named: frozenset[str]


class StateBuilder:
    """Folds events into a :class:`TaskState` one at a time (incremental: O(1) per event).

    ``policies`` are the tool policies in force: they classify each call (what it read, changed or
    ran), so a research or browser preset derives its state from its own categories.
    """

    def __init__(self, base: TaskState | None = None, *, policies: Sequence[ToolPolicy]) -> None:
        self._state = base or TaskState()
        self.policies = policies
        self._calls: dict[str, ToolCall] = {}
        self._seen_user = bool(self._state.goal)
        self._named_text: str | None = None
        self._named_paths: frozenset[str] = frozenset()
        self._task_files: tuple[str, ...] = ()
        self._open_file = ""
        # The working set is ranked when someone reads it, not after every tool result: only the
        # latest result's ranking survives, and re-projecting a long session would otherwise rank
        # every file at every result. These are the latest result's inputs, frozen when it arrived.
        self._pending: WorkingSetInputs | None = None

    @property
    def state(self) -> TaskState:
        """The task state after the events applied so far."""
        pending = self._pending
        if pending is not None:
            self._pending = None
            self._state = replace(self._state, working_set=self._working_set(*pending))
        return self._state

    @property
    def task_files(self) -> tuple[str, ...]:
        """Working-set files with an unresolved failure or named by the task (never left unprotected)."""
        _ = self.state  # ranks the pending working set, which sets the task files
        return self._task_files

    @property
    def open_file(self) -> str:
        """The file a SWE-agent ``open`` made current, which its ``edit``, ``goto`` and ``scroll_*`` act on."""
        return self._open_file

    def apply(self, event: Event) -> None:
        """Fold one event into the state."""
        s = self._state
        if isinstance(event, Instruction):
            if not self._seen_user:
                self._state = replace(s, system=(*s.system, event.text))
        elif isinstance(event, UserMessage) and event.speaks:
            self._apply_user(event)
        elif isinstance(event, Steering):
            self._state = replace(
                s,
                latest_steering=event.text,
                latest_user_intent=event.text,
                constraints=self._add_constraints(s.constraints, [event.text[:MAX_CONSTRAINT_CHARS]]),
            )
        elif isinstance(event, Pin):
            if event.label == "goal" and not s.goal:
                self._state = replace(s, goal=event.text, goal_event_id=event.id)
            else:
                self._state = replace(s, constraints=self._add_constraints(s.constraints, [event.text]))
        elif isinstance(event, AssistantMessage):
            for call in event.tool_calls:
                self._calls[call.id] = call
            if event.text.strip():
                self._state = replace(s, last_assistant_text=event.text.strip()[-600:])
        elif isinstance(event, ToolResult):
            self._apply_tool_result(event)
        elif isinstance(event, Compaction):
            self._state = replace(s, compactions=s.compactions + 1)

    def _apply_user(self, event: UserMessage) -> None:
        s = self._state
        if not self._seen_user:
            self._seen_user = True
            s = replace(s, goal=event.text, goal_event_id=event.id)
        self._state = replace(
            s,
            latest_user_intent=event.text[:2000],
            constraints=self._add_constraints(
                s.constraints, extract_constraints(event.text, agent_text="\n".join(s.system))
            ),
        )

    @staticmethod
    def _add_constraints(existing: tuple[str, ...], new: Iterable[str]) -> tuple[str, ...]:
        merged = _append_unique(existing, *new)
        return merged[-MAX_CONSTRAINTS:]

    def _apply_tool_result(self, result: ToolResult) -> None:
        s = self._state
        call = self._calls.get(result.call_id)
        if call is None:
            return
        policy = policy_for(result.tool_name, call, self.policies)
        resources = resources_of(call, policy.category, open_file=self._open_file)
        self._open_file = opened_file(call) or self._open_file
        refs = dict(s.references)
        touch = dict(s.last_touch)
        read, modified, tests = s.files_read, s.files_modified, list(s.tests)
        ids = (
            s.unresolved_error_ids
            if len(s.unresolved_error_ids) == len(s.unresolved_errors)
            else ("",) * len(s.unresolved_errors)
        )  # snapshots written before error ids were recorded
        errors = list(zip(s.unresolved_errors, ids, strict=True))
        failed = result_failed(result)
        for r in resources:
            refs[r.key] = refs.get(r.key, 0) + 1
            touch[r.key] = result.seq
            if r.kind == "file" and r.access == "read" and not failed:
                read = _append_unique(read, r.key)
            elif r.kind == "file" and r.access == "write" and not failed:
                modified = _append_unique(modified, r.key)
            elif r.kind == "test":
                not_run = test_not_run(_command(call), result.output, result.exit_code)
                if not_run:
                    # Neither passed nor failed: the earlier status of the target stands, and only a
                    # missing runner (a real failure of the command) is an error to resolve.
                    failed = not_run == "runner missing"
                    continue
                passed, failing = _test_outcome(result)
                tests = [t for t in tests if t.target != r.key]
                tests.append(
                    TestStatus(target=r.key, passed=passed, failing=failing, seq=result.seq, event_id=result.id)
                )
                failed = failed or not passed
        key = _action_key(result.tool_name, call, resources)
        errors = [e for e in errors if not e[0].startswith(key)]
        if failed:
            errors.append((key + _first_error_line(result), result.id))
        unresolved = (
            " ".join(e[0] for e in errors[-MAX_ERRORS:])
            + " "
            + " ".join(f for t in tests if not t.passed for f in (t.target, *t.failing))
        )
        self._pending = WorkingSetInputs(touch, refs, read, modified, unresolved, result.seq, self._task_paths())
        self._state = replace(
            s,
            references=refs,
            last_touch=touch,
            files_read=read,
            files_modified=modified,
            tests=tuple(tests),
            unresolved_errors=tuple(e[0] for e in errors[-MAX_ERRORS:]),
            unresolved_error_ids=tuple(e[1] for e in errors[-MAX_ERRORS:]),
        )

    def _working_set(
        self,
        touch: Mapping[str, int],
        refs: Mapping[str, int],
        read: tuple[str, ...],
        modified: tuple[str, ...],
        unresolved: str,
        now: int,
        named: frozenset[str],
    ) -> tuple[str, ...]:
        changed = set(modified)
        failing = _path_tokens(unresolved)
        ranked: list[tuple[int, int, int, str]] = []
        seen = changed.union(read)
        files = [k for k in touch if k in seen]
        latest = max(files, key=lambda k: touch[k], default="")
        # The file of a failing test is part of the work even before the agent opens it.
        files += sorted(t for t in failing if t not in seen and _TEST_FILE.search(t))
        touch = {**touch, **{k: now for k in files if k not in touch}}
        for key in files:
            group = 0
            if failing and _names(failing, key):
                group = 4
            elif named and _names(named, key):
                group = 3
            elif key in changed:
                group = 2
            elif key == latest or (refs.get(key, 0) > 1 and now - touch[key] <= WORKING_SET_DECAY_EVENTS):
                group = 1
            if group:
                ranked.append((-group, -touch[key], -refs.get(key, 0), key))
        ranked.sort()
        kept = ranked[:MAX_WORKING_SET]
        self._task_files = tuple(r[3] for r in kept if -r[0] >= 3)
        return tuple(r[3] for r in kept)

    def _task_paths(self) -> frozenset[str]:
        """Paths the goal, a constraint or the latest steering names (parsed once per text)."""
        s = self._state
        text = "\n".join((s.goal, s.latest_steering, *s.constraints))
        if text != self._named_text:
            self._named_text, self._named_paths = text, _path_tokens(text)
        return self._named_paths


def _path_tokens(text: str) -> frozenset[str]:
    """Path-like words of ``text`` (``src/calc.py``, ``calc.py``, ``pkg/sub``), without ``./``."""
    return frozenset(t for raw in _PATHLIKE.findall(text) if (t := raw.strip("./")))


def _names(tokens: frozenset[str], key: str) -> bool:
    """Whether one of ``tokens`` names the file ``key``: the whole path or a trailing part of it.

    ``src/calc.py`` and ``calc.py`` both name ``/testbed/src/calc.py``.
    """
    return not tokens.isdisjoint(_suffixes(key))


@lru_cache(maxsize=4_096)
def _suffixes(key: str) -> frozenset[str]:
    """``key`` and its trailing parts: every name that names it (split once per path, not per event)."""
    parts = key.split("/")
    return frozenset("/".join(parts[i:]) for i in range(len(parts)))


def derive_state(
    events: Iterable[Event], *, base: TaskState | None = None, policies: Sequence[ToolPolicy]
) -> TaskState:
    """The task state after ``events``, from ``base`` (a compaction snapshot), under ``policies``."""
    builder = StateBuilder(base, policies=policies)
    for event in events:
        builder.apply(event)
    return builder.state
