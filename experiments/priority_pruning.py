"""Experiment 2: priority pruning — tiers, pinned and evictable items under a tight budget.

A session with a goal, constraints, steering, a still-failing test run and many tool outputs is built
once with a trigger far below its size. The builder reduces by priority (lowest tier first, pinned
never, failing evidence never); the table shows each tier's tokens before and after. A recency
baseline (drop the oldest messages until it fits, the "keep the latest messages" rule) shows what
is lost without priorities.
"""

from __future__ import annotations

import sys
from collections import Counter, defaultdict
from dataclasses import replace
from typing import Any

from _common import GOAL, LATE_CONSTRAINTS, Experiment, Script, counter, main, request_text, table

from contextwarden.assemble.manager import ContextManager, ContextPolicy
from contextwarden.budget import BudgetPolicy
from contextwarden.log.store import MemoryStore
from contextwarden.models import get_profile
from contextwarden.replay.strategies import History, plain_context
from contextwarden.window.items import ContextItem, Lifecycle, Tier
from contextwarden.window.projection import message_tokens

STEERING = "Stop refactoring; only fix compute_total."
FAILING_LINE = "FAILED tests/test_core.py::test_compute_total - assert 23 == 5"


def session(rounds: int) -> Script:
    """Explore many files, run a test that fails and stays failing, steer, explore more."""
    s = Script()
    s.user(GOAL)
    s.user(" ".join(LATE_CONSTRAINTS))
    for r in range(rounds):
        s.grep(f"helper_{r}", hits=50)
        s.read(f"src/pkg/module_{r}.py", 200)
        if r == rounds // 3:
            s.test(failing=("test_compute_total",))
            s.steer(STEERING)
    s.call("bash", "src/pkg/core.py\nsrc/pkg/module_0.py", {"command": "git status --short"})
    return s


def _by_tier(items: list[ContextItem]) -> dict[Tier, list[ContextItem]]:
    out: dict[Tier, list[ContextItem]] = defaultdict(list)
    for i in items:
        out[i.tier].append(i)
    return out


def _checks(text: str, latest: str) -> list[bool]:
    return [
        GOAL in text,
        all(c in text for c in LATE_CONSTRAINTS),
        STEERING in text,
        FAILING_LINE in text,
        latest in text,
    ]


def _recency(script: Script, trigger: int, profile_name: str) -> tuple[int, list[bool]]:
    """Keep the newest messages that fit under the trigger (system prompt always kept)."""
    tok = counter()
    history = History()
    for e in script.events:
        history.add(e)
    messages = list(history.messages)
    sizes = [message_tokens(m, tok) for m in messages]
    budget = trigger - tok.count(history.system)
    kept: list[int] = []
    for n in range(len(messages) - 1, -1, -1):
        if sum(sizes[k] for k in kept) + sizes[n] > budget:
            break
        kept.append(n)
    chosen = [messages[n] for n in sorted(kept)]
    ctx = plain_context(get_profile(profile_name), history.system, chosen, tok)
    text = request_text(ctx)
    return sum(sizes[k] for k in kept), _checks(text, messages[-1].text)


def run(*, small: bool = False) -> Experiment:
    """Experiment 2: what survives a tight budget, tier by tier, against dropping the oldest messages."""
    rounds = 10 if small else 24
    script = session(rounds)
    store = MemoryStore()
    sid = store.create_session("pruning").id
    store.append(sid, script.events, expected_last_seq=0)
    tok = counter()
    probe = ContextManager(store, counter=tok)
    before = [replace(i) for i in probe.projection(sid).items]
    total_before = sum(i.tokens for i in before)
    trigger = total_before // 3
    policy = ContextPolicy(compact=False, retrieval_tools=False, budget=BudgetPolicy(trigger_tokens=trigger))
    manager = ContextManager(store, counter=tok, policy=policy)
    ctx = manager.build(sid, model="gpt-4o")
    after = {i.id: i for i in manager.projection(sid).items}
    system = ctx.sections.get("system", 0)
    rows: list[list[Any]] = [["0 system (the system prompt)", 1, 1, 0, system, system, "–"]]
    for tier, items in sorted(_by_tier(before).items()):
        now = [after[i.id] for i in items]
        states = Counter(i.state.value for i in now if i.state is not Lifecycle.FRESH)
        rows.append(
            [
                f"{tier.value} {tier.name.lower()}",
                len(items),
                sum(i.pinned for i in items),
                sum(i.evictable for i in items),
                sum(i.tokens for i in items),
                sum(i.tokens for i in now),
                ", ".join(f"{k} {v}" for k, v in sorted(states.items())) or "–",
            ]
        )
    t1 = table(
        f"Tokens per tier: before, and after one build with the trigger at {trigger:,} (a third of {total_before:,})",
        ["tier", "items", "pinned", "evictable", "tokens before", "tokens after", "reduced to"],
        rows,
        note="Tier 0 system, 1 goal and steering, 2 task state (failing evidence), 3 working set, "
        "4 recent tool results, 5 history, 6 metadata.",
    )
    latest = script.events[-1]
    latest_text = getattr(latest, "output", "")
    text = request_text(ctx)
    recency_tokens, recency = _recency(script, trigger, "gpt-4o")
    labels = ["goal verbatim", "every constraint", "latest steering", "failing test output", "latest tool result"]
    warden = _checks(text, latest_text)
    t2 = table(
        "What is still visible",
        ["rule", "request tokens", *labels],
        [
            ["contextwarden (tiers, pinned, evidence)", ctx.total_tokens, *warden],
            ["keep the newest messages that fit", recency_tokens, *recency],
        ],
    )
    tools_before = [i for i in before if i.evictable]
    masked = sum(after[i.id].state is not Lifecycle.FRESH for i in tools_before)
    findings = (
        f"contextwarden cut the request from {total_before:,} to {ctx.total_tokens:,} tokens by masking "
        f"{masked} of {len(tools_before)} tool results, oldest first. The newest ones and the failing test run "
        f"(evidence: never masked while it still fails; {'kept' if warden[3] else 'LOST'}) stay verbatim; the "
        "system prompt, goal, steering and conversation kept every token.",
        f"Keeping only the newest messages kept {sum(recency)} of {len(labels)} facts: "
        + ", ".join(label for label, ok in zip(labels, recency, strict=True) if not ok)
        + " fell out."
        if not all(recency)
        else "Keeping only the newest messages happened to keep every fact here.",
    )
    return Experiment(
        name="priority_pruning",
        title="Experiment 2: priority pruning",
        setup=f"A scripted session: the goal with constraints, {rounds} rounds of grep and file reads, a failing "
        "test run a third of the way in followed by a steering message, then a final command. It is built "
        "once with contextwarden (compaction off, to see pruning alone) with the trigger set to a third of "
        "the session's size, and compared with a recency rule that keeps the newest messages that fit.",
        shows="Pruning by priority: evictable tool results are masked oldest first; the goal and the steering "
        "(tier 1, pinned), the constraints (kept in the derived task state) and the failing test output "
        "(evidence) are never removed.",
        tables=(t1, t2),
        findings=findings,
    )


if __name__ == "__main__":
    sys.exit(main(run))
