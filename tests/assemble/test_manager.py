"""The context builder end to end: budget-true, cache-stable, nothing that matters lost."""

from __future__ import annotations

import dataclasses
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contextwarden.assemble.manager import ContextManager, ContextPolicy
from contextwarden.context import ModelContext, ToolDefinition
from contextwarden.errors import BudgetExceededError
from contextwarden.log.events import (
    AssistantMessage,
    BinaryPart,
    Instruction,
    SettingChange,
    Steering,
    ToolCall,
    ToolResult,
    UserMessage,
)
from contextwarden.log.store.memory import MemoryStore
from contextwarden.models import get_profile
from contextwarden.plan.planner import PlannerSettings
from contextwarden.plan.protection import Protection
from contextwarden.testing import SessionBuilder
from contextwarden.tokens import HeuristicCounter
from contextwarden.wire import render_openai_chat

TOOLS = (
    ToolDefinition(name="read_file", description="Read a file.", parameters={"type": "object"}),
    ToolDefinition(name="edit_file", description="Edit a file.", parameters={"type": "object"}),
    ToolDefinition(name="bash", description="Run a command.", parameters={"type": "object"}),
)


def small_profile(window: int = 40_000):
    return dataclasses.replace(get_profile("gpt-4o"), name="test-small", context_window=window, max_output_tokens=2_000)


def rendered(ctx: ModelContext) -> list[str]:
    """The request as byte strings: tools first, then each message (OpenAI Chat wire format)."""
    payload = render_openai_chat(ctx)
    head = json.dumps(payload.get("tools", []), ensure_ascii=False)
    return [head] + [json.dumps(m, ensure_ascii=False) for m in payload["messages"]]


def extends(now: list[str], before: list[str]) -> bool:
    return now[: len(before)] == before


def new_manager(store: MemoryStore, *, compactor: str | None = None, **policy: object) -> ContextManager:
    pol = ContextPolicy(**policy) if policy else ContextPolicy()  # type: ignore[arg-type]
    return ContextManager(store, counter=HeuristicCounter(), policy=pol, compactor=compactor)  # type: ignore[arg-type]


def test_build_orders_system_then_goal_and_keeps_goal_verbatim() -> None:
    store = MemoryStore()
    s = SessionBuilder(store)
    s.add(Instruction(text="You are careful."), UserMessage(text="Fix sum(). Don't change the public API."))
    s.call("read_file", "def sum(a, b): return str(a)+str(b)", path="calc.py")
    ctx = new_manager(store).build("s", model="gpt-4o", tools=TOOLS)
    assert ctx.system == "You are careful."
    assert ctx.messages[0].role == "user" and "Don't change the public API." in ctx.messages[0].text
    assert [m.role for m in ctx.messages] == ["user", "assistant", "tool"]
    assert ctx.total_tokens == sum(ctx.sections.values())
    assert ctx.total_tokens <= ctx.budget


def test_huge_tool_output_is_truncated_at_ingestion_with_marker_and_error_lines() -> None:
    store = MemoryStore()
    s = SessionBuilder(store)
    s.add(UserMessage(text="build it"))
    lines = [f"compiling module {i}" for i in range(40_000)]
    lines[20_000] = "error: undefined reference to `frobnicate`"
    s.call("bash", "\n".join(lines), command="make")
    ctx = new_manager(store).build("s", model="gpt-4o", tools=TOOLS)
    tool = ctx.messages[-1]
    assert tool.role == "tool"
    assert tool.tokens <= 10_000 + 64
    assert "undefined reference to `frobnicate`" in tool.text
    assert "read_range" in tool.text
    assert any(d.action == "truncate" for d in ctx.decisions)


def test_edit_marks_earlier_read_out_of_date_without_breaking_prefix() -> None:
    store = MemoryStore()
    s = SessionBuilder(store)
    s.add(UserMessage(text="fix calc.py"))
    s.call("read_file", "OLD CONTENT v1\n" * 20, path="calc.py")
    manager = new_manager(store)
    first = manager.build("s", model="gpt-4o", tools=TOOLS)
    s.call("edit_file", "edited calc.py", path="calc.py", old="a", new="b")
    second = manager.build("s", model="gpt-4o", tools=TOOLS)
    if not second.window_event_ids:
        assert extends(rendered(second), rendered(first))
    # the old read is either replaced or explicitly flagged as out of date after it
    edit_result = second.messages[-1].text
    old_read = next(m for m in second.messages if m.role == "tool")
    assert "out of date" in edit_result or "OLD CONTENT" not in old_read.text


def test_manager_only_appends_window_events_and_its_build_record() -> None:
    store = MemoryStore()
    s = SessionBuilder(store)
    s.add(UserMessage(text="explore"))
    for i in range(40):
        s.call("bash", f"output {i}\n" + "x " * 2_000, command=f"ls dir{i}")
    before = store.read("s")
    manager = new_manager(store)
    ctx = manager.build("s", model=small_profile(), tools=TOOLS)
    after = store.read("s")
    assert after[: len(before)] == before
    new = after[len(before) :]
    records = [e for e in new if not e.is_window_event]
    assert len(records) == 1 and isinstance(records[0], SettingChange) and records[0].model == "test-small"
    assert ctx.window_event_ids and set(ctx.window_event_ids) == {e.id for e in new if e.is_window_event}
    assert ctx.total_tokens <= ctx.budget


def test_default_manager_compacts_with_the_structured_summarizer() -> None:
    store = MemoryStore()
    s = SessionBuilder(store)
    s.add(UserMessage(text="Port the parser. Never change the CLI flags."))
    for i in range(30):
        s.add(UserMessage(text=f"next step {i}: " + "detail " * 900))
    ctx = ContextManager(store, counter=HeuristicCounter()).build("s", model=small_profile(), tools=TOOLS)
    assert any(e.kind == "compaction" for e in store.read("s"))
    assert ctx.sections["summary"] > 0 and ctx.sections["pinned"] > 0
    assert "Never change the CLI flags." in "".join(m.text for m in ctx.messages)
    assert ctx.total_tokens <= ctx.budget


def test_over_budget_without_compactor_raises_with_breakdown() -> None:
    store = MemoryStore()
    s = SessionBuilder(store)
    s.add(UserMessage(text="word " * 9_000))
    manager = new_manager(store)
    with pytest.raises(BudgetExceededError) as info:
        manager.build("s", model=small_profile(window=4_000), tools=TOOLS)
    assert "conversation" in info.value.sections


def test_single_user_message_larger_than_window_is_bounded() -> None:
    store = MemoryStore()
    s = SessionBuilder(store)
    s.add(UserMessage(text="data " * 200_000))
    ctx = new_manager(store).build("s", model="gpt-4o", tools=TOOLS)
    assert ctx.messages[0].tokens <= 10_000 + 64


def test_bad_input_orphans_duplicates_binary_empty() -> None:
    store = MemoryStore()
    s = SessionBuilder(store)
    s.add(Instruction(text="sys"))
    ctx = new_manager(store).build("s", model="gpt-4o", tools=TOOLS)
    assert ctx.messages == ()
    s.add(UserMessage(text="go"))
    s.add(ToolResult(call_id="nope", tool_name="bash", output="orphan"))
    s.add(
        AssistantMessage(
            tool_calls=(ToolCall(id="d", name="bash", arguments={}), ToolCall(id="d", name="bash", arguments={}))
        )
    )
    s.add(
        ToolResult(
            call_id="d",
            tool_name="bash",
            output="\x00\udcff binary",
            parts=(BinaryPart(media_type="image/png", data=b"\x89PNG\x00"),),
        )
    )
    s.add(ToolResult(call_id="d", tool_name="bash", output=""))
    s.add(AssistantMessage(tool_calls=(ToolCall(id="lost", name="bash", arguments={}),)))
    s.add(UserMessage(text="and?"))
    ctx = new_manager(store).build("s", model="gpt-4o", tools=TOOLS)
    calls = [c.id for m in ctx.messages for c in m.tool_calls]
    results = [m.tool_call_id for m in ctx.messages if m.role == "tool"]
    assert sorted(calls) == sorted(results)
    assert "nope" not in results
    json.dumps(render_openai_chat(ctx))


# --------------------------------------------------------------------------- property test

action = st.one_of(
    st.tuples(st.just("read"), st.integers(0, 4), st.integers(1, 3_000)),
    st.tuples(st.just("edit"), st.integers(0, 4), st.integers(1, 50)),
    st.tuples(st.just("test"), st.integers(0, 1), st.integers(1, 4_000)),
    st.tuples(st.just("bash"), st.integers(0, 9), st.integers(1, 8_000)),
    st.tuples(st.just("user"), st.integers(0, 3), st.integers(1, 60)),
    st.tuples(st.just("steer"), st.integers(0, 3), st.integers(1, 30)),
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(actions=st.lists(action, min_size=5, max_size=45), window=st.sampled_from([30_000, 60_000, 200_000]))
def test_property_prefix_stable_between_window_events_and_always_within_budget(actions, window) -> None:
    store = MemoryStore()
    s = SessionBuilder(store)
    s.add(Instruction(text="You are a coding agent."), UserMessage(text="Fix the bug. Never touch prod.cfg."))
    profile = small_profile(window)
    manager = ContextManager(
        store, counter=HeuristicCounter(), policy=ContextPolicy(planner=PlannerSettings(keep_recent_tool_results=4))
    )
    previous: list[str] | None = None
    for kind, k, size in actions:
        if kind == "read":
            s.call("read_file", f"line of f{k}\n" * size, path=f"src/f{k}.py")
        elif kind == "edit":
            s.call("edit_file", f"edited f{k}" * size, path=f"src/f{k}.py")
        elif kind == "test":
            s.call(
                "bash",
                ("FAILED tests/test_a.py::t\n" if size % 2 else "ok\n") * (size // 10 + 1),
                command=f"pytest tests/test_{k}.py",
            )
        elif kind == "bash":
            s.call("bash", f"out {k} " * size, command=f"ls d{k}")
        elif kind == "user":
            s.add(UserMessage(text=f"please also check f{k} " * size))
        else:
            s.add(Steering(text=f"Actually, do not edit f{k}.py"))
        try:
            ctx = manager.build("s", model=profile, tools=TOOLS)
        except BudgetExceededError:
            previous = None  # pinned content alone over a tiny window: a clear error is the defined result
            continue
        assert ctx.total_tokens <= ctx.budget
        assert all(m.tokens <= 10_000 + 64 for m in ctx.messages)
        calls = [c.id for m in ctx.messages for c in m.tool_calls]
        assert sorted(calls) == sorted(m.tool_call_id for m in ctx.messages if m.role == "tool")
        assert "Never touch prod.cfg." in ctx.messages[0].text
        now = rendered(ctx)
        if previous is not None and not ctx.window_event_ids:
            assert extends(now, previous)
        previous = now
    kinds = {e.kind for e in store.read("s") if e.is_window_event}
    assert kinds <= {"context_edit", "compaction"}


def test_retrieval_reads_back_masked_output_and_is_bounded() -> None:
    store = MemoryStore()
    s = SessionBuilder(store)
    s.add(UserMessage(text="look"))
    s.call("bash", "\n".join(f"row {i}" for i in range(1, 30_001)), command="cat big.csv")
    manager = new_manager(store)
    ctx = manager.build("s", model="gpt-4o", tools=TOOLS)
    assert [t.name for t in ctx.tools][-2:] == ["read_range", "recall"]
    artifact = next(e.id for e in store.read("s") if isinstance(e, ToolResult))
    assert artifact in ctx.messages[-1].text
    answer = manager.retrieve(
        "s",
        ToolCall(
            id="r1", name="read_range", arguments={"artifact_id": artifact, "start_line": 15_000, "end_line": 15_002}
        ),
    )
    assert "row 15001" in answer.output and "row 14998" not in answer.output
    found = manager.retrieve("s", ToolCall(id="r2", name="recall", arguments={"query": "row 29999"}))
    assert artifact in found.output
    with pytest.raises(Exception, match="not a retrieval tool"):
        manager.retrieve("s", ToolCall(id="r3", name="bash", arguments={}))


def test_supersession_and_staleness_become_placeholders_that_say_by_what() -> None:
    store = MemoryStore()
    s = SessionBuilder(store)
    s.add(UserMessage(text="fix it"))
    s.call("read_file", "v1 " * 3_000, path="a.py")
    s.call("read_file", "lines 10-20 " * 900, path="b.py", view_range=[10, 20])
    s.call("read_file", "other lines " * 900, path="b.py", view_range=[30, 40])
    s.call("bash", "".join(f"FAILED tests/test_a.py::t{i}\n" for i in range(300)), command="pytest tests/test_a.py")
    s.call("read_file", "v1 again " * 3_000, path="a.py")
    s.call("edit_file", "ok", path="a.py", old_str="x", new_str="y")
    s.call("bash", "1 passed", command="pytest tests/test_a.py")
    policy = ContextPolicy(
        planner=PlannerSettings(cache_aware=False, min_batch_tokens=0, min_batch_share=0, mask=False)
    )
    ctx = new_manager(store).build("s", model="gpt-4o", tools=TOOLS, policy=policy)
    tools = [m for m in ctx.messages if m.role == "tool"]
    first_read, b1, b2, failing, second_read = tools[:5]
    # the later call is named by its tool and call id, as the model sees them; no seq, which it does not
    later = second_read.tool_call_id
    assert f"superseded by the later read_file call {later}:" in first_read.text and "seq" not in first_read.text
    assert "lines 10-20" in b1.text and "other lines" in b2.text  # different parts stay current
    assert "superseded" in failing.text  # the later passing run of the same target replaces it
    assert "stale" in second_read.text and "read_range" in second_read.text
    assert tools[-1].text.startswith("1 passed")


def test_failing_test_output_is_never_masked_while_unresolved() -> None:
    store = MemoryStore()
    s = SessionBuilder(store)
    s.add(UserMessage(text="make the tests pass"))
    s.call(
        "bash",
        "FAILED tests/test_core.py::test_sum - assert 23 == 5\n" + "trace\n" * 800,
        command="pytest tests/test_core.py",
    )
    for i in range(12):
        s.call("read_file", f"module {i} " * 800, path=f"m{i}.py")
    policy = ContextPolicy(
        planner=PlannerSettings(
            cache_aware=False,
            min_batch_tokens=0,
            min_batch_share=0,
            keep_recent_tool_results=2,
            protection=Protection(working_set_files=0, working_set_reads=0),
        )
    )
    ctx = new_manager(store).build("s", model="gpt-4o", tools=TOOLS, policy=policy)
    texts = [m.text for m in ctx.messages if m.role == "tool"]
    assert "assert 23 == 5" in texts[0]
    assert sum("masked" in t for t in texts) == 10


def test_latest_read_of_working_set_files_stays_verbatim() -> None:
    def run(working_set_files: int) -> list[str]:
        store = MemoryStore()
        s = SessionBuilder(store)
        s.add(UserMessage(text="refactor core"))
        s.call("read_file", "core v1 " * 800, path="core.py")
        for i in range(8):
            s.call("bash", f"listing {i} " * 800, command=f"ls dir{i}")
        policy = ContextPolicy(
            planner=PlannerSettings(
                cache_aware=False,
                min_batch_tokens=0,
                min_batch_share=0,
                keep_recent_tool_results=2,
                protection=Protection(
                    working_set_files=working_set_files,
                    working_set_reads=0,  # that rule keeps core.py from voluntary batches too
                    exploration_reads=False,  # the session only reads: that rule would keep core.py too
                ),
            )
        )
        ctx = new_manager(store).build("s", model="gpt-4o", tools=TOOLS, policy=policy)
        return [m.text for m in ctx.messages if m.role == "tool"]

    assert "masked" in run(0)[0]
    protected = run(3)
    assert protected[0].startswith("core v1") and "masked" in protected[1]


def test_a_100_mb_failing_output_is_bounded_and_keeps_its_error() -> None:
    store = MemoryStore()
    s = SessionBuilder(store)
    s.add(UserMessage(text="build"))
    s.add(AssistantMessage(tool_calls=(ToolCall(id="c", name="bash", arguments={"command": "make"}),)))
    noise = "".join(f"compiling unit {i}\n" for i in range(5_000_000))  # ~100 MB, every line different
    s.add(ToolResult(call_id="c", tool_name="bash", output=noise + "error: boom\n" + noise[:1_000], exit_code=2))
    ctx = new_manager(store).build("s", model="gpt-4o", tools=TOOLS)
    tool = ctx.messages[-1]
    assert tool.tokens <= 10_000 + 64 and "error: boom" in tool.text
    assert ctx.total_tokens <= ctx.budget
