from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from contextwarden.context import Message
from contextwarden.log.events import ToolCall
from contextwarden.pairing import ABORTED_TEXT, normalize_pairing, normalize_with_origins

CALL_IDS = ["a", "b", "c", "d"]


def asst(*ids: str, text: str = "") -> Message:
    return Message(role="assistant", text=text, tool_calls=tuple(ToolCall(id=i, name=f"tool_{i}") for i in ids))


def res(call_id: str, text: str = "") -> Message:
    return Message(role="tool", text=text or f"out {call_id}", tool_call_id=call_id, tool_name=f"tool_{call_id}")


def user(text: str = "hi") -> Message:
    return Message(role="user", text=text)


messages_strategy = st.lists(
    st.one_of(
        st.builds(user, st.sampled_from(["hi", "go on", "stop"])),
        st.builds(lambda ids: asst(*ids), st.lists(st.sampled_from(CALL_IDS), max_size=4)),
        st.builds(lambda i, t: res(i, t), st.sampled_from([*CALL_IDS, "zz"]), st.sampled_from(["x", "y"])),
        st.just(Message(role="system", text="rules")),
    ),
    max_size=14,
)


def assert_paired(messages: Sequence[Message], *, pending_last: bool = False) -> None:
    """Every tool message answers a call of the assistant right before its run, once, in call order."""
    i = 0
    while i < len(messages):
        message = messages[i]
        assert message.role != "tool", f"orphan tool message at {i}: {message}"
        i += 1
        if message.role != "assistant" or not message.tool_calls:
            continue
        ids = [call.id for call in message.tool_calls]
        assert len(ids) == len(set(ids)), f"duplicate call ids {ids}"
        run: list[str] = []
        while i < len(messages) and messages[i].role == "tool":
            run.append(messages[i].tool_call_id)
            i += 1
        if pending_last and i == len(messages):
            assert run == [c for c in ids if c in run], f"results {run} not in call order {ids}"
        else:
            assert run == ids, f"results {run} do not answer calls {ids} in order"


def open_tail_start(messages: Sequence[Message]) -> int:
    """Index where the trailing group whose results may still arrive starts (len when there is none)."""
    end = len(messages)
    i = end
    while i > 0 and messages[i - 1].role == "tool":
        i -= 1
    if i > 0 and messages[i - 1].role == "assistant" and messages[i - 1].tool_calls:
        return i - 1
    return end


def test_orphans_are_dropped_and_recorded() -> None:
    out, decisions = normalize_pairing([res("a"), user(), asst("b"), res("b"), res("x"), res("b", "again")])
    assert out == (user(), asst("b"), res("b"))
    assert [d.action for d in decisions] == ["pairing"] * 3
    assert "does not follow" in decisions[0].reason
    assert "answers no call" in decisions[1].reason
    assert "already answered" in decisions[2].reason


def test_tool_message_after_user_is_an_orphan() -> None:
    out, decisions = normalize_pairing([asst("a"), res("a"), user(), res("a")])
    assert out == (asst("a"), res("a"), user())
    assert len(decisions) == 1


def test_missing_result_gets_aborted_result_in_call_order() -> None:
    out, decisions = normalize_pairing([asst("a", "b", "c"), res("c"), res("a"), user()])
    assert [m.tool_call_id for m in out[1:4]] == ["a", "b", "c"]
    aborted = out[2]
    assert aborted.text == ABORTED_TEXT
    assert aborted.is_error and aborted.tool_name == "tool_b" and aborted.role == "tool"
    assert out[4] == user()
    reasons = [d.reason for d in decisions]
    assert any("reordered" in r for r in reasons)
    assert any("'b'" in r and "aborted" in r for r in reasons)


def test_duplicate_call_ids_in_one_message_keep_both_calls_and_results() -> None:
    message = Message(
        role="assistant",
        tool_calls=(
            ToolCall(id="a", name="first"),
            ToolCall(id="a", name="second"),
            ToolCall(id="b", name="x"),
        ),
    )
    out, decisions = normalize_pairing([message, res("a"), res("a", "dup"), res("b")])
    assert [(c.id, c.name) for c in out[0].tool_calls] == [("a", "first"), ("a_dup2", "second"), ("b", "x")]
    assert [(m.tool_call_id, m.text) for m in out[1:]] == [("a", "out a"), ("a_dup2", "dup"), ("b", "out b")]
    assert len(decisions) == 1  # the renaming
    assert normalize_pairing(out) == (out, ())  # idempotent


def test_an_id_reused_in_a_later_turn_is_renamed_and_earlier_turns_stay_put() -> None:
    first = [user(), asst("c1"), res("c1")]
    later = [user("again"), asst("c1"), res("c1", "second run")]
    out, decisions = normalize_pairing([*first, *later])
    assert out[: len(first)] == tuple(first)  # what was sent before does not change
    assert out[-2].tool_calls[0].id == "c1_dup2" and out[-1].tool_call_id == "c1_dup2"
    assert out[-1].text == "second run" and len(decisions) == 1
    # Normalizing in pieces, carrying the used ids, gives the same result.
    used: set[str] = set()
    head, _ = normalize_pairing(first, used_ids=used)
    tail, _ = normalize_pairing(later, used_ids=used)
    assert (*head, *tail) == out
    assert normalize_pairing(out) == (out, ())


def test_pending_tail_leaves_last_group_open() -> None:
    messages = [user(), asst("a", "b"), res("b")]
    out, decisions = normalize_pairing(messages, pending_tail=True)
    assert out == (user(), asst("a", "b"), res("b"))
    assert decisions == ()
    closed, _ = normalize_pairing([*messages, user("next")], pending_tail=True)
    assert closed[2].text == ABORTED_TEXT  # a later message closes the group: no longer pending


def test_origins_point_at_input_messages() -> None:
    messages = [user(), res("zz"), asst("a", "b"), res("b"), user()]
    out, _, origins = normalize_with_origins(messages)
    assert [m.role for m in out] == ["user", "assistant", "tool", "tool", "user"]
    assert origins == (0, 2, 3, 3, 4)  # the synthetic result for "a" comes from the end of its group


def test_empty_and_plain_sequences_are_unchanged() -> None:
    assert normalize_pairing([]) == ((), ())
    plain = [Message(role="system", text="s"), user(), Message(role="assistant", text="ok")]
    assert normalize_pairing(plain) == (tuple(plain), ())


@settings(max_examples=300, deadline=None)
@given(messages_strategy, st.booleans())
def test_output_is_always_paired(messages: list[Message], pending: bool) -> None:
    out, decisions = normalize_pairing(messages, pending_tail=pending)
    assert_paired(out, pending_last=pending)
    # Nothing but tool messages and duplicate calls is dropped; every drop is recorded.
    assert [m.role for m in out if m.role != "tool"] == [m.role for m in messages if m.role != "tool"]
    kept = [m for m in out if m.role == "tool" and m.text != ABORTED_TEXT]
    orphans = [d for d in decisions if d.reason.startswith("orphan")]
    assert len(kept) + len(orphans) == sum(1 for m in messages if m.role == "tool")
    # A kept result is the input itself, or (answering a renamed call) a copy with only the id changed.
    assert all(any(m is k or dataclasses.replace(m, tool_call_id=k.tool_call_id) == k for m in messages) for k in kept)


@settings(max_examples=300, deadline=None)
@given(messages_strategy, st.booleans())
def test_normalization_is_idempotent(messages: list[Message], pending: bool) -> None:
    once, _ = normalize_pairing(messages, pending_tail=pending)
    twice, decisions = normalize_pairing(once, pending_tail=pending)
    assert twice == once
    assert decisions == ()


@settings(max_examples=300, deadline=None)
@given(messages_strategy, messages_strategy, st.booleans())
def test_appending_never_changes_the_settled_prefix(
    messages: list[Message], more: list[Message], pending: bool
) -> None:
    settled = open_tail_start(messages)
    # A closing message makes the settled part normalize as it will once anything follows it.
    closed, prefix_decisions = normalize_pairing([*messages[:settled], user("end")], pending_tail=pending)
    prefix = closed[:-1]
    for longer in (messages, messages + more):
        out, decisions = normalize_pairing(longer, pending_tail=pending)
        assert out[: len(prefix)] == prefix
        assert decisions[: len(prefix_decisions)] == prefix_decisions


def test_a_renamed_result_keeps_its_origin() -> None:
    messages = [user(), asst("a"), res("a"), asst("a"), res("a", "again")]
    out, _, origins = normalize_with_origins(messages)
    assert out[-1].tool_call_id == "a_dup2" and origins == (0, 1, 2, 3, 4)
