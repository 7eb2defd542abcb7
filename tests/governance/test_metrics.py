"""Per-session metrics: re-read rate, cache hit ratio (reported and simulated), tokens, compactions."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from contextwarden.assemble.manager import ContextPolicy
from contextwarden.governance.metrics import cacheable, request_metrics, session_metrics
from contextwarden.governance.requests import RequestReader
from contextwarden.log.events import AssistantMessage, Instruction, ToolCall, ToolResult, UsageReport, UserMessage
from contextwarden.log.store import MemoryStore
from contextwarden.models import ModelProfile, get_profile, register_profile
from contextwarden.plan.planner import PlannerSettings
from contextwarden.plan.protection import Protection

SYSTEM = "You are a careful coding agent. " * 200  # a long stable prefix, well over 1,024 tokens


def _session(store: MemoryStore, steps: list[tuple[str, str, str]], *, usage: bool = False) -> str:
    sid = store.create_session().id
    events: list[Any] = [Instruction(text=SYSTEM), UserMessage(text="Work through the modules.")]
    for i, (tool, path, output) in enumerate(steps):
        events.append(AssistantMessage(tool_calls=(ToolCall(id=f"c{i}", name=tool, arguments={"path": path}),)))
        if usage:
            events.append(UsageReport(input_tokens=2_000 + 100 * i, cache_read_tokens=1_500, output_tokens=20))
        events.append(ToolResult(call_id=f"c{i}", tool_name=tool, output=output))
    events.append(AssistantMessage(text="Done."))
    store.append(sid, events, expected_last_seq=0)
    return sid


def test_growing_session_is_mostly_cached_and_tokens_add_up() -> None:
    store = MemoryStore()
    steps = [("read_file", f"src/m{i}.py", "x = 1\n" * 50) for i in range(6)] + [("grep", "src", "m1.py:1")]
    metrics = session_metrics(store, _session(store, steps), model="gpt-4o")
    assert metrics.requests == 8 and metrics.cache_source == "simulated"
    assert metrics.cache_hit_ratio > 0.8
    assert set(metrics.tokens_by_tool) == {"read_file", "grep"}
    assert metrics.tokens_by_section["tool_output"] == sum(metrics.tokens_by_tool.values())
    assert metrics.tokens_by_section["system"] > 1_000 and metrics.last_request_sections["tool_output"] > 0
    assert metrics.re_reads == metrics.evictions == 0 and metrics.re_read_rate == 0.0
    assert metrics.input_tokens >= sum(metrics.last_request_sections.values())


def test_reported_usage_wins_over_simulation() -> None:
    store = MemoryStore()
    metrics = session_metrics(store, _session(store, [("read_file", "a.py", "a")] * 3, usage=True), model="gpt-4o")
    assert metrics.cache_source == "usage"
    assert metrics.cache_hit_ratio == pytest.approx(4_500 / (2_000 + 2_100 + 2_200))


def test_re_read_of_masked_output_counts() -> None:
    store = MemoryStore()
    paths = ["src/core.py" if i in (0, 6) else f"src/m{i}.py" for i in range(7)]
    steps = [("read_file", path, f"# {path}\n" + "y = 2\n" * 600) for path in paths]  # each file its own text
    eager = replace(
        ContextPolicy(),
        planner=PlannerSettings(
            keep_recent_tool_results=2,
            cache_aware=False,
            min_batch_tokens=1,
            protection=Protection(exploration_reads=False, working_set_reads=0),
        ),
    )  # an agent that only reads keeps its reads by default: mask them here to count the re-read
    metrics = session_metrics(store, _session(store, steps), model="gpt-4o", policy=eager)
    assert metrics.evictions >= 3 and metrics.re_reads == 1
    assert metrics.re_read_rate == pytest.approx(1 / metrics.evictions)
    assert metrics.context_edits >= 1 and metrics.edit_tokens_saved > 0


def test_compactions_and_their_cost_are_counted() -> None:
    register_profile(
        ModelProfile(name="cw-metrics-tiny", context_window=16_384, max_output_tokens=2_048, tokenizer="o200k_base")
    )
    store = MemoryStore()
    steps = [("bash", f"step{i}", "\n".join(f"row {i}.{j} value {j * 7}" for j in range(150))) for i in range(30)]
    sid = _session(store, steps)
    no_masking = replace(ContextPolicy(), planner=PlannerSettings(mask=False))
    metrics = session_metrics(store, sid, model="cw-metrics-tiny", policy=no_masking)
    assert metrics.compactions.count >= 1
    assert metrics.compactions.tokens_removed > 0
    assert metrics.compactions.prefix_rewritten_tokens > 0
    assert metrics.last_request_sections["summary"] > 0


def test_request_log_metrics_use_logged_usage_else_simulate() -> None:
    reader = RequestReader()
    profile = get_profile("gpt-4o")
    base = [{"role": "system", "content": SYSTEM}]
    payloads = [
        {"model": "gpt-4o", "messages": base + [{"role": "user", "content": f"q{j}"} for j in range(i + 1)]}
        for i in range(3)
    ]
    simulated = request_metrics([reader.parse(p) for p in payloads])
    assert simulated.cache_source == "simulated" and 0.5 < simulated.cache_hit_ratio < 1
    wrapped = [
        {
            "request": p,
            "response": {
                "usage": {
                    "prompt_tokens": 1_000,
                    "completion_tokens": 5,
                    "prompt_tokens_details": {"cached_tokens": 250},
                }
            },
        }
        for p in payloads
    ]
    reported = request_metrics([RequestReader().parse(w) for w in wrapped])
    assert reported.cache_source == "usage" and reported.cache_hit_ratio == pytest.approx(0.25)
    assert cacheable(1_000, profile) == 0
    assert cacheable(1_500, profile) == 1_500 - 1_500 % max(profile.cache_granularity, 1)
