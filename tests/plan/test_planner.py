"""The planner on its own (a real projection as its pool), and the working set it protects."""

from __future__ import annotations

import dataclasses

import pytest

from contextwarden.assemble.manager import ContextManager, ContextPolicy
from contextwarden.log.events import AssistantMessage, Event, ToolCall, ToolResult, UserMessage
from contextwarden.log.store.memory import MemoryStore
from contextwarden.models import get_profile
from contextwarden.plan.planner import PlannerSettings, payback_turns, plan
from contextwarden.plan.protection import Protection, protect
from contextwarden.tokens import HeuristicCounter
from contextwarden.window.items import Tier
from contextwarden.window.policies.presets import CODING_TOOL_POLICIES
from contextwarden.window.projection import Projection, ProjectionConfig

COUNTER = HeuristicCounter()
PROFILE = get_profile("gpt-4o")


def body(n: int, tag: str) -> str:
    return "\n".join(f"{tag} line {i}: value = compute({i}, {tag!r})" for i in range(n))


def projection(*pairs: tuple[str, str, dict[str, object]], goal: str = "fix it") -> Projection:
    store = MemoryStore()
    store.create_session("p")
    events: list[Event] = [UserMessage(text=goal)]
    for n, (name, output, args) in enumerate(pairs):
        events += [
            AssistantMessage(tool_calls=(ToolCall(id=f"k{n}", name=name, arguments=args),)),  # type: ignore[arg-type]
            ToolResult(call_id=f"k{n}", tool_name=name, output=output),
        ]
    p = Projection(ProjectionConfig(counter=COUNTER, tool_policies=CODING_TOOL_POLICIES))
    for event in store.append("p", events, expected_last_seq=0):
        p.add(event)
    return p


def test_under_pressure_the_order_of_loss_follows_the_tiers() -> None:
    # Oldest first: a shell log (tier 4), a search listing (tier 5), a plan note (tier 6), then recent results.
    p = projection(
        ("bash", body(60, "build"), {"command": "make"}),
        ("grep", body(60, "hits"), {"pattern": "x"}),
        ("update_plan", body(60, "plan"), {"plan": "steps"}),
        *[("bash", body(10, f"r{i}"), {"command": f"ls {i}"}) for i in range(3)],
    )
    tiers = {i.id: i.tier for i in p.items if i.message.role == "tool"}
    assert sorted(set(tiers.values())) == [Tier.RECENT_TOOL, Tier.HISTORY, Tier.METADATA]
    settings = PlannerSettings(keep_recent_tool_results=3, pressure_target=1.0)
    cut = p.total - p.savings(p.mask_edits(3, frozenset())[0]) // 2  # one mask is enough to get under
    one = plan(p, total=p.total, trigger=cut, profile=PROFILE, turns_so_far=6, settings=settings)
    assert [tiers[e.target_id] for e in one.edits] == [Tier.METADATA]  # the newest of the three, but tier 6
    two = plan(p, total=p.total, trigger=cut - 900, profile=PROFILE, turns_so_far=6, settings=settings)
    assert [tiers[e.target_id] for e in two.edits] == [Tier.METADATA, Tier.HISTORY]
    everything = plan(p, total=p.total, trigger=1, profile=PROFILE, turns_so_far=6, settings=settings)
    assert [tiers[e.target_id] for e in everything.edits] == [Tier.METADATA, Tier.HISTORY, Tier.RECENT_TOOL]
    assert everything.needs_compaction  # the goal (tier 1) is never edited, so it stays over a 1-token trigger
    goal = p.items[0]
    assert goal.tier is Tier.GOAL and all(e.target_id != goal.id for e in everything.edits)


def test_voluntary_batches_wait_for_payback_and_count_net_savings() -> None:
    p = projection(*[("bash", body(80, f"log{i}"), {"command": f"make {i}"}) for i in range(8)])
    settings = PlannerSettings(keep_recent_tool_results=3, min_batch_share=0.0, min_batch_tokens=0)
    now = plan(p, total=p.total, trigger=10**6, profile=PROFILE, turns_so_far=40, settings=settings)
    assert len(now.edits) == 5 and now.saved_tokens == sum(p.savings(e) for e in now.edits) > 0
    early = plan(
        p,
        total=p.total,
        trigger=10**6,
        profile=PROFILE,
        turns_so_far=0,
        settings=dataclasses.replace(settings, expected_turns=0),
    )
    assert not early.edits and "waiting" in early.reason
    assert payback_turns(rewritten=1_000, saved=0, write=1.25, read=0.1) == float("inf")


def test_the_batch_floor_is_a_share_of_what_a_batch_can_still_change() -> None:
    """Under a write premium, protected evidence, placeholders and pinned items do not raise the floor."""
    p = projection(*[("bash", body(80, f"log{i}"), {"command": f"make {i}"}) for i in range(10)])
    results = [i.id for i in p.items if i.message.role == "tool"]
    evidence = frozenset(results[:6])  # e.g. unresolved failures: never masked
    settings = PlannerSettings(keep_recent_tool_results=3, min_batch_tokens=0, min_batch_share=0.2, cache_aware=False)
    explicit = get_profile("claude-sonnet-4-5")
    decided = plan(
        p, total=p.total, trigger=10**6, profile=explicit, turns_so_far=20, settings=settings, evidence=evidence
    )
    assert [e.target_id for e in decided.edits] == [results[6]]
    one = p.savings(decided.edits[0])
    assert one < 0.2 * p.total  # a share of the whole conversation would never batch it
    assert p.settled_tokens(evidence) >= sum(t.tokens for t in p.items if t.id in evidence or t.pinned)
    p.apply_edits(decided.edits)
    assert p.settled_tokens(frozenset()) >= p.item(results[6]).tokens  # a placeholder is settled too


def test_the_goal_file_read_stays_visible_while_current_in_a_30_turn_128k_session() -> None:
    """A scripted case: big install logs arrive after the only read of the goal's file."""
    store = MemoryStore()
    store.create_session("s")
    profile = dataclasses.replace(get_profile("gpt-4o"), name="w128k", context_window=128_000)
    manager = ContextManager(store, counter=COUNTER, policy=ContextPolicy())
    n = 0

    def call(name: str, output: str, **args: object) -> str:
        nonlocal n
        n += 1
        last = store.get_session("s").last_seq
        stored = store.append(
            "s",
            [
                AssistantMessage(tool_calls=(ToolCall(id=f"c{n}", name=name, arguments=args),)),  # type: ignore[arg-type]
                ToolResult(call_id=f"c{n}", tool_name=name, output=output),
            ],
            expected_last_seq=last,
        )
        return stored[1].id

    store.append(
        "s", [UserMessage(text="Fix the rounding bug in src/calc.py: round_half(2.5) returns 2.")], expected_last_seq=0
    )
    current = call("read_file", body(120, "calc v1"), path="src/calc.py")
    edits = 0
    for turn in range(2, 31):
        if turn in (2, 3, 4, 12, 13, 20):
            call("bash", body(400, f"pip install {turn}"), command=f"pip install -r req{turn}.txt")
        elif turn in (6, 16, 24):
            edits += 1
            call(
                "edit_file", "The file src/calc.py has been edited.", path="src/calc.py", old_string="a", new_string="b"
            )
        elif turn in (7, 17, 25):
            current = call("read_file", body(120, f"calc v{edits + 1}"), path="src/calc.py")
        elif turn % 2:
            call("bash", body(60, f"test run {turn}"), command="pytest tests/test_calc.py")
        else:
            call("read_file", body(80, f"helper {turn}"), path=f"src/helper{turn}.py")
        ctx = manager.build("s", model=profile)
        stale = turn in (6, 16, 24)  # right after an edit the file has no current read until it is read again
        if not stale:
            shown = [m.text for m in ctx.messages if current in m.source_ids]
            assert shown and shown[0].startswith("calc v"), f"turn {turn}: the current read of src/calc.py is gone"
    assert any(e.kind == "context_edit" for e in store.read("s"))  # the planner did reduce around it
    # a build reports only its own decisions; the masks in effect are the log's window events
    masked = [e for b in store.read("s") if b.kind == "context_edit" for e in b.edits if e.action == "mask"]  # type: ignore[attr-defined]
    assert masked and all(e.target_id != current for e in masked)


def test_under_pressure_a_working_set_read_outlives_a_newer_read_outside_it() -> None:
    """Within a tier the order of loss is working-set relevance before age."""
    p = projection(
        ("read_file", body(60, "a head"), {"path": "a.py", "view_range": [1, 60]}),
        ("read_file", body(60, "a tail"), {"path": "a.py", "view_range": [200, 260]}),
        ("read_file", body(60, "b"), {"path": "b.py"}),
        ("read_file", body(60, "c"), {"path": "c.py"}),
        *[("bash", body(10, f"r{i}"), {"command": f"ls {i}"}) for i in range(3)],
    )
    assert p.state.working_set[:2] == ("c.py", "a.py")  # c.py read last, a.py read twice; b.py once, long ago
    ids = {i.message.text.split(" line")[0]: i.id for i in p.items if i.message.role == "tool"}
    settings = PlannerSettings(
        keep_recent_tool_results=3, pressure_target=1.0, protection=Protection(working_set_files=0)
    )
    one = p.savings(p.mask_edits(3, frozenset())[0])
    first = plan(p, total=p.total, trigger=p.total - one // 2, profile=PROFILE, turns_so_far=7, settings=settings)
    assert [e.target_id for e in first.edits] == [ids["b"]]  # newer than both reads of a.py, but outside the set
    more = plan(p, total=p.total, trigger=p.total - 2 * one, profile=PROFILE, turns_so_far=7, settings=settings)
    assert [e.target_id for e in more.edits][:2] == [ids["b"], ids["a head"]]


def test_horizon_share_is_how_much_longer_a_session_is_expected_to_run() -> None:
    p = projection(*[("bash", body(80, f"log{i}"), {"command": f"make {i}"}) for i in range(8)])
    settings = PlannerSettings(keep_recent_tool_results=3, min_batch_share=0.0, min_batch_tokens=0, horizon_share=0.5)
    explicit = get_profile("claude-sonnet-4-5")  # a write premium: the batch pays back in a few turns, not at once
    half = plan(p, total=p.total, trigger=10**6, profile=explicit, turns_so_far=20, settings=settings)
    assert half.edits and "(<= 10)" in half.reason
    short = dataclasses.replace(settings, horizon_share=0.0)  # expected to end now: only the floor of 4 turns
    waiting = plan(p, total=p.total, trigger=10**6, profile=explicit, turns_so_far=20, settings=short)
    assert not waiting.edits and "> 4" in waiting.reason


def test_the_first_evicting_batch_pays_for_rewriting_the_whole_request() -> None:
    """When the retrieval tools join the tool list with it, a batch rewrites everything after the tools, too."""
    p = projection(*[("bash", body(80, f"log{i}"), {"command": f"make {i}"}) for i in range(8)])
    settings = PlannerSettings(keep_recent_tool_results=3, min_batch_share=0.0, min_batch_tokens=0, horizon_share=0.5)
    explicit = get_profile("claude-sonnet-4-5")
    tools = 40_000  # a large tool list before the conversation in the cached prefix
    args = {"trigger": 10**6, "profile": explicit, "turns_so_far": 20, "settings": settings}
    tail_only = plan(p, total=p.total + tools, conversation_tokens=p.total, **args)  # type: ignore[arg-type]
    assert tail_only.edits
    joined = plan(p, total=p.total + tools, conversation_tokens=p.total, tools_join=True, **args)  # type: ignore[arg-type]
    assert not joined.edits and "waiting" in joined.reason
    turns = float(tail_only.reason.split("pays back in ")[1].split(" ")[0])
    assert float(joined.reason.split("payback ")[1].split(" ")[0]) > turns


def test_a_manager_counts_the_tool_list_its_first_batch_rewrites() -> None:
    """The retrieval tools join with the first evicting batch: with many tool schemas that batch waits longer."""
    from contextwarden.context import ToolDefinition

    schema = {
        "type": "object",
        "properties": {f"p{i}": {"type": "string", "description": "x " * 40} for i in range(40)},
    }
    tools = tuple(ToolDefinition(name=f"tool{i}", description="A tool.", parameters=schema) for i in range(12))
    planner = PlannerSettings(keep_recent_tool_results=3, min_batch_share=0.0, min_batch_tokens=0, horizon_share=0.5)
    actions = {}
    for retrieval in (False, True):
        store = MemoryStore()
        store.create_session("s")
        events: list[Event] = [UserMessage(text="fix it")]
        for n in range(20):
            call = ToolCall(id=f"k{n}", name="bash", arguments={"command": f"make {n}"})
            events += [
                AssistantMessage(tool_calls=(call,)),
                ToolResult(call_id=call.id, tool_name="bash", output=body(80, f"log{n}")),
            ]
        store.append("s", events, expected_last_seq=0)
        manager = ContextManager(
            store, counter=COUNTER, policy=ContextPolicy(planner=planner, retrieval_tools=retrieval)
        )
        built = manager.build("s", model=get_profile("claude-sonnet-4-5"), tools=tools)
        actions[retrieval] = [d.reason for d in built.decisions if d.action == "plan"]
    assert "batch of" in actions[False][0]
    assert "waiting" in actions[True][0]


def test_only_a_cache_with_a_write_premium_holds_batches_to_a_share() -> None:
    """``min_batch_share`` holds batches under an explicit cache; under an automatic one the payback rule does."""
    p = projection(*[("bash", body(80, f"log{i}"), {"command": f"make {i}"}) for i in range(8)])
    explicit, automatic = get_profile("claude-sonnet-4-5"), get_profile("gpt-4o")

    def batches(profile: object, share: float) -> bool:
        settings = PlannerSettings(
            keep_recent_tool_results=3, min_batch_tokens=0, cache_aware=False, min_batch_share=share
        )
        decided = plan(p, total=p.total, trigger=10**6, profile=profile, turns_so_far=20, settings=settings)  # type: ignore[arg-type]
        return bool(decided.edits)

    assert batches(explicit, 0.1) and not batches(explicit, 0.99)
    assert batches(automatic, 0.99)
    with pytest.warns(DeprecationWarning, match="no effect"):
        PlannerSettings(min_batch_share_automatic=0.99)


def test_the_current_read_of_every_modified_file_is_protected() -> None:
    """``Protection.modified_files``: the files the session changed last keep their latest current read, whatever
    their rank."""
    p = projection(
        ("read_file", body(40, "a v1"), {"path": "src/a.py"}),
        ("edit_file", "edited", {"path": "src/a.py", "old_string": "x", "new_string": "y"}),
        ("read_file", body(40, "a v2"), {"path": "src/a.py"}),
        ("read_file", body(40, "b v1"), {"path": "src/b.py"}),
        ("edit_file", "edited", {"path": "src/b.py", "old_string": "x", "new_string": "y"}),
        ("read_file", body(40, "b v2"), {"path": "src/b.py"}),
        ("bash", body(40, "log"), {"command": "make"}),
    )
    reads = {i.message.text.split(" line")[0]: i.id for i in p.items if i.message.role == "tool"}

    def evidence(modified: int) -> frozenset[str]:
        return protect(p, Protection(working_set_files=0, modified_files=modified)).evidence

    assert reads["a v2"] not in evidence(0)
    changed = evidence(3)
    assert {reads["a v2"], reads["b v2"]} <= changed  # the current reads of both changed files
    assert reads["a v1"] not in changed and reads["b v1"] not in changed  # stale: a later edit changed them
    last = evidence(1)
    assert reads["b v2"] in last and reads["a v2"] not in last  # only the file changed most recently
