"""Cut points: what stays verbatim, and the pairing and thinking invariants of the kept tail."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from contextwarden.context import Message
from contextwarden.log.events import ThinkingBlock, ToolCall
from contextwarden.plan.compaction.cutpoint import CutPoint, find_cut
from contextwarden.window.items import ContextItem, Tier


class Items:
    """Builds window items the way a projection would: one per event, seq increasing."""

    def __init__(self) -> None:
        self.items: list[ContextItem] = []
        self.seq = 0
        self.calls = 0

    def _add(self, message: Message, tokens: int, kind: str) -> ContextItem:
        self.seq += 1
        item = ContextItem(
            id=f"e{self.seq}", kind=kind, message=message, tokens=tokens, tier=Tier.HISTORY, recency=self.seq
        )
        self.items.append(item)
        return item

    def user(self, tokens: int = 100, text: str = "do it") -> Items:
        self._add(Message(role="user", text=text), tokens, "user")
        return self

    def assistant(self, tokens: int = 100, *, calls: int = 0, thinking: bool = False) -> list[str]:
        ids = []
        for _ in range(calls):
            self.calls += 1
            ids.append(f"c{self.calls}")
        message = Message(
            role="assistant",
            text="ok",
            tool_calls=tuple(ToolCall(id=i, name="bash") for i in ids),
            thinking=(ThinkingBlock(text="hmm", signature="sig"),) if thinking else (),
        )
        self._add(message, tokens, "assistant")
        return ids

    def result(self, call_id: str, tokens: int = 100) -> Items:
        self._add(Message(role="tool", text="out", tool_call_id=call_id, tool_name="bash"), tokens, "tool_result")
        return self

    def step(self, tokens: int = 100, *, thinking: bool = False) -> Items:
        (cid,) = self.assistant(tokens, calls=1, thinking=thinking)
        return self.result(cid, tokens)

    def block(self, kind: str, tokens: int = 50) -> Items:
        self.items.insert(
            0,
            ContextItem(
                id=f"{kind}:x",
                kind=kind,
                message=Message(role="user", text=kind),
                tokens=tokens,
                tier=Tier.GOAL,
                recency=0,
            ),
        )
        return self


def check_invariants(items: list[ContextItem], cut: CutPoint) -> None:
    kept = list(cut.kept)
    assert kept and kept[0].message.role in ("user", "assistant")
    calls = {c.id for i in kept for c in i.message.tool_calls}
    for item in kept:
        if item.message.role == "tool":
            assert item.message.tool_call_id in calls, "a kept result lost its call"
    first = cut.first_kept_index
    if kept[0].message.role == "assistant":
        # no thinking earlier in the same turn (the turn starts at the last user message before the cut)
        n = first - 1
        while n >= 0 and items[n].message.role != "user":
            assert not items[n].message.thinking, "thinking separated from its tool loop"
            n -= 1
    assert list(cut.history) + list(cut.turn_prefix) + kept == [i for i in items if i.kind not in ("pinned", "summary")]


def test_keeps_at_least_keep_recent_tokens_verbatim() -> None:
    b = Items().user()
    for _ in range(30):
        b.user(100).step(100)
    cut = find_cut(b.items, keep_recent=1_000)
    assert cut is not None
    assert cut.kept_tokens >= 1_000
    assert cut.kept == tuple(b.items[cut.first_kept_index :])
    assert cut.first_kept_seq == b.items[cut.first_kept_index].recency
    check_invariants(b.items, cut)


def test_default_keep_is_twenty_thousand_tokens() -> None:
    from contextwarden.plan.compaction import CompactionSettings

    assert CompactionSettings().keep_recent_tokens == 20_000


def test_kept_tail_never_starts_with_a_tool_result() -> None:
    b = Items().user()
    for _ in range(10):
        b.step(100)
    # keep 100 tokens: the candidate is the last tool result; the cut must move back to its call
    cut = find_cut(b.items, keep_recent=100)
    assert cut is not None
    assert cut.kept[0].message.role == "assistant"
    assert cut.kept[1].message.role == "tool"
    check_invariants(b.items, cut)


def test_a_call_batch_is_never_separated_from_its_results() -> None:
    b = Items().user()
    b.step()
    ids = b.assistant(50, calls=3)
    for cid in ids:
        b.result(cid, 300)
    cut = find_cut(b.items, keep_recent=300)  # lands on the second-to-last result
    assert cut is not None
    assert cut.kept[0].message.tool_calls and len(cut.kept) == 4
    check_invariants(b.items, cut)


def test_interleaved_results_pull_the_cut_back_to_the_earliest_call() -> None:
    b = Items().user().step()
    (early,) = b.assistant(50, calls=1)
    (late,) = b.assistant(50, calls=1)
    b.result(late, 50).result(early, 50)
    cut = find_cut(b.items, keep_recent=100)
    assert cut is not None
    assert cut.kept[0].message.tool_calls[0].id == early
    check_invariants(b.items, cut)


def test_thinking_is_never_split_from_its_tool_loop() -> None:
    b = Items().user().step()
    b.user(50, "second task")
    b.step(100, thinking=True)
    for _ in range(5):
        b.step(100)
    cut = find_cut(b.items, keep_recent=300)
    assert cut is not None
    # the tail may not start after the thinking message of its turn: it starts with it
    assert cut.kept[0].message.thinking
    assert [i.message.text for i in cut.turn_prefix] == ["second task"]
    check_invariants(b.items, cut)
    b2 = Items().user().step().user(50, "third")
    b2.step(100, thinking=True)
    b2.step(100, thinking=True)
    b2.step(100)
    cut = find_cut(b2.items, keep_recent=200)
    assert cut is not None and cut.kept[0].message.thinking
    assert cut.kept[0] is b2.items[4], "never after the turn's first thinking block"


def test_a_turn_too_large_to_keep_gets_a_prefix_summary() -> None:
    b = Items().user(50, "old task").step(50)
    b.user(50, "huge task")
    for _ in range(40):
        b.step(200)
    cut = find_cut(b.items, keep_recent=1_000)
    assert cut is not None
    assert cut.turn_prefix, "the huge turn is split"
    assert cut.turn_prefix[0].message.text == "huge task"
    assert [i.message.text for i in cut.history] == ["old task", "ok", "out"]
    assert cut.kept[0].message.role == "assistant"
    check_invariants(b.items, cut)


def test_single_turn_window_is_all_prefix() -> None:
    b = Items().user(50, "only task")
    for _ in range(20):
        b.step(200)
    cut = find_cut(b.items, keep_recent=1_000)
    assert cut is not None
    assert cut.history == ()
    assert cut.turn_prefix[0].message.text == "only task"


def test_nothing_old_enough_gives_none() -> None:
    b = Items().user().step().step()
    assert find_cut(b.items, keep_recent=10_000) is None
    assert find_cut([], keep_recent=10) is None


def test_previous_compaction_blocks_are_never_in_the_transcript() -> None:
    b = Items().user()
    for _ in range(10):
        b.step(100)
    b.block("summary").block("pinned")
    cut = find_cut(b.items, keep_recent=300)
    assert cut is not None
    assert all(i.kind not in ("pinned", "summary") for i in cut.leaving)
    # only the blocks before the tail and the tail itself: nothing to summarize
    assert find_cut(b.items[:2] + b.items[2:4], keep_recent=200) is None


@st.composite
def windows(draw: st.DrawFn) -> tuple[list[ContextItem], int]:
    b = Items()
    for _ in range(draw(st.integers(1, 25))):
        kind = draw(st.sampled_from(["user", "step", "batch", "think", "text"]))
        tokens = draw(st.integers(1, 400))
        if kind == "user":
            b.user(tokens)
        elif kind == "step":
            b.step(tokens)
        elif kind == "think":
            b.step(tokens, thinking=True)
        elif kind == "text":
            b.assistant(tokens)
        else:
            ids = b.assistant(tokens, calls=draw(st.integers(2, 4)))
            for cid in draw(st.permutations(ids)):
                b.result(cid, draw(st.integers(1, 400)))
    return b.items, draw(st.integers(0, 3_000))


@settings(max_examples=300, deadline=None)
@given(windows())
def test_every_cut_satisfies_the_invariants(window: tuple[list[ContextItem], int]) -> None:
    items, keep = window
    cut = find_cut(items, keep_recent=keep)
    if cut is None:
        return
    assert cut.kept_tokens >= keep
    assert cut.leaving, "a cut always leaves something to summarize"
    check_invariants(items, cut)


def test_reused_call_ids_pair_with_the_nearest_call_and_still_allow_a_cut() -> None:
    b = Items().user()
    for _ in range(8):  # providers that number calls per turn reuse "call_0"
        b.user()
        b._add(Message(role="assistant", text="ok", tool_calls=(ToolCall(id="call_0", name="bash"),)), 100, "assistant")
        b.result("call_0")
    cut = find_cut(b.items, keep_recent=300)
    assert cut is not None and len(cut.kept) <= 6  # not pushed back to the first call_0
    check_invariants(b.items, cut)


def test_failing_evidence_stays_in_the_kept_tail_when_it_fits() -> None:
    b = Items().user()
    for _ in range(6):
        b.step()
    (failing,) = b.assistant(calls=1)
    b.result(failing, tokens=150)
    evidence = b.items[-1].id
    for _ in range(3):
        b.step()
    plain = find_cut(b.items, keep_recent=500)
    kept = find_cut(b.items, keep_recent=500, keep_ids=frozenset({evidence}))
    assert plain is not None and kept is not None
    assert evidence not in {i.id for i in plain.kept}
    assert evidence in {i.id for i in kept.kept}
    check_invariants(b.items, kept)
    assert find_cut(b.items, keep_recent=150, keep_ids=frozenset({evidence})) is not None
