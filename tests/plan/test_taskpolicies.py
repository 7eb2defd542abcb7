"""Task presets: selectable by name, mapping each kind of agent's tools to tiers and retention."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from _paths import ROOT
from contextwarden.assemble.manager import ContextManager, ContextPolicy
from contextwarden.errors import ConfigError, UsageError
from contextwarden.log.events import AssistantMessage, Instruction, ToolCall, ToolResult, UserMessage
from contextwarden.log.store import MemoryStore
from contextwarden.plan.planner import PlannerSettings
from contextwarden.plan.taskpolicies import (
    BROWSER,
    CODING,
    RESEARCH,
    Keep,
    TaskPolicy,
    get_task_policy,
    get_task_preset,
    register_task_policy,
    task_policy_names,
)
from contextwarden.replay import ReplaySettings, load_inputs, replay_file
from contextwarden.replay.catalog import parse_strategy
from contextwarden.replay.engine import reference_of
from contextwarden.replay.warden import ContextWardenStrategy
from contextwarden.tokens import HeuristicCounter, best_counter
from contextwarden.window.items import Lifecycle, Tier
from contextwarden.window.policies.presets import policy_for
from contextwarden.wire.blocks import BlockMeter


def _policy_name(preset: str, tool: str, args: dict[str, Any] | None = None) -> str:
    policies = get_task_policy(preset).tool_policies
    call = ToolCall(id="x", name=tool, arguments=args or {})
    return policy_for(tool, call, policies).name


def test_presets_are_selectable_by_name_and_alias() -> None:
    assert {"coding", "research", "browser"} <= set(task_policy_names())
    assert get_task_preset("deep-research") is RESEARCH and get_task_preset("CODE") is CODING
    policy = get_task_policy("browser")
    assert isinstance(policy, ContextPolicy) and policy.name == "browser"
    with pytest.raises(UsageError, match="choose one of"):
        get_task_policy("spreadsheet")


@pytest.mark.parametrize(
    ("preset", "tool", "args", "expected"),
    [
        ("coding", "pytest", {}, "coding:tests"),
        ("coding", "bash", {"command": "pytest tests/test_a.py"}, "coding:tests"),
        ("coding", "read_file", {"path": "a.py"}, "coding:working_set"),
        ("coding", "edit_file", {"path": "a.py"}, "coding:diffs"),
        ("coding", "get_diagnostics", {}, "coding:diagnostics"),
        ("coding", "bash", {"command": "make build"}, "shell"),
        ("research", "web_search", {"query": "q"}, "research:sources"),
        ("research", "fetch_url", {"url": "https://example.org"}, "research:evidence"),
        ("research", "save_note", {"text": "claim"}, "research:claims"),
        ("browser", "browser_snapshot", {}, "browser:page_state"),
        ("browser", "browser_click", {"ref": "e1"}, "browser:recent_actions"),
        ("browser", "extract_table", {}, "browser:extracted_data"),
        ("browser", "read_range", {}, "retrieval"),
    ],
)
def test_each_preset_routes_its_tools(preset: str, tool: str, args: dict[str, Any], expected: str) -> None:
    assert _policy_name(preset, tool, args) == expected


def test_tiers_and_focus_say_what_each_agent_keeps() -> None:
    assert CODING.tiers == {
        "tests": Tier.TASK_STATE,
        "diagnostics": Tier.TASK_STATE,
        "diffs": Tier.WORKING_SET,
        "working_set": Tier.WORKING_SET,
    }
    assert set(RESEARCH.tiers) == {"claims", "evidence", "sources", "open_questions"}
    assert set(BROWSER.tiers) == {"target", "extracted_data", "page_state", "recent_actions"}
    assert BROWSER.tiers["target"] is Tier.GOAL
    assert "open questions" in RESEARCH.focus and "page state" in BROWSER.focus
    sources = next(p for p in RESEARCH.tool_policies() if p.name == "research:sources")
    assert sources.keep_sources and sources.supersedable and sources.keep_recent == 30
    # Entries come first, highest-priority tier first, then the base preset.
    names = [p.name for p in BROWSER.tool_policies()]
    assert names[:3] == ["browser:extracted_data", "browser:page_state", "browser:recent_actions"]


def test_a_new_kind_of_agent_is_a_few_lines() -> None:
    sql = TaskPolicy(
        name="sql-test-agent",
        description="Answers questions from a warehouse.",
        keeps=(
            Keep(
                name="schema", tools=("describe_table",), category="file_read", tier=Tier.WORKING_SET, supersedable=True
            ),
            Keep(name="results", tools=("run_query",), category="search", max_tokens=1_000),
        ),
        planner=PlannerSettings(keep_recent_tool_results=4),
    )
    register_task_policy(sql)
    with pytest.raises(UsageError, match="exists"):
        register_task_policy(sql)
    register_task_policy(replace(sql, description="v2"), replace_existing=True)
    policy = get_task_policy("sql-test-agent")
    assert policy.planner.keep_recent_tool_results == 4
    assert _policy_name("sql-test-agent", "run_query") == "sql-test-agent:results"
    with pytest.raises(ConfigError, match="twice"):
        TaskPolicy(name="dup", description="", keeps=(Keep(name="a", tools=("x",)), Keep(name="a", tools=("y",))))
    with pytest.raises(ConfigError, match="must be a word"):
        TaskPolicy(name="bad name!", description="", keeps=())


def _run(policy: ContextPolicy, tool: str, outputs: list[str]) -> list[Any]:
    store = MemoryStore()
    sid = store.create_session().id
    events: list[Any] = [Instruction(text="agent"), UserMessage(text="go")]
    for i, out in enumerate(outputs):
        events += [
            AssistantMessage(tool_calls=(ToolCall(id=f"c{i}", name=tool, arguments={}),)),
            ToolResult(call_id=f"c{i}", tool_name=tool, output=out),
        ]
    store.append(sid, events, expected_last_seq=0)
    manager = ContextManager(store, counter=HeuristicCounter(), policy=policy)
    manager.build(sid, model="gpt-4o")
    return manager.projection(sid).items


def test_presets_change_what_the_manager_keeps() -> None:
    note = "\n".join(f"claim {i}: the figure for region {i} is {i * 13}" for i in range(400))
    research = _run(get_task_policy("research"), "save_note", [note])
    coding = _run(get_task_policy("coding"), "save_note", [note])
    cut = next(i for i in research if i.message.role == "tool")
    kept = next(i for i in coding if i.message.role == "tool")
    assert cut.truncated and cut.tokens <= 2_000 + 64
    assert not kept.truncated and kept.tokens > 2_000

    eager = replace(get_task_policy("browser"), planner=PlannerSettings(cache_aware=False, min_batch_tokens=1))
    snapshots = [f"page {i}\n" + "\n".join(f"- link {j} to /p/{i}/{j}" for j in range(300)) for i in range(3)]
    items = [i for i in _run(eager, "browser_snapshot", snapshots) if i.message.role == "tool"]
    assert [i.state for i in items] == [Lifecycle.SUPERSEDED, Lifecycle.SUPERSEDED, Lifecycle.FRESH]


def test_a_replay_strategy_runs_under_a_task_preset(tmp_path: Path) -> None:
    strategy = parse_strategy("contextwarden:task=research,keep=2")
    assert isinstance(strategy, ContextWardenStrategy)
    assert strategy.policy.tool_policies == get_task_policy("research").tool_policies
    assert strategy.policy.planner.keep_recent_tool_results == 2
    with pytest.raises(UsageError, match="unknown task policy"):
        parse_strategy("contextwarden:task=nope")

    # A research agent's long note: the research preset caps it, the coding one keeps it whole.
    note = "\n".join(f"claim {i}: the figure for region {i} is {i * 13}" for i in range(400))
    messages: list[dict[str, Any]] = [{"role": "user", "content": "collect the regional figures"}]
    for n in range(3):
        call = {"id": f"c{n}", "type": "function", "function": {"name": "save_note", "arguments": "{}"}}
        messages += [
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{n}", "content": note},
        ]
    messages.append({"role": "assistant", "content": "done"})
    transcript = tmp_path / "research.json"
    transcript.write_text(json.dumps({"messages": messages}), encoding="utf-8")
    counter = best_counter()
    settings = ReplaySettings(model="gpt-5", optimum=False)
    (inp,) = load_inputs([str(transcript)])
    reference = reference_of(inp, settings, counter)

    def tokens(spec: str) -> int:
        result = replay_file(
            inp, parse_strategy(spec), reference=reference, meter=BlockMeter(counter), settings=settings
        )
        return sum(r.input_tokens for r in result.requests)

    assert tokens("contextwarden:task=research") < tokens("contextwarden:task=coding") == tokens("contextwarden")


def test_the_coding_preset_differs_from_the_default_exactly_as_the_docs_say() -> None:
    default, coding = ContextPolicy(), get_task_policy("coding")
    assert coding.tool_policies[4:] == default.tool_policies  # the same 12 defaults, four in front
    assert [p.name for p in coding.tool_policies[:4]] == [
        "coding:tests",
        "coding:diagnostics",
        "coding:diffs",
        "coding:working_set",
    ]
    assert [p.keep_recent for p in coding.tool_policies[:4]] == [5, 5, 12, 12]
    assert (default.planner.keep_recent_tool_results, coding.planner.keep_recent_tool_results) == (1, 10)
    assert replace(coding, name=default.name, tool_policies=default.tool_policies, planner=default.planner) == default
    text = (ROOT / "docs" / "library.md").read_text()
    assert "`keep_recent_tool_results=10`" in text and "PlannerSettings(keep_recent_tool_results=1)" in text
