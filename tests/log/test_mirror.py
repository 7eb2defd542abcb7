"""mirror_history: a client's full history into the log, only the new part, on every store."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from contextwarden.assemble.manager import ContextManager
from contextwarden.errors import UsageError
from contextwarden.log.events import (
    AssistantMessage,
    Compaction,
    Event,
    Instruction,
    Pin,
    ToolCall,
    ToolResult,
    UsageReport,
    UserMessage,
)
from contextwarden.log.store import MemoryStore, PostgresStore, SessionStore, SQLiteStore
from contextwarden.mirror import (
    MIRRORED_KINDS,
    content_digest,
    follow_appended,
    follow_to,
    mirror_history,
    mirrored_events,
)

Opener = Callable[[], SessionStore]


@pytest.fixture(params=["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def opener(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opener]:
    """Opens store objects over one backing store (the same object for memory)."""
    opened: list[SessionStore] = []
    shared = MemoryStore()

    def open_one() -> SessionStore:
        if request.param == "memory":
            return shared
        if request.param == "sqlite":
            store: SessionStore = SQLiteStore(tmp_path / "sessions.db")
        else:
            store = PostgresStore(request.getfixturevalue("pg_schema_dsn"))
        opened.append(store)
        return store

    yield open_one
    for store in opened:
        store.close()


@pytest.fixture
def store(opener: Opener) -> SessionStore:
    return opener()


def conversation(turns: int, *, output: str = "ok") -> list[Event]:
    """A tool-using history as a client would send it: built anew, so ids and times differ each call."""
    events: list[Event] = [Instruction(text="You are a coding agent."), UserMessage(text="Fix the failing test.")]
    for n in range(turns):
        call = ToolCall(id=f"call_{n}", name="read_file", arguments={"path": f"src/m{n}.py"})
        events.append(AssistantMessage(text=f"step {n}", tool_calls=(call,)))
        events.append(ToolResult(call_id=call.id, tool_name="read_file", output=f"{output} {n}"))
    return events


def messages(store: SessionStore, session_id: str, *, window: bool = False) -> list[str]:
    """The content digests of the message events of the log (or of its current window)."""
    events = store.read_window(session_id) if window else store.read(session_id)
    return [content_digest(e) for e in events if e.kind in MIRRORED_KINDS]


def digests(events: list[Event]) -> list[str]:
    return [content_digest(e) for e in events]


def test_appends_only_the_new_suffix_and_is_idempotent(store: SessionStore) -> None:
    first = mirror_history(store, "s", conversation(2))
    assert first.outcome == "extend" and len(first.appended) == 6
    again = mirror_history(store, "s", conversation(2))
    assert again.outcome == "unchanged" and again.appended == () and again.matched == 6
    grown = mirror_history(store, "s", conversation(3))
    assert grown.outcome == "extend" and [e.kind for e in grown.appended] == ["assistant", "tool_result"]
    assert messages(store, "s") == digests(conversation(3))
    assert grown.last_seq == store.get_session("s").last_seq == 8


def test_a_second_store_object_continues_from_the_log(opener: Opener) -> None:
    mirror_history(opener(), "s", conversation(3))
    other = opener()  # another process's view: its chain is rebuilt from the log
    assert mirror_history(other, "s", conversation(3)).outcome == "unchanged"
    assert len(mirror_history(other, "s", conversation(4)).appended) == 2
    assert messages(other, "s") == digests(conversation(4))


def test_matching_ignores_ids_times_and_response_metadata(store: SessionStore) -> None:
    store.create_session("s")
    stored = [UserMessage(text="hi"), AssistantMessage(text="hello", model="gpt-x", stop_reason="end_turn")]
    store.append("s", stored, expected_last_seq=0)
    resent = [UserMessage(text="hi"), AssistantMessage(text="hello")]
    assert mirror_history(store, "s", resent).outcome == "unchanged"


def test_content_changes_change_the_digest() -> None:
    call = ToolCall(id="c1", name="read_file", arguments={"path": "a.py"})
    base = AssistantMessage(text="x", tool_calls=(call,))
    moved = AssistantMessage(text="x", tool_calls=(ToolCall(id="c1", name="read_file", arguments={"path": "b.py"}),))
    assert content_digest(base) != content_digest(moved)
    assert content_digest(UserMessage(text="a")) != content_digest(Instruction(text="a"))
    assert content_digest(ToolResult(call_id="c", tool_name="t", output="o")) != content_digest(
        ToolResult(call_id="c", tool_name="t", output="o", is_error=True)
    )
    assert content_digest(UserMessage(text="\udcff bad bytes")) == content_digest(UserMessage(text="\udcff bad bytes"))


def test_events_others_append_never_cause_a_divergence(store: SessionStore) -> None:
    mirror_history(store, "s", conversation(1))
    last = store.get_session("s").last_seq
    store.append("s", [UsageReport(input_tokens=10), Pin(text="never push")], expected_last_seq=last)
    result = mirror_history(store, "s", conversation(2))
    assert result.outcome == "extend" and len(result.appended) == 2


def test_a_trimmed_history_moves_the_window_and_never_brings_back_what_was_dropped(store: SessionStore) -> None:
    mirror_history(store, "s", conversation(6))
    full = conversation(8)
    trimmed = [full[0], *full[6:]]  # the client dropped turns 0 and 1, kept its system prompt
    result = mirror_history(store, "s", trimmed)
    assert result.outcome == "trim" and result.window_event is not None
    assert result.window_event.details == {"mirror": "trim", "from_seq": 7, "kept_leading": 1}
    assert [e.kind for e in result.appended] == ["assistant", "tool_result"] * 2
    assert mirror_history(store, "s", trimmed).outcome == "unchanged"
    context = ContextManager(store, compactor=None).build("s", model="gpt-4o")
    assert context.system == "You are a coding agent."
    assert not any("step 1" in m.text for m in context.messages)
    assert any("step 7" in m.text for m in context.messages)
    # the log keeps everything: nothing is deleted
    assert len(messages(store, "s")) == len(full)

    mirror_history(store, "t", conversation(6))
    dropped_all = full[6:]  # this client drops its system prompt too: it must not come back
    result = mirror_history(store, "t", dropped_all)
    assert result.outcome == "trim" and result.window_event is not None
    assert ContextManager(store, compactor=None).build("t", model="gpt-4o").system == ""
    assert mirror_history(store, "t", [*dropped_all, UserMessage(text="go on")]).outcome == "extend"


def test_trimmed_windows_keep_the_goal_pinned(store: SessionStore) -> None:
    mirror_history(store, "s", conversation(6))
    result = mirror_history(store, "s", conversation(6)[6:])
    assert result.window_event is not None
    assert result.window_event.state["goal"] == "Fix the failing test."
    context = ContextManager(store, compactor=None).build("s", model="gpt-4o")
    text = "\n".join(m.text for m in context.messages)
    assert "Fix the failing test." in text and "step 0" not in text


def test_a_trim_inside_an_already_compacted_part_records_nothing(store: SessionStore) -> None:
    mirror_history(store, "s", conversation(6))
    last = store.get_session("s").last_seq
    store.append(
        "s", [Compaction(summary="planner summary", first_kept_seq=last - 3)], expected_last_seq=last
    )  # the planner already compacted away everything before the last two turns
    result = mirror_history(store, "s", conversation(7)[4:])  # the client dropped less than that
    assert result.outcome == "trim" and result.window_event is None
    assert len(result.appended) == 2
    assert store.get_session("s").window_start_seq == last - 3  # the planner's window stands


def test_an_edit_opens_a_new_window_with_the_clients_history(store: SessionStore) -> None:
    mirror_history(store, "s", conversation(4))
    edited = conversation(4)
    edited[5] = ToolResult(call_id="call_1", tool_name="read_file", output="edited by the client")
    result = mirror_history(store, "s", edited)
    assert result.outcome == "reset" and result.window_event is not None
    assert result.window_event.details == {"mirror": "reset", "from_seq": 12, "diverged_at": 5}
    assert messages(store, "s", window=True) == digests(edited)
    assert mirror_history(store, "s", edited).outcome == "unchanged"
    assert len(mirror_history(store, "s", [*edited, UserMessage(text="and now?")]).appended) == 1
    # the goal message was kept, so the goal stays pinned in the new window
    assert result.window_event.state["goal"] == "Fix the failing test."


def test_a_rewind_drops_the_tail_from_the_window(opener: Opener) -> None:
    store = opener()
    mirror_history(store, "s", conversation(5))
    rewound = conversation(2)
    behind = mirror_history(store, "s", rewound)  # an older copy alone records nothing
    assert behind.outcome == "behind" and behind.matched == len(rewound)
    assert behind.last_seq == store.get_session("s").last_seq
    rewound.append(UserMessage(text="Let us try another way."))  # ...continuing differently is a rewind
    result = mirror_history(store, "s", rewound)
    assert result.outcome == "reset"
    assert messages(store, "s", window=True) == digests(rewound)
    context = ContextManager(store, compactor=None).build("s", model="gpt-4o")
    assert not any("step 4" in m.text for m in context.messages)
    # a fresh view of the same log (a restart) agrees: the reset is in the log, not in memory
    assert mirror_history(opener(), "s", rewound).outcome == "unchanged"


def test_an_edited_goal_is_not_pinned_from_the_old_version(store: SessionStore) -> None:
    mirror_history(store, "s", conversation(2))
    changed = conversation(2)
    changed[1] = UserMessage(text="Actually, write the docs.")
    result = mirror_history(store, "s", changed)
    assert result.window_event is not None and result.window_event.state["goal"] == ""
    context = ContextManager(store, compactor=None).build("s", model="gpt-4o")
    assert not any("Fix the failing test." in m.text for m in context.messages)


def test_concurrent_writers_append_each_message_once(opener: Opener) -> None:
    history = conversation(10)
    stores = [opener() for _ in range(4)]
    errors: list[BaseException] = []

    def writer(store: SessionStore) -> None:
        try:
            for n in range(2, len(history) + 1):
                mirror_history(store, "s", history[:n])
        except BaseException as exc:  # reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(s,)) for s in stores]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert messages(stores[0], "s") == digests(history)


class CountingStore:
    """A store that counts the events it reads (to show the mirror does not re-read the log)."""

    def __init__(self, inner: SessionStore) -> None:
        self.inner = inner
        self.events_read = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def iter_events(self, session_id: str, *, since_seq: int = 0) -> Iterator[Event]:
        for event in self.inner.iter_events(session_id, since_seq=since_seq):
            self.events_read += 1
            yield event


def test_a_long_history_is_matched_without_rereading_the_log(tmp_path: Path) -> None:
    store = CountingStore(SQLiteStore(tmp_path / "s.db"))
    history = conversation(1_000)  # 2,002 messages
    mirror_history(store, "s", history)  # type: ignore[arg-type]
    store.events_read = 0
    more = [*history, UserMessage(text="next")]
    result = mirror_history(store, "s", more)  # type: ignore[arg-type]
    assert len(result.appended) == 1
    assert store.events_read == 0  # the chain already held what this object appended
    store.inner.close()


@pytest.fixture
def refreshes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The sessions whose chain read the log's tail, one entry per read."""
    from contextwarden.mirror._chain import Chain

    seen: list[str] = []
    refresh = Chain.refresh

    def counted(self: Chain, store: SessionStore) -> None:
        seen.append(self.session_id)
        refresh(self, store)

    monkeypatch.setattr(Chain, "refresh", counted)
    return seen


def test_a_chain_that_follows_the_log_appends_without_reading_first(store: SessionStore, refreshes: list[str]) -> None:
    mirror_history(store, "s", conversation(1))
    refreshes.clear()
    for turns in (2, 3):
        assert mirror_history(store, "s", conversation(turns)).outcome == "extend"
    assert refreshes == []  # each compare-and-append showed nothing else was written
    assert messages(store, "s") == digests(conversation(3))


def _two_views(opener: Opener) -> tuple[SessionStore, SessionStore]:
    """Two store objects over one log, as two processes have (skips on the memory store, which has one)."""
    mine, theirs = opener(), opener()
    if mine is theirs:
        pytest.skip("two views of one log need two store objects; the memory store has one")
    return mine, theirs


def test_another_writers_events_make_the_append_fail_and_the_tail_is_read(opener: Opener, refreshes: list[str]) -> None:
    mine, theirs = _two_views(opener)
    mirror_history(mine, "s", conversation(1))
    mirror_history(theirs, "s", conversation(2))  # another process moved the log on
    refreshes.clear()
    result = mirror_history(mine, "s", conversation(3))
    assert result.outcome == "extend" and len(result.appended) == 2  # only what neither wrote
    assert refreshes == ["s"]
    assert messages(mine, "s") == digests(conversation(3))


def test_a_call_that_would_append_nothing_reads_before_it_answers(opener: Opener, refreshes: list[str]) -> None:
    mine, theirs = _two_views(opener)
    mirror_history(mine, "s", conversation(2))
    mirror_history(theirs, "s", conversation(3))
    refreshes.clear()
    # against its own chain the list looks unchanged; the log has moved on: it is behind
    assert mirror_history(mine, "s", conversation(2)).outcome == "behind"
    assert refreshes == ["s"]


def test_events_appended_outside_the_mirror_are_followed_without_a_read(
    store: SessionStore, refreshes: list[str]
) -> None:
    mirror_history(store, "s", conversation(1))
    info = store.get_session("s")
    answer = AssistantMessage(text="done")
    stored = store.append("s", [answer, UsageReport(input_tokens=5)], expected_last_seq=info.last_seq)
    follow_appended(store, "s", stored)
    refreshes.clear()
    result = mirror_history(store, "s", [*conversation(1), answer, UserMessage(text="next")])
    assert result.outcome == "extend" and [type(e) for e in result.appended] == [UserMessage]
    assert refreshes == []


def test_a_chain_behind_a_known_seq_reads_its_tail_once(store: SessionStore, refreshes: list[str]) -> None:
    mirror_history(store, "s", conversation(1))
    last = store.get_session("s").last_seq
    between = store.append("s", [UsageReport(input_tokens=5)], expected_last_seq=last)  # another part's event
    answer = AssistantMessage(text="done")
    turn = store.append("s", [answer], expected_last_seq=between[-1].seq)
    follow_appended(store, "s", turn)  # after a gap: not followed
    refreshes.clear()
    follow_to(store, "s", turn[-1].seq)
    follow_to(store, "s", turn[-1].seq)
    assert refreshes == ["s"]  # read once, then the chain is there
    refreshes.clear()
    assert mirror_history(store, "s", [*conversation(1), answer, UserMessage(text="next")]).outcome == "extend"
    assert refreshes == []


def test_bad_input_is_refused_with_a_clear_error(store: SessionStore) -> None:
    with pytest.raises(UsageError, match="takes message events"):
        mirror_history(store, "s", [UsageReport(input_tokens=1)])
    assert mirror_history(store, "s", []).outcome == "unchanged"


def test_bad_input_after_a_known_prefix_is_refused_before_anything_is_written(store: SessionStore) -> None:
    history = [UserMessage(text="hi"), AssistantMessage(text="hello")]
    mirror_history(store, "s", history)
    with pytest.raises(UsageError, match="takes message events"):
        mirror_history(store, "s", [*history, UsageReport(input_tokens=1), UserMessage(text="more")])  # type: ignore[list-item]
    assert [e.kind for e in store.read("s")] == ["user", "assistant"]


def test_an_exact_history_makes_a_shorter_list_a_rewind(opener: Opener) -> None:
    store = opener()
    mirror_history(store, "s", conversation(3))
    popped = conversation(3)[:-1]  # a session backend popped the newest item
    result = mirror_history(store, "s", popped, exact=True)
    assert result.outcome == "reset"
    assert messages(store, "s", window=True) == digests(popped)
    assert digests(mirrored_events(opener(), "s")) == digests(popped)
    emptied = mirror_history(store, "s", [], exact=True)
    assert emptied.outcome == "reset" and emptied.appended == ()
    assert mirrored_events(store, "s") == [] and messages(store, "s", window=True) == []
    assert len(messages(store, "s")) == len(conversation(3)) + len(popped)  # nothing deleted


def test_mirrored_events_follow_trims_and_resets(store: SessionStore) -> None:
    mirror_history(store, "s", conversation(4))
    trimmed = [conversation(5)[0], *conversation(5)[6:]]
    mirror_history(store, "s", trimmed)
    assert digests(mirrored_events(store, "s")) == digests(trimmed)
    edited = [*trimmed[:-1], ToolResult(call_id="call_4", tool_name="read_file", output="changed")]
    mirror_history(store, "s", edited)
    assert digests(mirrored_events(store, "s")) == digests(edited)


def test_precomputed_digests_are_the_ones_matched_and_must_fit() -> None:
    store = MemoryStore()
    history = [UserMessage(text="one"), AssistantMessage(text="two")]
    digests = [content_digest(e) for e in history]
    mirror_history(store, "s", history, digests=digests)
    again = mirror_history(store, "s", [*history, UserMessage(text="three")], digests=[*digests, "d3"])
    assert again.outcome == "extend" and again.matched == 2
    # the caller's digests decide: a wrong one for the first message reads as an edit of the history
    wrong = mirror_history(store, "s", history, digests=["x", digests[1]])
    assert wrong.outcome == "reset"
    with pytest.raises(UsageError, match="2 digests for 1 events"):
        mirror_history(store, "s", history[:1], digests=digests)


@pytest.mark.parametrize("knows_the_tool", [False, True])
def test_a_trims_snapshot_classifies_tools_by_the_sessions_policies(knows_the_tool: bool) -> None:
    from contextwarden.window.policies.presets import CODING_TOOL_POLICIES, ToolPolicy

    scribble = ToolPolicy(name="scribble", patterns=("scribble",), category="file_edit")
    policies = (scribble, *CODING_TOOL_POLICIES) if knows_the_tool else CODING_TOOL_POLICIES
    store = MemoryStore()
    history = [
        UserMessage(text="update notes.md"),
        AssistantMessage(tool_calls=(ToolCall(id="w1", name="scribble", arguments={"path": "notes.md"}),)),
        ToolResult(call_id="w1", tool_name="scribble", output="written"),
        AssistantMessage(text="notes.md is updated"),
        UserMessage(text="now the changelog"),
        AssistantMessage(text="on it"),
    ]
    mirror_history(store, "s", history, policies=policies)
    trimmed = mirror_history(store, "s", history[3:], policies=policies)  # the client dropped its oldest three
    assert trimmed.outcome == "trim" and trimmed.window_event is not None
    # the snapshot of what was dropped knows the file was written only if the policies know the tool edits
    assert ("notes.md" in trimmed.window_event.state["files_modified"]) is knows_the_tool
