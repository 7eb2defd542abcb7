"""A file the session came back to keeps its latest read (``PlannerSettings.protect_revisited_files``)."""

from __future__ import annotations

from contextwarden.assemble.manager import ContextManager, ContextPolicy
from contextwarden.context import ToolDefinition
from contextwarden.log.events import AssistantMessage, Event, ToolCall, ToolResult, UserMessage
from contextwarden.log.store.memory import MemoryStore
from contextwarden.plan.planner import PlannerSettings
from contextwarden.tokens import HeuristicCounter

TOOLS = (
    ToolDefinition(name="read_file", description="Read a file.", parameters={"type": "object"}),
    ToolDefinition(name="bash", description="Run a command.", parameters={"type": "object"}),
)


def _tool_texts(*, revisited: bool) -> list[str]:
    store = MemoryStore()
    store.create_session("s")
    calls = 0

    def add(*events: Event) -> None:
        store.append("s", list(events), expected_last_seq=store.get_session("s").last_seq)

    def call(name: str, output: str, **args: object) -> None:
        nonlocal calls
        calls += 1
        add(AssistantMessage(tool_calls=(ToolCall(id=f"c{calls}", name=name, arguments=dict(args)),)))  # type: ignore[arg-type]
        add(ToolResult(call_id=f"c{calls}", tool_name=name, output=output))

    add(UserMessage(text="refactor the loader"))
    call("read_file", "loader v1 " * 800, path="loader.py")
    call("read_file", "loader again " * 800, path="loader.py")  # the agent came back to it
    call("read_file", "other module " * 800, path="other.py")  # the latest read: the one working_set_files keeps
    for i in range(6):
        call("bash", f"listing {i} " * 800, command=f"ls dir{i}")
    settings = PlannerSettings(
        cache_aware=False,
        min_batch_tokens=0,
        min_batch_share=0,
        keep_recent_tool_results=2,
        working_set_files=1,
        protect_revisited_files=revisited,
        protect_exploration_reads=False,  # the session only reads: that rule would keep every read
    )
    manager = ContextManager(store, counter=HeuristicCounter(), policy=ContextPolicy(planner=settings))
    ctx = manager.build("s", model="gpt-4o", tools=TOOLS)
    return [m.text for m in ctx.messages if m.role == "tool"]


def test_the_latest_read_of_a_revisited_file_stays_verbatim() -> None:
    kept = _tool_texts(revisited=True)
    assert kept[1].startswith("loader again") and kept[2].startswith("other module")
    assert "loader v1" not in kept[0]  # the older read of the same file is still superseded
    assert "masked" in kept[3]


def test_without_the_rule_only_the_top_working_set_file_is_kept() -> None:
    masked = _tool_texts(revisited=False)
    assert "loader again" not in masked[1] and masked[2].startswith("other module")
