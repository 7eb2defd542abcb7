"""The projection on its own: honest lifecycle, the frontier, breakpoints that hold, knobs that act."""

from __future__ import annotations

import dataclasses
import json
import random

import pytest

from contextwarden.assemble.manager import ContextManager, ContextPolicy
from contextwarden.context import ModelContext, ToolDefinition
from contextwarden.errors import BudgetExceededError
from contextwarden.log.events import (
    AssistantMessage,
    BinaryPart,
    Event,
    Instruction,
    ToolCall,
    ToolResult,
    UsageReport,
    UserMessage,
)
from contextwarden.log.store.memory import MemoryStore
from contextwarden.models import get_profile
from contextwarden.plan.planner import PlannerSettings
from contextwarden.plan.protection import Protection, protect
from contextwarden.testing import SessionBuilder
from contextwarden.tokens import HeuristicCounter
from contextwarden.window.accounting import anchored_estimate
from contextwarden.window.items import Lifecycle
from contextwarden.window.policies.presets import CODING_TOOL_POLICIES, ToolPolicy
from contextwarden.window.projection import Projection, ProjectionConfig
from contextwarden.window.state import derive_state
from contextwarden.wire import render_openai_chat

COUNTER = HeuristicCounter()
TOOLS = (ToolDefinition(name="bash", description="Run a command. " * 200, parameters={"type": "object"}),)
EAGER = PlannerSettings(cache_aware=False, min_batch_tokens=0, min_batch_share=0, keep_recent_tool_results=2)


def project(events: list[Event], policies: tuple[ToolPolicy, ...] = CODING_TOOL_POLICIES) -> Projection:
    store = MemoryStore()
    store.create_session("p")
    stored = store.append("p", events, expected_last_seq=0)
    projection = Projection(ProjectionConfig(counter=COUNTER, tool_policies=policies))
    for event in stored:
        projection.add(event)
    return projection


def calls(*pairs: tuple[str, str, dict[str, object]]) -> list[Event]:
    out: list[Event] = [UserMessage(text="fix it")]
    for n, (name, output, args) in enumerate(pairs):
        out += [
            AssistantMessage(tool_calls=(ToolCall(id=f"k{n}", name=name, arguments=args),)),  # type: ignore[arg-type]
            ToolResult(call_id=f"k{n}", tool_name=name, output=output),
        ]
    return out


def body(n: int, tag: str) -> str:
    return "\n".join(f"{tag} line {i}: value = compute({i}, {tag!r})" for i in range(n))


# --------------------------------------------------------------------------- lifecycle


def test_a_pending_candidate_leaves_the_item_fresh_until_a_batch_applies_it() -> None:
    p = project(calls(("read_file", body(80, "v1"), {"path": "a.py"}), ("read_file", body(80, "v2"), {"path": "a.py"})))
    first = next(i for i in p.items if i.message.role == "tool")
    assert first.id in p.candidates and p.candidates[first.id].action == "supersede"
    assert first.state is Lifecycle.FRESH and first.message.text.startswith("v1 line 0")
    assert p.frontier() == p.position(first.id)  # the pending edit can change it: nothing after it is final
    p.apply_edits([p.candidates[first.id]])
    reduced = p.item(first.id)
    assert reduced is not None and reduced.state is Lifecycle.SUPERSEDED and not reduced.evictable
    assert p.frontier() == p.position(first.id) + 2  # now the second read is the first changeable item


def test_never_pay_to_forget_small_results_are_left_alone() -> None:
    # The case: small edit results marked stale by the next edit cost tokens (saved = -72).
    pairs = [("edit_file", "ok", {"path": "a.py", "old_string": f"x{i}", "new_string": f"y{i}"}) for i in range(6)]
    p = project(calls(*pairs, ("bash", "ok", {"command": "ls"})))
    assert p.candidates == {}
    assert p.mask_edits(0, frozenset()) == []
    big = project(
        calls(
            ("read_file", body(60, "v1"), {"path": "a.py"}),
            ("edit_file", "ok", {"path": "a.py", "old_string": "x", "new_string": "y"}),
            ("edit_file", "ok", {"path": "a.py", "old_string": "y", "new_string": "z"}),
        )
    )
    assert [e.action for e in big.lossless_edits()] == ["stale"]  # the read, not the tiny first edit result
    assert all(big.savings(e) > 0 for e in big.lossless_edits())


def test_every_recorded_edit_saves_tokens_end_to_end() -> None:
    store = MemoryStore()
    agent = SessionBuilder(store)
    agent.add(UserMessage(text="refactor src/core.py"))
    for i in range(12):
        agent.call("read_file", body(40 + i, f"r{i}"), path=f"src/m{i % 4}.py")
        agent.call("edit_file", "The file was edited.", path=f"src/m{i % 4}.py", old_string="a", new_string="b")
        agent.call("bash", "1 passed" if i % 2 else "FAILED t::x\n1 failed", command="pytest -q")
    manager = ContextManager(store, counter=COUNTER, policy=ContextPolicy(planner=EAGER), compactor=None)
    ctx = manager.build("s", model="gpt-4o")
    edits = [d for d in ctx.decisions if d.action in ("mask", "supersede", "stale")]
    assert edits and all(d.tokens_saved > 0 for d in edits)
    batches = [e for e in store.read("s") if e.kind == "context_edit"]
    assert batches and all(b.tokens_after < b.tokens_before for b in batches)  # type: ignore[attr-defined]


# --------------------------------------------------------------------------- knobs of the tool policies


def _reads(policies: tuple[ToolPolicy, ...]) -> Projection:
    pairs = (("read_file", body(60, "v1"), {"path": "a.py"}), ("read_file", body(60, "v2"), {"path": "a.py"}))
    return project(calls(*pairs), policies)


def test_an_attachment_is_shown_once_as_its_part_with_no_text_added() -> None:
    # The renderers show (or name) each part themselves; a second text line for it paid tokens on every request.
    events = calls(("view_image", "a screenshot", {"path": "shot.png"}))
    result = events[-1]
    assert isinstance(result, ToolResult)
    events[-1] = dataclasses.replace(result, parts=(BinaryPart(media_type="image/png", data=b"\x89PNG...."),))
    shown = next(i for i in project(events).items if i.message.role == "tool").message
    assert shown.text == "a screenshot" and [p.media_type for p in shown.parts] == ["image/png"]


def test_the_stale_note_is_one_short_line_naming_the_file_only_when_the_edit_does_not() -> None:
    def note(read: tuple[str, str, dict[str, object]], edit: tuple[str, str, dict[str, object]]) -> str:
        texts = [i.message.text for i in project(calls(read, edit)).items if i.message.role == "tool"]
        return texts[1]

    read = ("read_file", body(60, "v1"), {"path": "a.py"})
    named = note(read, ("edit_file", "Updated a.py.", {"path": "a.py", "old_string": "x", "new_string": "y"}))
    assert named == "Updated a.py.\n[note: earlier reads of this file are out of date]"
    # A shell edit names the file in its command though its output is empty (a mini-swe-agent ``sed -i``).
    shell = note(("bash", body(60, "v1"), {"command": "cat a.py"}), ("bash", "", {"command": "sed -i s/x/y/ a.py"}))
    assert shell == "\n[note: earlier reads of this file are out of date]"
    assert COUNTER.count(shell) <= 16  # it rides on every later request; raw history has none
    elsewhere = ("bash", "", {"command": "cd src && sed -i s/x/y/ a.py"})
    assert note(("read_file", body(60, "v1"), {"path": "src/a.py"}), elsewhere).endswith(
        "[note: earlier reads of src/a.py are out of date]"
    )
    tool_texts = [named, shell]
    assert "seq" not in tool_texts[0] + tool_texts[1]


def test_supersedable_decides_whether_a_newer_read_replaces_the_older() -> None:
    plain = tuple(
        dataclasses.replace(p, supersedable=False) if p.name == "file_read" else p for p in CODING_TOOL_POLICIES
    )
    assert len(_reads(CODING_TOOL_POLICIES).candidates) == 1
    assert _reads(plain).candidates == {}


def test_keep_recent_of_a_policy_raises_the_floor_for_its_results() -> None:
    pairs = [("bash", body(50, f"log{i}"), {"command": f"make step{i}"}) for i in range(6)]
    default = project(calls(*pairs))
    assert len(default.mask_edits(2, frozenset())) == 4
    kept = tuple(dataclasses.replace(p, keep_recent=5) if p.name == "shell" else p for p in CODING_TOOL_POLICIES)
    assert len(project(calls(*pairs), kept).mask_edits(2, frozenset())) == 1


def test_keep_sources_puts_the_cited_urls_in_the_placeholder() -> None:
    page = "\n".join(f"claim {i}, see https://example.org/paper/{i}" for i in range(40))
    pairs = [("web_fetch", page, {"url": "https://example.org"}), ("bash", body(40, "x"), {"command": "ls"})]
    unfloored = tuple(
        dataclasses.replace(p, keep_recent=None) if p.name == "fetch" else p for p in CODING_TOOL_POLICIES
    )
    plain = project(calls(*pairs), unfloored).mask_edits(0, frozenset())
    sourced = tuple(dataclasses.replace(p, keep_sources=True) if p.name == "fetch" else p for p in unfloored)
    kept = project(calls(*pairs), sourced).mask_edits(0, frozenset())
    assert "https://example.org/paper/0" not in plain[0].replacement
    assert "Sources: https://example.org/paper/0" in kept[0].replacement


def test_state_is_derived_under_the_policy_in_force() -> None:
    events = calls(("verify", "FAILED tests/test_a.py::t - boom\n1 failed", {"target": "tests/test_a.py"}))
    checks = (ToolPolicy(name="checks", patterns=("verify",), category="test"), *CODING_TOOL_POLICIES)
    assert (
        derive_state(events, policies=CODING_TOOL_POLICIES).failing_tests == ()
    )  # the coding preset does not know the tool
    assert derive_state(events, policies=checks).failing_tests == ("tests/test_a.py::t",)
    projection = project(events, checks)
    assert projection.state.failing_tests == ("tests/test_a.py::t",)
    assert protect(projection, Protection(working_set_files=0)).evidence == {projection.items[-1].id}  # never masked


# --------------------------------------------------------------------------- breakpoints that hold


def _rendered(ctx: ModelContext) -> list[str]:
    payload = render_openai_chat(ctx)
    return [json.dumps(payload.get("tools", []))] + [json.dumps(m, sort_keys=True) for m in payload["messages"]]


def _session(seed: int) -> tuple[list[list[str]], list[ModelContext], list[bool]]:
    """Drive a random session with re-reads, edits, failing and passing tests, and reductions."""
    rng = random.Random(seed)
    store = MemoryStore()
    agent = SessionBuilder(store)
    agent.add(
        Instruction(text="You are a coding agent. " * 40), UserMessage(text="Fix src/f0.py. Never touch prod.cfg.")
    )
    profile = dataclasses.replace(get_profile("gpt-4o"), name="small", context_window=24_000, max_output_tokens=1_000)
    policy = ContextPolicy(
        planner=PlannerSettings(keep_recent_tool_results=2, min_batch_tokens=500, min_batch_share=0.2)
    )
    manager = ContextManager(store, counter=COUNTER, policy=policy)
    requests, contexts, compacted = [], [], []
    offered_before = False
    for _ in range(60):
        k = rng.randrange(4)
        kind = rng.choice(("read", "read", "edit", "test", "bash"))
        if kind == "read":
            agent.call("read_file", body(rng.randint(20, 120), f"f{k}v{rng.random():.3f}"), path=f"src/f{k}.py")
        elif kind == "edit":
            agent.call("edit_file", "edited", path=f"src/f{k}.py", old_string="a", new_string="b")
        elif kind == "test":
            failing = rng.random() < 0.5
            agent.call("bash", body(30, "FAILED t::x" if failing else "passed"), command=f"pytest tests/t{k % 2}.py")
        else:
            agent.call("bash", body(rng.randint(10, 200), f"log{rng.random():.3f}"), command=f"make s{k}")
        ctx = manager.build("s", model=profile, tools=TOOLS)
        kinds = {e.kind for e in store.read("s") if e.id in ctx.window_event_ids}
        requests.append(_rendered(ctx))
        contexts.append(ctx)
        offered = any(t.name == "read_range" for t in ctx.tools)
        # The retrieval tools join the tool list at the first eviction: the one other change to a stable prefix.
        compacted.append("compaction" in kinds or (offered and not offered_before))
        offered_before = offered_before or offered
    return requests, contexts, compacted


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_each_breakpoint_prefix_holds_in_every_later_request_until_a_window_event(seed: int) -> None:
    requests, contexts, compacted = _session(seed)
    checked = 0
    for t, ctx in enumerate(contexts):
        *stable, last = ctx.cache_breakpoints
        for point in stable:
            prefix = requests[t][: point + 2]  # the tools block, then messages up to and including ``point``
            for later in range(t + 1, len(requests)):
                if compacted[later]:
                    break  # a compaction opens a new window; only it may change a stable prefix
                assert requests[later][: point + 2] == prefix, f"request {later} changed breakpoint {point} of {t}"
                checked += 1
        for later in range(t + 1, len(requests)):
            if contexts[later].window_event_ids:
                break  # any recorded window event may change what follows the frontier
            assert requests[later][: last + 2] == requests[t][: last + 2]
    reductions = sum(1 for c in contexts if c.window_event_ids)
    assert reductions >= 2 and checked > 50  # the sessions did reduce, and stable prefixes were checked across it


def test_breakpoints_never_sit_after_the_frontier_and_map_exactly() -> None:
    store = MemoryStore()
    agent = SessionBuilder(store)
    agent.add(Instruction(text="You are a coding agent. " * 300), UserMessage(text="fix a.py"))
    agent.call("read_file", body(80, "v1"), path="a.py")
    agent.call("bash", body(80, "log"), command="make")
    agent.call("read_file", body(80, "v2"), path="a.py")  # supersedes the first read: a pending edit
    manager = ContextManager(store, counter=COUNTER, compactor=None)
    ctx = manager.build("s", model="claude-sonnet-4-5", tools=TOOLS)
    projection = manager.projection("s")
    frontier = projection.frontier()
    assert frontier is not None and projection.items[frontier].id in projection.candidates
    first_tool = next(n for n, m in enumerate(ctx.messages) if m.role == "tool")
    assert ctx.cache_breakpoints == (-1, first_tool - 1, len(ctx.messages) - 1)
    # a prefix below the model's minimum cacheable length caches nothing, so no breakpoint goes there
    tiny = ContextManager(store, counter=COUNTER, compactor=None)
    small = tiny.build("s", model=dataclasses.replace(get_profile("claude-sonnet-4-5"), min_cacheable_tokens=10**6))
    assert small.cache_breakpoints == (len(small.messages) - 1,)


# --------------------------------------------------------------------------- the usage anchor


def test_the_usage_anchor_feeds_the_budget_check_of_build() -> None:
    store = MemoryStore()
    agent = SessionBuilder(store)
    agent.add(UserMessage(text="explore"))
    for i in range(6):
        agent.call("bash", body(60, f"out{i}"), command=f"ls d{i}")
    profile = dataclasses.replace(get_profile("gpt-4o"), name="small", context_window=30_000, max_output_tokens=1_000)
    quiet = ContextPolicy(planner=PlannerSettings(min_batch_tokens=10**9))
    manager = ContextManager(store, counter=COUNTER, policy=quiet, compactor=None)
    assert not manager.build("s", model=profile).window_event_ids  # counted, the window is far below the trigger
    manager.record_usage("s", UsageReport(input_tokens=27_000, output_tokens=50))
    agent.call("bash", body(20, "more"), command="ls more")
    anchored = manager.build("s", model=profile)
    assert anchored.window_event_ids  # the provider says the context is larger: the planner reduces under pressure
    assert any("over the trigger" in d.reason for d in anchored.decisions if d.action == "plan")
    manager.record_usage("s", UsageReport(input_tokens=29_500, output_tokens=50))
    unmasked = dataclasses.replace(quiet, planner=PlannerSettings(mask=False))
    with pytest.raises(BudgetExceededError, match="last usage report"):
        ContextManager(store, counter=COUNTER, policy=unmasked, compactor=None).build("s", model=profile)
    # the stale-anchor floor: a report older than the window's compaction is ignored (counting takes over)
    stale = anchored_estimate(
        counted=900,
        window_tokens=800,
        usage=UsageReport(input_tokens=90_000, seq=4),
        tokens_at_usage=0,
        window_opened_seq=6,
    )
    assert stale.tokens == 900 and stale.anchored is None
    fresh = anchored_estimate(
        counted=900,
        window_tokens=800,
        usage=UsageReport(input_tokens=300, output_tokens=2, seq=8),
        tokens_at_usage=700,
        window_opened_seq=6,
    )
    assert fresh.tokens == 300 + 2 + 100 and fresh.source == "usage"
