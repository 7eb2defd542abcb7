"""An agent that has only read keeps its reads (``Protection.exploration_reads``)."""

from __future__ import annotations

from dataclasses import replace

from contextwarden.assemble.manager import ContextManager, ContextPolicy
from contextwarden.budget import BudgetPolicy
from contextwarden.context import ToolDefinition
from contextwarden.log.store.memory import MemoryStore
from contextwarden.plan.planner import PlannerSettings
from contextwarden.plan.protection import Protection
from contextwarden.testing import SessionBuilder
from contextwarden.tokens import HeuristicCounter

TOOLS = (
    ToolDefinition(name="read_file", description="Read a file.", parameters={"type": "object"}),
    ToolDefinition(name="write_file", description="Write a file.", parameters={"type": "object"}),
    ToolDefinition(name="bash", description="Run a command.", parameters={"type": "object"}),
)
NO_WORKING_SET = Protection(working_set_files=0, working_set_reads=0)
EAGER = PlannerSettings(cache_aware=False, min_batch_tokens=0, min_batch_share=0, keep_recent_tool_results=2)


class Agent(SessionBuilder):
    """A scripted session that starts by exploring: each call is an assistant turn and its result."""

    def __init__(self) -> None:
        super().__init__(MemoryStore())
        self.start("find why the loader drops empty records")

    def explore(self) -> None:
        for name in ("loader", "record", "schema"):
            self.call("read_file", f"{name} source " * 600, path=f"src/{name}.py")
        for i in range(5):
            self.call("bash", f"match {i} " * 600, command=f"grep -rn pattern{i} src")

    def tool_texts(self, settings: PlannerSettings = EAGER, *, trigger: int | None = None) -> list[str]:
        policy = ContextPolicy(planner=settings, budget=BudgetPolicy(trigger_tokens=trigger), compact=False)
        manager = ContextManager(self.store, counter=HeuristicCounter(), policy=policy)
        ctx = manager.build("s", model="gpt-4o", tools=TOOLS)
        return [m.text for m in ctx.messages if m.role == "tool"]


def test_a_session_that_has_only_read_keeps_every_read() -> None:
    agent = Agent()
    agent.explore()
    texts = agent.tool_texts()
    assert [t.split()[0] for t in texts[:3]] == ["loader", "record", "schema"]  # verbatim
    assert all("masked" in t for t in texts[3:6])  # the old searches go
    assert texts[-1].startswith("match 4")


def test_the_rule_off_masks_the_reads() -> None:
    agent = Agent()
    agent.explore()
    texts = agent.tool_texts(
        replace(EAGER, protection=Protection(exploration_reads=False, working_set_files=0, working_set_reads=0))
    )
    assert all("masked" in t for t in texts[:6])


def test_the_first_change_ends_exploration_and_lets_the_reads_go() -> None:
    agent = Agent()
    agent.explore()
    agent.call("write_file", "ok", path="src/loader.py", content="x = 1\n")
    for i in range(3):
        agent.call("bash", f"listing {i} " * 600, command=f"ls dir{i}")
    texts = agent.tool_texts(replace(EAGER, protection=NO_WORKING_SET))
    assert "masked" in texts[1] and "masked" in texts[2]  # record.py and schema.py: no longer kept
    assert "loader source" not in texts[0]  # the write made that read stale


def test_a_failing_run_ends_exploration_too() -> None:
    agent = Agent()
    agent.explore()
    agent.call("bash", "Traceback: ValueError: empty record", exit_code=1, command="python repro.py")
    for i in range(3):
        agent.call("bash", f"listing {i} " * 600, command=f"ls dir{i}")
    texts = agent.tool_texts(replace(EAGER, protection=NO_WORKING_SET))
    assert all("masked" in t for t in texts[:3])
    assert "Traceback" in texts[8]  # the unresolved failure itself stays


def test_under_pressure_the_reads_go_in_the_order_of_loss() -> None:
    agent = Agent()
    agent.explore()
    assert not any("masked" in t for t in agent.tool_texts()[:3])
    squeezed = agent.tool_texts(trigger=4_000)
    assert any("masked" in t for t in squeezed[:3])


def read_large_logs(agent: Agent) -> None:
    """Six build logs of about 7,000 tokens each, then two small files."""
    for n in range(6):
        agent.call("read_file", f"build {n} compiling module ok " * 1000, path=f"logs/build-{n}.log")
    for name in ("setup.cfg", "Makefile"):
        agent.call("read_file", f"{name} text", path=name)


def test_the_kept_reads_fit_in_exploration_tokens() -> None:
    agent = Agent()
    read_large_logs(agent)
    texts = agent.tool_texts(replace(EAGER, protection=NO_WORKING_SET))
    # the two small files, build-5 and build-4 fit in 16,384 tokens; build-3 would not: the older logs go
    assert [t.split()[:2] for t in texts[4:6]] == [["build", "4"], ["build", "5"]]
    assert all("masked" in t for t in texts[:4])


def test_exploration_tokens_sets_how_much_is_kept() -> None:
    for tokens, verbatim in ((0, 2), (10**6, 8)):
        agent = Agent()
        read_large_logs(agent)
        protection = replace(NO_WORKING_SET, exploration_tokens=tokens)
        texts = agent.tool_texts(replace(EAGER, protection=protection))
        assert sum("masked" not in t for t in texts) == verbatim  # 0: only the 2 recent results
