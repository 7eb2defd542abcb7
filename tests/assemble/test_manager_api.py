"""The manager as a newcomer's agent loop uses it: the session handle, build records, this build's
decisions, model names, retrieval markers, task presets and the tree budget on the build path."""

from __future__ import annotations

import dataclasses

import pytest

from contextwarden import (
    AssistantMessage,
    ConflictError,
    ContextManager,
    ContextPolicy,
    SettingChange,
    SpendLimit,
    SpendTracker,
    ToolCall,
    ToolDefinition,
    ToolResult,
    UnknownModelError,
    UsageReport,
    UserMessage,
    get_profile,
    get_task_policy,
    open_store,
    render,
    resolve_profile,
)
from contextwarden.assemble.buildrecord import BuildSettings, build_settings_of
from contextwarden.errors import SpendLimitReached, UsageError
from contextwarden.log.store import MemoryStore
from contextwarden.plan.policy import policy_from_dict, policy_to_dict
from contextwarden.plan.taskpolicies import task_policy_names
from contextwarden.tokens import HeuristicCounter

TOOLS = (
    ToolDefinition(name="read_file", description="Read a file.", parameters={"type": "object"}),
    ToolDefinition(name="bash", description="Run a command.", parameters={"type": "object"}),
)


def small(window: int = 16_000) -> object:
    return dataclasses.replace(get_profile("gpt-4o"), name="small-16k", context_window=window, max_output_tokens=1_000)


def manager(store: MemoryStore, **kwargs: object) -> ContextManager:
    return ContextManager(store, counter=HeuristicCounter(), **kwargs)  # type: ignore[arg-type]


def lines(label: str, count: int) -> str:
    """Distinct lines (repeated ones would be collapsed by output normalization)."""
    return "\n".join(f"{label} line {i}: value {i * 7}" for i in range(count))


def turn(n: int, output: str, name: str = "bash") -> tuple[AssistantMessage, ToolResult]:
    call = ToolCall(id=f"c{n}", name=name, arguments={"command": f"step {n}"})
    return AssistantMessage(tool_calls=(call,)), ToolResult(call_id=call.id, tool_name=name, output=output)


# ---------------------------------------------------------------------- the session handle


def test_a_thirty_turn_loop_never_does_sequence_bookkeeping() -> None:
    store = MemoryStore()
    session = manager(store).session("loop", model=small(), tools=TOOLS, create=True)
    session.append(UserMessage(text="Explore the repository."))
    window_events = 0
    for n in range(30):
        context = session.build()
        window_events += len(context.window_event_ids)
        session.append(*turn(n, lines(f"listing {n}", 200)))
        session.record_usage(UsageReport(input_tokens=context.total_tokens, output_tokens=20))
    assert window_events > 0, "the builds appended window events between the loop's own appends"
    assert session.last_seq == store.get_session("loop").last_seq


def test_another_writer_still_gets_a_conflict_and_refresh_accepts_its_events() -> None:
    store = MemoryStore()
    mgr = manager(store)
    mine = mgr.session("s", model="gpt-4o", create=True)
    mine.append(UserMessage(text="start"))
    mine.build()
    other = mgr.session("s")
    other.append(UserMessage(text="a second writer"))
    with pytest.raises(ConflictError):
        mine.append(UserMessage(text="lost update?"))
    assert mine.refresh() == other.last_seq
    mine.append(UserMessage(text="now on top of it"))
    assert [e.text for e in store.read("s") if isinstance(e, UserMessage)][-1] == "now on top of it"


def test_a_handle_needs_a_model_and_an_existing_session_unless_asked_to_create() -> None:
    mgr = manager(MemoryStore())
    with pytest.raises(Exception, match="no session"):
        mgr.session("absent")
    session = mgr.session("absent", create=True)
    with pytest.raises(UsageError, match="no model"):
        session.build()


# ---------------------------------------------------------------------- model names


def test_an_unknown_model_name_is_an_error_naming_the_known_ones() -> None:
    store = MemoryStore()
    store.create_session("s")
    with pytest.raises(UnknownModelError, match="gpt-4o") as raised:
        manager(store).build("s", model="gpt-5-turbo-ultra")
    assert "gpt-5-turbo-ultra" in str(raised.value) and "claude" in str(raised.value)
    assert resolve_profile("openai/gpt-4o").name == "gpt-4o"  # prefixes and aliases still resolve


# ---------------------------------------------------------------------- build records


def test_a_build_records_its_profile_tools_and_policy_once_until_they_change() -> None:
    store = MemoryStore()
    mgr = manager(store, policy="research")
    session = mgr.session("s", model=small(), tools=TOOLS, create=True)
    session.append(UserMessage(text="What changed in 3.12?"))
    session.build()
    session.build()
    records = [e for e in store.read("s") if isinstance(e, SettingChange)]
    assert len(records) == 1
    recorded = build_settings_of(records[0])
    assert recorded == BuildSettings(profile=small(), tools=TOOLS, policy=get_task_policy("research"))
    session.build(tools=TOOLS[:1])
    records = [e for e in store.read("s") if isinstance(e, SettingChange)]
    assert len(records) == 2 and [t.name for t in build_settings_of(records[1]).tools] == ["read_file"]  # type: ignore[union-attr]


def test_a_fresh_manager_finds_the_record_and_does_not_record_again() -> None:
    store = MemoryStore()
    first = manager(store).session("s", model=small(), tools=TOOLS, create=True)
    first.append(UserMessage(text="go"))
    first.build()
    manager(store).build("s", model=small(), tools=TOOLS)
    assert sum(isinstance(e, SettingChange) for e in store.read("s")) == 1


@pytest.mark.parametrize("name", task_policy_names())
def test_every_task_policy_survives_its_json_form(name: str) -> None:
    policy = get_task_policy(name)
    assert policy_from_dict(policy_to_dict(policy)) == policy


def test_a_record_written_by_an_older_release_reads_with_defaults() -> None:
    data = policy_to_dict(ContextPolicy(max_item_tokens=3_000))
    del data["retrieval_max_tokens"]
    data["a_future_knob"] = 1
    assert policy_from_dict(data) == ContextPolicy(max_item_tokens=3_000)


def test_a_record_with_the_former_protection_knobs_keeps_them() -> None:
    data = policy_to_dict(ContextPolicy())
    del data["planner"]["protection"]
    data["planner"].update(working_set_files=3, protect_modified_files=0, protect_exploration_reads=False)
    protection = policy_from_dict(data).planner.protection
    assert (protection.working_set_files, protection.modified_files, protection.exploration_reads) == (3, 0, False)


# ---------------------------------------------------------------------- this build's decisions


def test_decisions_are_this_builds_own() -> None:
    store = MemoryStore()
    session = manager(store, policy=ContextPolicy(max_item_tokens=500)).session("s", model="gpt-4o", create=True)
    session.append(UserMessage(text="go"), *turn(1, lines("big", 400)))
    first = session.build()
    assert [d.action for d in first.decisions] == ["truncate", "plan"]
    again = session.build()
    assert [d.action for d in again.decisions] == ["plan"], "nothing new happened"
    session.append(*turn(2, lines("other", 400)))
    third = session.build()
    assert [(d.action, d.target) for d in third.decisions[:-1]] == [("truncate", store.read("s")[-1].id)]


# ---------------------------------------------------------------------- retrieval markers


def _texts(retrieval: bool) -> tuple[str, list[str]]:
    store = MemoryStore()
    policy = ContextPolicy(retrieval_tools=retrieval, max_item_tokens=400)
    session = manager(store, policy=policy).session("s", model=small(), tools=TOOLS, create=True)
    session.append(UserMessage(text="Read the module twice."))
    for n in range(12):  # re-reads make supersession placeholders, size makes masks and truncations
        session.append(*turn(n, f"# version {n}\n" + "def f():\n    return 1\n" * 300, name="read_file"))
        session.build()
    context = session.build()
    return " ".join(m.text for m in context.messages), [t.name for t in context.tools]


def test_markers_name_read_range_only_when_the_model_has_it() -> None:
    with_tools, names = _texts(retrieval=True)
    assert "read_range(" in with_tools and "read_range" in names
    without, names = _texts(retrieval=False)
    assert "truncated" in without, "the same session still has its reductions"
    assert "read_range" not in without and "recall" not in names and "read_range" not in names


# ---------------------------------------------------------------------- task presets and the tree budget


def test_a_task_preset_by_name_changes_the_request() -> None:
    def finding_tokens(policy: str) -> int:
        store = MemoryStore()
        session = manager(store, policy=policy).session("s", model="gpt-4o", create=True)
        session.append(UserMessage(text="Research it."), *turn(1, "finding text " * 3_000, name="save_finding"))
        return session.build().sections["tool_output"]

    assert finding_tokens("research") < 2_100 < finding_tokens("coding")  # research caps claims at 2,000


def test_an_unknown_task_preset_names_the_known_ones() -> None:
    with pytest.raises(UsageError, match="research"):
        manager(MemoryStore(), policy="astrology")


def test_the_tree_budget_stops_builds_of_a_spent_tree_and_reminds_before() -> None:
    store = MemoryStore()
    budget = SpendTracker(SpendLimit(limit=1_000, reminders=(600,)))
    mgr = manager(store, spend_tracker=budget)
    root = mgr.session("root", model="gpt-4o", create=True)
    root.append(UserMessage(text="Plan the work."))
    store.create_session("child", parent_session_id="root")
    child = mgr.session("child", model="gpt-4o")
    child.append(UserMessage(text="Do a part."))
    child.record_usage(UsageReport(input_tokens=0, output_tokens=500))  # 500 of 1,000 spent, under 600 left
    context = root.build()
    assert any("weighted tokens remain" in m.text for m in context.messages), "the reminder reached the model"
    child.record_usage(UsageReport(input_tokens=0, output_tokens=600))
    with pytest.raises(SpendLimitReached):
        root.build()


def test_render_takes_a_format_name() -> None:
    store = open_store("memory:")
    session = ContextManager(store).session("s", model="claude-sonnet-4-5", create=True)
    session.append(UserMessage(text="hello"))
    context = session.build()
    assert render(context, "anthropic")["messages"][0]["role"] == "user"
    with pytest.raises(UsageError, match="openai_chat"):
        render(context, "smoke_signals")


# ---------------------------------------------------------------------- concurrency


def test_eight_threads_building_fifty_sessions_lose_and_duplicate_no_window_event() -> None:
    import random
    import threading

    from contextwarden.log.events import ContextEditBatch

    store = MemoryStore()
    mgr = manager(store)
    sessions = [f"s{i}" for i in range(50)]
    for sid in sessions:
        store.create_session(sid)
        store.append(sid, [UserMessage(text=f"task {sid}")], expected_last_seq=0)
    returned: list[str] = []
    errors: list[BaseException] = []
    record = threading.Lock()

    def worker(seed: int) -> None:
        order = list(sessions)
        random.Random(seed).shuffle(order)
        try:
            for sid in order:
                ids = mgr.build(sid, model=small(), tools=TOOLS).window_event_ids
                with record:
                    returned.extend(ids)
        except BaseException as exc:  # a thread cannot raise into the test: reported below
            errors.append(exc)

    for round_ in range(4):
        for sid in sessions:  # the agents' own appends, then eight workers build every session
            last = store.get_session(sid).last_seq
            store.append(sid, list(turn(round_, lines(f"{sid} round {round_}", 500))), expected_last_seq=last)
        threads = [threading.Thread(target=worker, args=(round_ * 8 + n,)) for n in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
    logged = [e for sid in sessions for e in store.read(sid) if e.is_window_event]
    assert logged, "the rounds are large enough to need reductions"
    assert sorted(returned) == sorted(e.id for e in logged), "every window event was returned by exactly one build"
    for sid in sessions:
        targets = [
            (edit.target_id, edit.action)
            for e in store.read(sid)
            if isinstance(e, ContextEditBatch)
            for edit in e.edits
        ]
        assert len(targets) == len(set(targets)), f"{sid}: an edit was recorded twice"
        cached = mgr.build(sid, model=small(), tools=TOOLS)
        fresh = manager(store).build(sid, model=small(), tools=TOOLS)
        assert cached.messages == fresh.messages, f"{sid}: the cached window drifted from the log"


class _GatedStore(MemoryStore):
    """A store whose window reads for one session wait for a gate (a slow database, on purpose)."""

    def __init__(self, gated: str) -> None:
        super().__init__()
        import threading

        self.gated = gated
        self.entered = threading.Event()
        self.gate = threading.Event()

    def read_window(self, session_id: str) -> list:  # type: ignore[type-arg]
        if session_id == self.gated:
            self.entered.set()
            self.gate.wait(timeout=60)
        return super().read_window(session_id)


def test_a_slow_build_of_one_session_does_not_hold_up_another_session() -> None:
    import threading

    store = _GatedStore("slow")
    for sid in ("slow", "fast"):
        store.create_session(sid)
        store.append(sid, [UserMessage(text="go")], expected_last_seq=0)
    mgr = manager(store)
    slow = threading.Thread(target=mgr.build, args=("slow",), kwargs={"model": "gpt-4o"})
    slow.start()
    assert store.entered.wait(timeout=60)  # the slow build now holds its session's lock
    done = threading.Event()
    fast = threading.Thread(target=lambda: (mgr.build("fast", model="gpt-4o"), done.set()))
    fast.start()
    fast.join(timeout=60)
    finished_while_slow_waited = done.is_set() and slow.is_alive()
    store.gate.set()
    slow.join()
    assert finished_while_slow_waited
