"""Experiment 4: the working set — active files and recent failures, kept first.

A scripted session explores many files, then works on three of them in read → edit → re-read → test
cycles with a failing test. Part 1 shows the derived task state (working set, modified files, recent
failures) as the session moves on. Part 2 builds the final request under a tight budget with several
strategies and measures how much of the current working set's content the model still sees, and how
many tool-output tokens go to files outside it.
"""

from __future__ import annotations

import sys
from typing import Any

from _common import Experiment, Recorder, Script, counter, main, request_text, small_window, table

from contextwarden.log.events import ToolResult
from contextwarden.log.store import MemoryStore
from contextwarden.replay import ReplayInput, ReplaySettings, parse_strategy, replay
from contextwarden.window.policies.presets import CODING_TOOL_POLICIES
from contextwarden.window.state import derive_state

FOCUS = ("src/pkg/core.py", "src/pkg/module_3.py", "src/pkg/module_7.py")
GOAL = "Fix compute_total in src/pkg/core.py so compute_total([2, 3]) == 5. Do not change the public API."

UNGUARDED = "contextwarden:modified-files=0"
"""The default without the protection of the files changed last (``Protection.modified_files``)."""


def session(explore: int, cycles: int) -> tuple[Script, list[int]]:
    """The session and the event counts at which part 1 takes a snapshot."""
    s = Script()
    s.user(GOAL)
    for n in range(explore):
        s.read(f"src/pkg/module_{n}.py", 160)
    marks = [len(s.events)]
    for c in range(cycles):
        for path in FOCUS:
            s.read(path, 160)
            s.edit(path, old=f"scale + {c}", new=f"scale + {c + 1}")
            s.read(path, 161 + c)  # re-read after the edit: the current content
        s.test(tests=200, failing=("test_compute_total",) if c < cycles - 1 else ())
        if c == cycles // 2 - 1:
            marks.append(len(s.events))
    marks.append(len(s.events))
    return s, marks


def _snapshots(script: Script, marks: list[int]) -> list[list[Any]]:
    store = MemoryStore()
    sid = store.create_session("ws").id
    events = store.append(sid, script.events, expected_last_seq=0)
    rows: list[list[Any]] = []
    for label, mark in zip(("after exploring", "mid-fix", "end"), marks, strict=True):
        st = derive_state(events[:mark], policies=CODING_TOOL_POLICIES)
        rows.append(
            [
                label,
                ", ".join(st.working_set[:5]) + (" …" if len(st.working_set) > 5 else ""),
                ", ".join(st.files_modified) or "–",
                ", ".join(st.failing_tests) or "–",
                len(st.unresolved_errors),
            ]
        )
    return rows


def _latest_reads(script: Script) -> dict[str, str]:
    calls = {c.id: c for e in script.events for c in getattr(e, "tool_calls", ())}
    latest: dict[str, str] = {}
    for e in script.events:
        if isinstance(e, ToolResult) and e.tool_name == "read_file":
            latest[str(calls[e.call_id].arguments["path"])] = e.output
    return latest


def _final(script: Script, spec: str, latest: dict[str, str], model: str = "gpt-4o") -> list[Any]:
    """Replay with ``spec`` for ``model``; measure its final request."""
    tok = counter()
    recorder = Recorder(parse_strategy(spec))
    results = replay(
        [ReplayInput(name="ws", source="scripted session", events=tuple(script.events))],
        [recorder],
        settings=ReplaySettings(model=model, optimum=False),
        counter=tok,
    )
    text = request_text(recorder.built[-1].context)
    in_set = [p for p in FOCUS if latest[p] in text]
    others = [p for p in latest if p not in FOCUS and latest[p] in text]
    label = spec if model == "gpt-4o" else f"{spec} ({model})"
    return [
        label,
        results.strategies[0].per_file[0].requests[-1].input_tokens,
        f"{len(in_set)}/{len(FOCUS)}",
        sum(tok.count(latest[p]) for p in others),
        len(others),
    ]


def run(*, small: bool = False) -> Experiment:
    """Experiment 4: the derived working set, and how much of it each strategy keeps under pressure."""
    explore, cycles = (8, 4) if small else (16, 8)
    script, marks = session(explore, cycles)
    t1 = table(
        "The derived task state as the session moves on",
        ["point", "working set (most recent first, top 5)", "files modified", "failing tests", "unresolved errors"],
        _snapshots(script, marks),
        note="The state tracks files, tests and errors; it does not track symbols (functions, classes).",
    )
    latest = _latest_reads(script)
    specs = ("raw", "mask-last-n:5", "contextwarden", UNGUARDED)
    rows = [_final(script, spec, latest) for spec in specs]
    window = (int(str(rows[2][1])) // 1000 + 1) * 1000
    narrow = small_window(window)
    rows.append(_final(script, "contextwarden", latest, narrow))
    t2 = table(
        "The final request: current content of the working set, and tokens spent outside it",
        [
            "strategy",
            "request tokens",
            "working-set files with current content visible",
            "tokens of other files' reads",
            "other files still verbatim",
        ],
        rows,
        note=f"{narrow}: gpt-4o cut to a {window:,}-token window, just above the default's final request, so "
        "the budget (window − output reserve − margin) forces reductions.",
    )
    by = {r[0]: r for r in rows}
    pressured = by[f"contextwarden ({narrow})"]
    end = derive_state(script.events, policies=CODING_TOOL_POLICIES)
    top = set(end.working_set[: len(FOCUS)]) == set(FOCUS)
    findings = (
        f"The working set's top {len(FOCUS)} {'are' if top else 'are not'} the three files being fixed "
        f"({', '.join(FOCUS)}); explored files stay behind them, ranked by recency, up to 12 files. The failing "
        f"test {'left the state when the last run passed' if not end.failing_tests else 'is still failing'}.",
        f"Under pressure ({narrow}) contextwarden kept {pressured[2]} working-set files current in "
        f"{pressured[1]:,} tokens, with {pressured[3]:,} tokens of other files' reads; raw kept {by['raw'][2]} with "
        f"{by['raw'][3]:,} such tokens.",
        f"Without the protection of modified files (`{UNGUARDED.partition(':')[2]}`) {by[UNGUARDED][2]} of the "
        f"working set stays current, against {by['contextwarden'][2]} with it: the default keeps only the newest "
        "tool result by recency, so the current read of a file being changed, a few calls back, would be masked "
        "like any other.",
    )
    return Experiment(
        name="working_set",
        title="Experiment 4: working set",
        setup=f"A scripted session: the goal, {explore} file reads while exploring, then {cycles} cycles over "
        f"three files (read, edit, re-read, then a test run that fails until the last cycle). Part 2 replays "
        "it and inspects the final request of each strategy.",
        shows="That the derived state tracks the active files and recent failures, and how much of the working "
        "set's current content each strategy keeps when the budget is tight.",
        tables=(t1, t2),
        findings=findings,
    )


if __name__ == "__main__":
    sys.exit(main(run))
