"""Helpers for the compaction, trigger and loop tests: a session driver and model profiles."""

from __future__ import annotations

import dataclasses
import re

from contextwarden.assemble.manager import ContextManager, ContextPolicy
from contextwarden.context import ModelContext
from contextwarden.log.events import Steering, ToolCall, UsageReport
from contextwarden.log.store._protocol import SessionStore
from contextwarden.models import ModelProfile, get_profile
from contextwarden.plan.compaction import CompactionSettings, WindowCompactor
from contextwarden.plan.compaction._base import Summarizer
from contextwarden.providers import ModelReply
from contextwarden.testing import SessionBuilder, estimate_request_tokens, make_response
from contextwarden.tokens import HeuristicCounter

COUNTER = HeuristicCounter()

GOAL = "Fix the sum function in src/calc.py: sum(2, 3) returns 23 but should return 5."
CONSTRAINT = "Do not change the public interface of sum."


def profile(window: int = 40_000, *, name: str = "test-model", max_output: int | None = None) -> ModelProfile:
    """A known model profile with a chosen window.

    Its max output (unless given) is 4,000 up to a 32,768 window and 32,768 above, so the compaction
    reserve, which follows the max output, stays the 32,768 these tests' small windows were sized for.
    """
    output = max_output if max_output is not None else (4_000 if window <= 32_768 else 32_768)
    return dataclasses.replace(get_profile("gpt-4o"), name=name, context_window=window, max_output_tokens=output)


class Agent(SessionBuilder):
    """A coding agent's session: the task with its constraint, then reads, writes and test runs."""

    def start(self, task: str = GOAL, *, system: str = "You are a careful coding agent.") -> Agent:
        super().start(f"{task} {CONSTRAINT}", system=system)
        return self

    def read(self, path: str, size: int = 400) -> None:
        body = "\n".join(f"line {i} of {path}: value = compute({i})" for i in range(size // 10))
        self.call("read_file", body, path=path)

    def write(self, path: str) -> None:
        self.call("write_file", f"wrote {path}", path=path, content="def sum(a, b):\n    return a + b\n")

    def test(self, *, failing: str = "") -> None:
        if failing:
            self.call(
                "bash", f"FAILED {failing} - AssertionError: assert 23 == 5\n1 failed", exit_code=1, command="pytest -q"
            )
        else:
            self.call("bash", "3 passed", exit_code=0, command="pytest -q")

    def steer(self, text: str) -> None:
        self.add(Steering(text=text))

    def work(self, rounds: int, *, prefix: str = "src/mod") -> None:
        """Rounds of read / write / test, each a few hundred tokens."""
        for r in range(rounds):
            self.read(f"{prefix}{r}.py")
            self.write(f"{prefix}{r}.py")
            self.test()


def manager(
    store: SessionStore,
    *,
    summarizer: Summarizer | None = None,
    window: int = 40_000,
    settings: CompactionSettings | None = None,
    **policy: object,
) -> ContextManager:
    compactor = WindowCompactor(
        store, summarizer=summarizer, counter=COUNTER, settings=settings or CompactionSettings(keep_recent_tokens=2_000)
    )
    pol = ContextPolicy(**policy) if policy else ContextPolicy()  # type: ignore[arg-type]
    return ContextManager(store, counter=COUNTER, policy=pol, compactor=compactor)


SECTIONED = """## Goal
{goal}
## Constraints & Preferences
- {constraint}
## Progress
### Done
- [x] {done}
### In Progress
- [ ] nothing
### Blocked
- nothing
## Key Decisions
- **Keep it small**: less risk
## Next Steps
1. {next}
## Critical Context
- (none)"""


def sectioned(
    goal: str = "fix sum",
    constraint: str = "keep the interface",
    done: str = "read files",
    next_step: str = "run the tests",
) -> str:
    """A well-formed model summary."""
    return SECTIONED.format(goal=goal, constraint=constraint, done=done, next=next_step)


def answer(text: str, *, stop: str = "end_turn", calls: tuple[ToolCall, ...] = ()) -> object:
    """A scripted summarizer answer whose usage is the request's estimated size."""

    def respond(request: ModelContext) -> ModelReply:
        return make_response(
            text,
            tool_calls=calls,
            stop_reason=stop,
            model="summarizer-model",
            usage=UsageReport(input_tokens=estimate_request_tokens(request), output_tokens=len(text) // 4),
        )

    return respond


def transcript_of(request: ModelContext) -> str:
    """The <conversation> part of a summary request."""
    m = re.search(r"<conversation>\n(.*)\n</conversation>", request.messages[-1].text, re.DOTALL)
    assert m, "no <conversation> block in the summary request"
    return m.group(1)


def previous_of(request: ModelContext) -> str:
    """The <previous-summary> part of a summary request ('' when absent)."""
    m = re.search(r"<previous-summary>\n(.*)\n</previous-summary>", request.messages[-1].text, re.DOTALL)
    return m.group(1) if m else ""
