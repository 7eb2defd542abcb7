"""What the planner keeps verbatim (``PlannerSettings.protection``): the evidence an edit needs, not the logs."""

from __future__ import annotations

import dataclasses
import warnings

import pytest

from contextwarden.assemble.manager import ContextManager, ContextPolicy
from contextwarden.context import ModelContext, ToolDefinition
from contextwarden.log.events import AssistantMessage, Event, ToolCall, ToolResult, UserMessage
from contextwarden.log.store.memory import MemoryStore
from contextwarden.models import ModelProfile
from contextwarden.plan.planner import PlannerSettings, plan
from contextwarden.plan.protection import Protection
from contextwarden.replay.catalog import parse_strategy
from contextwarden.replay.warden import ContextWardenStrategy
from contextwarden.tokens import HeuristicCounter
from contextwarden.window.policies.presets import CODING_TOOL_POLICIES, ToolPolicy
from contextwarden.window.projection import Projection, ProjectionConfig
from contextwarden.window.tiers import Tier

SMALL = ModelProfile(name="declared-64k", context_window=65_536, max_output_tokens=4_096)
"""What a framework adapter declares for a model the table does not hold: 64K, no cache prices."""
TOOLS = tuple(
    ToolDefinition(name=n, description=f"{n}.", parameters={"type": "object"})
    for n in ("read_file", "str_replace", "bash")
)
EDITED = "src/checkout.py"


def _source(path: str, version: int) -> str:
    name = path.rsplit("/", 1)[-1].removesuffix(".py")
    return "".join(f"def {name}_{version}_{i}(x):\n    return x + {i}  # {path} v{version}\n" for i in range(120))


def _log(kind: str, run: int, size: int) -> str:
    lines, n = [], 0
    while sum(map(len, lines)) < size:
        if kind == "test":
            lines.append(f"test run {run}.{n}: tests/test_mod_{n}.py::test_case PASSED [ 42%]\n")
        else:
            lines.append(f"build {run}.{n}: CC build/obj_{n}.o -O2 -Wall ... done\n")
        n += 1
    return "".join(lines)


class _Agent:
    """A tool-heavy session driven through the manager: a build before every model call, as an adapter does."""

    def __init__(self, policy: ContextPolicy) -> None:
        self.store = MemoryStore()
        self.store.create_session("s")
        self.manager = ContextManager(self.store, policy=policy, compactor=None)
        self.calls = 0
        self.add(UserMessage(text="Order totals are wrong for discounted carts. Find the bug and fix it."))

    def add(self, *events: Event) -> None:
        self.store.append("s", list(events), expected_last_seq=self.store.get_session("s").last_seq)

    def call(self, name: str, output: str, **args: object) -> ModelContext:
        context = self.manager.build("s", model=SMALL, tools=TOOLS)
        self.calls += 1
        cid = f"c{self.calls}"
        self.add(AssistantMessage(tool_calls=(ToolCall(id=cid, name=name, arguments=dict(args)),)))  # type: ignore[arg-type]
        self.add(ToolResult(call_id=cid, tool_name=name, output=output, exit_code=0))
        return context


def _edits(policy: ContextPolicy) -> list[tuple[bool, bool, bool]]:
    """42 calls, 4 edits of one file; before each edit: (its latest read shown, test log shown, build log shown)."""
    agent = _Agent(policy)
    for path in ("src/cart.py", "src/pricing.py", "src/discount.py", EDITED):
        agent.call("read_file", _source(path, 0), path=path)
    agent.call("bash", "src/pricing.py:12: discount\n" * 60, command="grep -rn discount src")
    agent.call("bash", _log("test", 0, 28_000), command="pytest -q tests")
    agent.call("bash", _log("build", 0, 13_500), command="make build")
    seen = []
    for k in range(1, 5):
        agent.call("read_file", _source(EDITED, k), path=EDITED)
        agent.call("bash", f"{EDITED}:{k}: total\n" * 40, command=f"grep -n total {EDITED}")
        agent.call("read_file", _source(f"src/helper{k}.py", 0), path=f"src/helper{k}.py")
        agent.call("bash", _log("test", k, 28_000), command="pytest -q tests")  # 28 KB
        agent.call("bash", _log("build", k, 13_500), command="make build")  # 13.5 KB
        context = agent.call("str_replace", f"Edited {EDITED}", path=EDITED, old_str="x + 1", new_str="x - 1")
        shown = [m.text for m in context.messages if m.role == "tool"]
        seen.append(
            (
                any(f"{EDITED} v{k}" in t for t in shown),
                any(f"test run {k}.0:" in t for t in shown),
                any(f"build {k}.0:" in t for t in shown),
            )
        )
    while agent.calls < 42:
        agent.call("bash", "file\n" * 50, command=f"ls dir{agent.calls}")
    return seen


def test_the_read_of_the_file_being_edited_outlives_the_logs_of_its_age() -> None:
    """A 42-call tool-heavy session on a 64K model: at every edit the file's latest read is in view."""
    seen = _edits(ContextPolicy())
    assert all(read for read, _, _ in seen), seen
    assert not any(test for _, test, _ in seen)  # the 28 KB test logs of the same age went first


def test_without_the_working_set_file_the_first_edit_loses_its_read() -> None:
    policy = ContextPolicy(planner=PlannerSettings(protection=Protection(working_set_files=0)))
    seen = _edits(policy)
    assert not seen[0][0] and seen[0][2]  # the read masked while the newer build log stays


def test_the_working_set_reads_keep_every_recent_read_of_the_working_set_when_asked() -> None:
    policy = ContextPolicy(planner=PlannerSettings(protection=Protection(working_set_files=0, working_set_reads=8)))
    assert all(read for read, _, _ in _edits(policy))


def test_a_file_the_session_came_back_to_outranks_one_read_once_since() -> None:
    def texts(protection: Protection) -> list[str]:
        agent = _Agent(
            ContextPolicy(
                planner=PlannerSettings(
                    cache_aware=False,
                    min_batch_tokens=0,
                    min_batch_share=0,
                    keep_recent_tool_results=2,
                    protection=protection,
                )
            )
        )
        agent.call("read_file", "loader v1 " * 800, path="loader.py")
        agent.call("read_file", "loader again " * 800, path="loader.py")  # the agent came back to it
        agent.call("read_file", "other module " * 800, path="other.py")  # read once, and later
        for i in range(6):
            agent.call("bash", f"listing {i} " * 800, command=f"ls dir{i}")
        context = agent.manager.build("s", model=SMALL, tools=TOOLS)
        return [m.text for m in context.messages if m.role == "tool"]

    kept = texts(Protection(exploration_reads=False))  # the session only reads: that rule would keep every read
    assert kept[1].startswith("loader again") and "loader v1" not in kept[0]  # the older read is superseded
    assert "masked" in kept[2] and "masked" in kept[3]  # the file read once goes, and an old listing
    assert "loader again" not in texts(Protection(exploration_reads=False, working_set_files=0))[1]


def test_the_old_knob_names_still_work_for_one_release() -> None:
    with pytest.warns(DeprecationWarning, match="Protection"):
        old = PlannerSettings(working_set_files=3, protect_exploration_reads=False)
    assert old.protection == Protection(working_set_files=3, exploration_reads=False)
    assert old.working_set_files == 3 and not old.protect_exploration_reads  # type: ignore[misc]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        varied = dataclasses.replace(old, keep_recent_tool_results=5)  # passes the old names back: no warning
        other = dataclasses.replace(old, protection=Protection(modified_files=0))
    assert varied.protection == old.protection and other.protection == Protection(modified_files=0)
    with pytest.warns(DeprecationWarning):
        assert dataclasses.replace(old, protect_modified_files=1).protection.modified_files == 1


def test_the_replay_varies_protection_by_name() -> None:
    strategy = parse_strategy("contextwarden:no-working-set-reads,modified-files=0")
    assert isinstance(strategy, ContextWardenStrategy)
    assert strategy.policy.planner.protection == Protection(working_set_reads=0, modified_files=0)


def test_under_pressure_a_read_of_a_working_set_file_counts_as_the_working_set_tier() -> None:
    """A tool that files its output low (history) still outlives a log of the recent tier when it reads the work."""
    notes = ToolPolicy(name="notes", patterns=("read_notes",), category="file_read", tier=Tier.HISTORY)
    store = MemoryStore()
    store.create_session("p")
    calls = [
        ("read_notes", "notes " * 600, {"path": "plan.md"}),
        ("bash", "".join(f"compiling module {i} ... ok\n" for i in range(300)), {"command": "make"}),
        ("bash", "listing\n" * 50, {"command": "ls"}),
    ]
    events: list[Event] = [UserMessage(text="carry out the plan")]
    for n, (name, output, args) in enumerate(calls):
        events += [
            AssistantMessage(tool_calls=(ToolCall(id=f"k{n}", name=name, arguments=args),)),  # type: ignore[arg-type]
            ToolResult(call_id=f"k{n}", tool_name=name, output=output),
        ]
    p = Projection(ProjectionConfig(counter=HeuristicCounter(), tool_policies=(notes, *CODING_TOOL_POLICIES)))
    for event in store.append("p", events, expected_last_seq=0):
        p.add(event)
    assert "plan.md" in p.state.working_set
    read, log = [i.id for i in p.items if i.message.role == "tool"][:2]
    settings = PlannerSettings(
        keep_recent_tool_results=1, pressure_target=1.0, protection=Protection(working_set_files=0)
    )
    edits = {e.target_id: e for e in p.mask_edits(1, frozenset())}
    assert set(edits) == {read, log}
    assert p.loss_key(edits[log]) < p.loss_key(edits[read])  # the log goes first
    one = p.savings(edits[log])
    decided = plan(p, total=p.total, trigger=p.total - one // 2, profile=SMALL, turns_so_far=3, settings=settings)
    assert [e.target_id for e in decided.edits] == [log]  # tier 5 by its tool, but it reads the work
