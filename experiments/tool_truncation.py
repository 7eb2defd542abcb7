"""Experiment 3: tool-specific truncation for bash, grep, read_file and tests.

Part 1 cuts one large real-shaped output per tool to the same token budget three ways: the tool's own
contextwarden policy (head/tail split, error lines kept, normalization per tool), a uniform middle cut
(Codex-style, half head half tail) and a head-only cut, and checks which key facts survive — the facts
an agent needs to act on the output, the offline stand-in for task success (which needs a model).
Part 2 replays a scripted session whose tools produce such outputs with contextwarden's per-tool
policies against one uniform policy for every tool, and reports tokens and retention probes.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

from _common import ROOT, Experiment, Script, build_log, counter, grep_output, main, pytest_output, table

from contextwarden.assemble.manager import ContextPolicy
from contextwarden.log.events import Event, JSONValue, ToolCall
from contextwarden.replay import ContextWardenStrategy, ReplayInput, ReplaySettings, replay
from contextwarden.window.policies.bytecut import truncate_bytes
from contextwarden.window.policies.presets import (
    CODING_BYTES_TOOL_POLICIES,
    CODING_TOOL_POLICIES,
    DEFAULT_TOOL_POLICY,
    apply_policy,
    policy_for,
)
from contextwarden.window.policies.truncate import truncate_output

TEXTWRAP = ROOT / "benchmarks" / "corpus" / "python_code.py.txt"
"""CPython 3.11.7 ``Lib/textwrap.py`` (PSF license), the real file a ``read_file`` returns."""


@dataclass(frozen=True, kw_only=True)
class Case:
    """One tool output and the facts an agent needs from it."""

    tool: str
    arguments: dict[str, JSONValue]
    output: str
    facts: dict[str, str]


def cases(scale: int) -> list[Case]:
    """One large output per tool; ``scale`` multiplies their length."""
    source = TEXTWRAP.read_text(encoding="utf-8")
    log = build_log(900 * scale, error_at=500 * scale) + "\nmake: *** [Makefile:12: all] Error 2"
    tests = pytest_output(tests=600 * scale, failing=("test_compute_total",), verbose=True)
    hits = "src/pkg/core.py:12:def compute_total(values):\n" + grep_output("compute_total", 400 * scale)
    return [
        Case(
            tool="bash",
            arguments={"command": "make -j2"},
            output=log,
            facts={
                "the compiler error": "error: 'PyFloat_AS_DOUBLE' undeclared",
                "the exit status": "make: *** [Makefile:12: all] Error 2",
            },
        ),
        Case(
            tool="grep",
            arguments={"pattern": "compute_total", "path": "src"},
            output=hits,
            facts={
                "the definition": "src/pkg/core.py:12:def compute_total(values):",
                "the hit count": f"{400 * scale + 1} lines",
            },
        ),
        Case(
            tool="read_file",
            arguments={"path": "Lib/textwrap.py"},
            output=source,
            facts={
                "the imports": "import re",
                "the class": "class TextWrapper:",
                "the end of the file": 'if __name__ == "__main__":',
                "a way to read the rest": "read_range(",
            },
        ),
        Case(
            tool="bash",
            arguments={"command": "python -m pytest -v tests"},
            output=tests,
            facts={
                "the failing test": "FAILED tests/test_core.py::test_compute_total",
                "the assertion": "E       assert 23 == 5",
                "the summary": f"1 failed, {600 * scale - 1} passed",
            },
        ),
    ]


def _cuts(case: Case, budget: int) -> dict[str, str]:
    tok = counter()
    call = ToolCall(id="c", name=case.tool, arguments=case.arguments)
    policy = policy_for(case.tool, call, CODING_TOOL_POLICIES)
    return {
        f"tool-specific ({policy.name} policy)": apply_policy(
            case.output, policy, counter=tok, artifact_id="ev_1", max_tokens=budget
        ).text,
        "uniform middle cut": truncate_output(
            case.output, max_tokens=budget, counter=tok, artifact_id="ev_1", keep_error_lines=False
        ).text,
        "head only": truncate_output(
            case.output, max_tokens=budget, counter=tok, artifact_id="ev_1", head_fraction=1.0, keep_error_lines=False
        ).text,
        "10,000 bytes under a header": truncate_bytes(
            case.output, max_bytes=10_000, counter=tok, artifact_id="ev_1"
        ).text,
    }


def _session(rounds: int, scale: int) -> list[Event]:
    s = Script()
    s.user("Fix the build and then compute_total in src/pkg/core.py. Do not change the public API.")
    for r in range(rounds):
        for case in cases(scale):
            failed = "make" in str(case.arguments.get("command", ""))
            s.call(case.tool, case.output, case.arguments, exit_code=2 if failed else None)
        s.edit(f"src/pkg/module_{r}.py")
    return s.events



def _misses(figures: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in figures["probe_misses"].items() if v) or "none"

def run(*, small: bool = False) -> Experiment:
    """Experiment 3: key facts kept per tool at one budget, and per-tool policies against one uniform policy."""
    budget = 800
    scale = 1 if small else 2
    tok = counter()
    rows: list[list[Any]] = []
    score: dict[str, list[int]] = {}
    for case in cases(scale):
        original = tok.count(case.output)
        label = case.tool if case.tool != "bash" else f"bash ({str(case.arguments['command']).split()[0]})"
        for strategy, text in _cuts(case, budget).items():
            kept = [name for name, fact in case.facts.items() if fact in text]
            missing = [name for name in case.facts if name not in kept]
            key = strategy.split(" (")[0]
            score.setdefault(key, [0, 0])
            score[key][0] += len(kept)
            score[key][1] += len(case.facts)
            rows.append(
                [
                    label,
                    original,
                    case.output.count("\n") + 1,
                    strategy,
                    tok.count(text),
                    f"{len(kept)}/{len(case.facts)}",
                    ", ".join(missing) or "–",
                ]
            )
    t1 = table(
        f"One output per tool cut to {budget} tokens",
        ["tool", "original tokens", "lines", "cut", "kept tokens", "facts kept", "missing"],
        rows,
    )
    rounds = 2 if small else 4
    events = _session(rounds, scale)
    uniform = ContextWardenStrategy(
        name="contextwarden, one uniform policy", policy=ContextPolicy(tool_policies=(DEFAULT_TOOL_POLICY,))
    )
    in_bytes = ContextWardenStrategy(
        name="contextwarden, 10,000 bytes under a header (coding-bytes)",
        policy=ContextPolicy(tool_policies=CODING_BYTES_TOOL_POLICIES),
    )
    results = replay(
        [ReplayInput(name="tools", source="scripted build-and-test session", events=tuple(events))],
        ["raw", "contextwarden", uniform, in_bytes],
        settings=ReplaySettings(model="gpt-4o", optimum=False),
        counter=tok,
    )
    rows2 = []
    for s in results.strategies:
        f = s.figures()
        misses = ", ".join(f"{k} {v}" for k, v in f["probe_misses"].items() if v) or "–"
        rows2.append(
            [
                s.name,
                f["requests"],
                round(f["input_tokens_mean"]),
                f["input_tokens_peak"],
                f["overflows"],
                f["cost_usd"],
                f"{f['retention']:.1%}",
                misses,
            ]
        )
    t2 = table(
        f"A {rounds}-round session of these outputs, replayed (gpt-4o prices)",
        [
            "strategy",
            "requests",
            "input / request",
            "peak input",
            "over window",
            "cost (USD)",
            "retention",
            "probe misses",
        ],
        rows2,
        note="Retention probes: task, constraints, latest tool result (up to its truncation marker), "
        "latest failing evidence, modified files.",
    )
    per_tool, one, byte_cut = (s.figures() for s in results.strategies[1:4])
    findings = (
        *(
            f"{name}: {kept}/{total} key facts kept "
            f"{'in 10,000 bytes' if name.startswith('10,000') else f'at {budget} tokens'}."
            for name, (kept, total) in score.items()
        ),
        f"Over the session, per-tool policies sent {per_tool['input_tokens_mean'] / one['input_tokens_mean']:.2f}× "
        f"the tokens of one uniform policy (retention {per_tool['retention']:.0%} against {one['retention']:.0%}): "
        "search output gets a lower cap, tests and logs keep their error lines instead of more head.",
        f"The byte cut (10,000 bytes from the middle under a warning header, every tool) sent "
        f"{byte_cut['input_tokens_mean'] / per_tool['input_tokens_mean']:.2f}× the tokens of the per-tool token "
        f"policies (retention {byte_cut['retention']:.0%} against {per_tool['retention']:.0%}; probe misses: "
        f"{_misses(byte_cut)} against {_misses(per_tool)}).",
    )
    return Experiment(
        name="tool_truncation",
        title="Experiment 3: tool-specific truncation",
        setup=f"Four outputs: a {900 * scale}-line build log with one compiler error in the middle (bash), "
        f"{400 * scale + 1} grep hits with the definition first, CPython's Lib/textwrap.py (read_file) and a "
        f"{600 * scale}-test `pytest -v` run with one failure in the middle (tests). Each is cut to {budget} "
        "tokens by the tool's contextwarden policy, by a uniform middle cut and by a head-only cut, and to 10,000 "
        "bytes by the byte cut (`docs/behaviours.md`, row 51; a larger budget: compare the facts, not the tokens). "
        "Then a "
        f"scripted session that produces these outputs {rounds} times is replayed with the per-tool "
        "policies, with one uniform policy for every tool, and with the byte cut (10,000 bytes from the "
        "middle under a warning header).",
        shows="Which facts an agent can still act on after truncation (the offline proxy for task success), and "
        "what per-tool policies change in a whole session's tokens.",
        tables=(t1, t2),
        findings=findings,
    )


if __name__ == "__main__":
    sys.exit(main(run))
