"""Generate long coding-agent sessions (Anthropic Messages JSON) for replay benchmarks.

The bundled real trajectories are short (2 to 21 requests), so the scaling benchmarks need long
sessions. Each generated session is a SWE-bench-style bug fix by a tool-using agent with two tools,
``bash`` and ``str_replace_editor`` (the OpenHands / SWE-agent function-calling tool set): it explores
the repository (find, grep, whole-file views and view ranges), writes and runs a reproduction script
(a traceback, ``is_error``), edits the source with ``str_replace``, re-views what it edited, runs the
tests (failures with tracebacks and ``FAILED`` lines until the last runs pass), looks at ``git diff``
and answers. About a third of the sessions get a mid-session user correction with a constraint.

**Calibration** against the Complexity Trap paper's per-instance figures
(``/work/shared/data/complexity-trap/experiment_instance_costs_sweagent.csv``, raw agents:
Gemini 2.5 Flash 50.1 turns and 20.2K mean prompt tokens per call, Qwen3-Coder 480B 58.5 turns and
22.8K, Qwen3-32B 52.0 turns and 16.6K; completions 50-150 tokens) and the paper's statement that
tool observations are about 84% of trajectory tokens:

- turns: uniform in 50..70 (one request per assistant message);
- observations: sizes drawn per tool kind (views 30-160 lines of code, test runs 25-90 lines, grep
  8-40 lines, edits a short snippet), scaled by a per-session verbosity factor in 0.5..1.1 so the
  mean prompt tokens per call of the raw history lands in 10-25K;
- assistant turns: a 1-3 sentence thought plus the call (edits carry their old/new strings), so
  observations are 80-88% of the tokens after the system prompt and the task.

``python benchmarks/generate_sessions.py --count 8 --out out/sessions`` writes the files and prints, per
session and on average, the figures above (counted with the exact o200k counter when installed), so
the calibration is checked every time it runs. Sessions are deterministic for a seed.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

WORDS = [
    "config",
    "parser",
    "value",
    "token",
    "node",
    "item",
    "cache",
    "store",
    "index",
    "field",
    "schema",
    "record",
    "entry",
    "loader",
    "writer",
    "buffer",
    "stream",
    "handler",
    "context",
    "result",
    "option",
    "default",
    "format",
    "encode",
    "decode",
    "resolve",
    "merge",
]
SYSTEM = (
    "You are a software engineering agent working in a repository checked out at /testbed. Use the "
    "bash tool to run commands and the str_replace_editor tool to view, create and edit files. "
)


@dataclass
class _Repo:
    rng: random.Random
    package: str
    files: dict[str, list[str]] = field(default_factory=dict)

    def ident(self) -> str:
        return "_".join(self.rng.sample(WORDS, self.rng.choice((1, 2, 2, 3))))

    def code(self, n: int) -> list[str]:
        out: list[str] = []
        while len(out) < n:
            name = self.ident()
            args = ", ".join(self.rng.sample(WORDS, self.rng.randint(1, 3)))
            out.append(f"def {name}({args}):")
            out.append(f'    """Return the {self.rng.choice(WORDS)} of {self.rng.choice(WORDS)}."""')
            for _ in range(self.rng.randint(2, 8)):
                a, b, c = self.rng.sample(WORDS, 3)
                out.append(
                    self.rng.choice(
                        (
                            f"    {a} = {b}.get({c!r}, {self.rng.randint(0, 99)})",
                            f"    if {a} is None or {b} > {self.rng.randint(1, 64)}:",
                            f"        raise ValueError(f'bad {a}: {{{b}!r}}')",
                            f"    {a}.{b}({c}, strict={self.rng.choice(('True', 'False'))})",
                            f"    return {a} + {b}",
                        )
                    )
                )
            out.append("")
        return out[:n]

    def file(self, path: str) -> list[str]:
        if path not in self.files:
            self.files[path] = self.code(self.rng.randint(150, 600))
        return self.files[path]


def _numbered(lines: list[str], start: int) -> str:
    return "\n".join(f"{start + i:6d}\t{line}" for i, line in enumerate(lines))


class _Session:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.repo = _Repo(self.rng, self.rng.choice(("astropy", "sympy", "requests", "flask", "pylint")))
        self.verbosity = self.rng.uniform(0.5, 1.1)
        self.turns = self.rng.randint(50, 70)
        pkg = self.repo.package
        self.sources = [f"{pkg}/{self.repo.ident()}.py" for _ in range(self.rng.randint(5, 9))]
        self.target = self.sources[0]
        self.test = f"tests/test_{self.target.split('/')[-1]}"
        self.messages: list[dict[str, Any]] = []
        self.calls = 0
        self.fixed_at = int(self.turns * self.rng.uniform(0.7, 0.85))
        self.steer_at = int(self.turns * 0.45) if self.rng.random() < 0.35 else -1

    def n(self, low: int, high: int) -> int:
        return max(1, int(self.rng.randint(low, high) * self.verbosity))

    def task(self) -> str:
        func = self.repo.ident()
        body = " ".join(
            f"The {self.rng.choice(WORDS)} {self.rng.choice(WORDS)} is {self.rng.choice(WORDS)}ed "
            f"when {self.rng.choice(WORDS)} is empty."
            for _ in range(self.rng.randint(8, 20))
        )
        return (
            f"<issue>\n`{func}` raises ValueError for valid input in {self.target}.\n\n{body}\n\n```python\n"
            + "\n".join(self.repo.code(12))
            + "\n```\n</issue>\n\nFix the issue so the reproduction works. "
            "Do not modify the existing tests. Keep the public API of the package unchanged."
        )

    # ------------------------------------------------------------------ tool outputs

    def grep(self) -> tuple[dict[str, Any], str, bool]:
        word = self.rng.choice(WORDS)
        lines = [
            f"{self.rng.choice(self.sources)}:{self.rng.randint(1, 500)}:    {self.rng.choice(WORDS)} = "
            f"{word}.get({self.rng.choice(WORDS)!r})"
            for _ in range(self.n(8, 40))
        ]
        return {"command": f'grep -rn "{word}" {self.repo.package}/'}, "\n".join(lines), False

    def view(self, path: str, ranged: bool) -> tuple[dict[str, Any], str, bool]:
        lines = self.repo.file(path)
        if ranged:
            start = self.rng.randint(1, max(1, len(lines) - 60))
            shown = lines[start - 1 : start - 1 + self.n(30, 90)]
            args: dict[str, Any] = {
                "command": "view",
                "path": f"/testbed/{path}",
                "view_range": [start, start + len(shown) - 1],
            }
            return args, _numbered(shown, start), False
        shown = lines[: self.n(60, 160)]
        return {"command": "view", "path": f"/testbed/{path}"}, _numbered(shown, 1), False

    def edit(self, path: str) -> tuple[dict[str, Any], str, bool]:
        lines = self.repo.file(path)
        at = self.rng.randint(0, len(lines) - 4)
        old = "\n".join(lines[at : at + 3])
        new = old.replace("raise ValueError", "return None") + f"\n    # handle empty {self.rng.choice(WORDS)}"
        lines[at : at + 3] = new.split("\n")
        snippet = _numbered(lines[max(0, at - 4) : at + 8], max(1, at - 3))
        text = (
            f"The file /testbed/{path} has been edited. Here's the result of running `cat -n` on a snippet:\n"
            f"{snippet}\nReview the changes and make sure they are as expected."
        )
        return {"command": "str_replace", "path": f"/testbed/{path}", "old_str": old, "new_str": new}, text, False

    def traceback(self, script: str) -> str:
        frames = [
            f'  File "/testbed/{self.rng.choice(self.sources)}", line {self.rng.randint(1, 500)}, in '
            f"{self.repo.ident()}\n    {self.rng.choice(WORDS)} = {self.rng.choice(WORDS)}()"
            for _ in range(self.n(3, 9))
        ]
        return "Traceback (most recent call last):\n" + "\n".join(frames) + f"\nValueError: bad {script}"

    def run_tests(self, passing: bool) -> tuple[dict[str, Any], str, bool]:
        total = self.rng.randint(20, 60)
        failed = 0 if passing else self.rng.randint(1, 4)
        out = [
            "============================= test session starts ==============================",
            "platform linux -- Python 3.11.7, pytest-8.3.2",
            f"collected {total} items",
            "",
            f"{self.test} " + "." * (total - failed) + "F" * failed,
        ]
        for k in range(failed):
            out += [
                "",
                f"____________________ test_{self.repo.ident()}_{k} ____________________",
                self.traceback("test"),
                "",
                "E       AssertionError: assert None == 42",
            ]
            out += [f"E         {self.rng.choice(WORDS)}: {self.rng.choice(WORDS)}" for _ in range(self.n(5, 20))]
        out += [f"FAILED {self.test}::test_case_{k} - AssertionError" for k in range(failed)]
        summary = f"{failed} failed, {total - failed} passed" if failed else f"{total} passed"
        out.append(f"========================= {summary} in {self.rng.uniform(0.2, 3):.2f}s =========================")
        return {"command": f"python -m pytest {self.test} -q"}, "\n".join(out), bool(failed)

    # ------------------------------------------------------------------ turns

    def step(self, turn: int) -> tuple[str, str, dict[str, Any], str, bool]:
        """(thought, tool, input, output, is_error) of one turn."""
        fixed = turn >= self.fixed_at
        phase = turn / self.turns
        roll = self.rng.random()
        if phase < 0.25:
            if roll < 0.35:
                return ("Let me search for where this is used.", "bash", *self.grep())
            return (
                "Let me look at the relevant file.",
                "str_replace_editor",
                *self.view(self.rng.choice(self.sources), ranged=roll < 0.6),
            )
        if phase < 0.32:
            args = {"command": "python reproduce.py"}
            return ("Let me reproduce the error first.", "bash", args, self.traceback("reproduce"), True)
        if roll < 0.30:
            return ("I will change the failing branch.", "str_replace_editor", *self.edit(self.target))
        if roll < 0.55:
            return (
                "Let me look at the code I changed again.",
                "str_replace_editor",
                *self.view(self.target, ranged=True),
            )
        if roll < 0.80:
            return ("Let me run the tests.", "bash", *self.run_tests(passing=fixed))
        if roll < 0.92:
            out = "fixed" if fixed else self.traceback("reproduce")
            return ("Let me rerun the reproduction.", "bash", {"command": "python reproduce.py"}, out, not fixed)
        return ("Let me search for other callers.", "bash", *self.grep())

    def build(self) -> dict[str, Any]:
        self.messages.append({"role": "user", "content": [{"type": "text", "text": self.task()}]})
        for turn in range(self.turns - 1):
            thought, tool, args, output, is_error = self.step(turn)
            self.calls += 1
            call_id = f"toolu_{self.calls:04d}"
            prose = " ".join(
                f"The {self.rng.choice(WORDS)} depends on {self.rng.choice(WORDS)}."
                for _ in range(self.rng.randint(3, 9))
            )
            self.messages.append(
                {
                    "role": "assistant",
                    "content": [
                        {"type": "text", "text": f"{thought} {prose}"},
                        {"type": "tool_use", "id": call_id, "name": tool, "input": args},
                    ],
                }
            )
            result: dict[str, Any] = {"type": "tool_result", "tool_use_id": call_id, "content": output}
            if is_error:
                result["is_error"] = True
            content: list[dict[str, Any]] = [result]
            if turn == self.steer_at:
                content.append(
                    {
                        "type": "text",
                        "text": "Please don't add new dependencies, and keep the fix "
                        "minimal: only change the function that fails.",
                    }
                )
            self.messages.append({"role": "user", "content": content})
        self.messages.append(
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "text",
                        "text": f"The fix is done: {self.target} now handles empty input and the tests pass.",
                    }
                ],
            }
        )
        system = SYSTEM + " ".join(
            f"Rule {k}: prefer small, verified changes to {self.rng.choice(WORDS)} code." for k in range(1, 60)
        )
        return {"system": system, "messages": self.messages, "metadata": {"generator": "generate_sessions.py"}}


def generate(seed: int) -> dict[str, Any]:
    """One session as an Anthropic Messages document (deterministic for ``seed``)."""
    return _Session(seed).build()


def _text_tokens(block: dict[str, Any], count: Any) -> int:
    if block["type"] == "text":
        return int(count(block["text"]))
    if block["type"] == "tool_use":
        return int(count(block["name"]) + count(json.dumps(block["input"])))
    return int(count(block["content"]))


def calibration(doc: dict[str, Any], count: Any) -> dict[str, float]:
    """Turns, observation share and the raw history's mean prompt tokens per call of one session."""
    system = count(doc["system"])
    history = system
    prompts: list[int] = []
    observed = other = 0
    for index, message in enumerate(doc["messages"]):
        tokens = 0
        for block in message["content"]:
            n = _text_tokens(block, count)
            tokens += n
            if index == 0:
                continue
            if block["type"] == "tool_result":
                observed += n
            else:
                other += n
        if message["role"] == "assistant":
            prompts.append(history)
        history += tokens + 4
    return {
        "turns": len(prompts),
        "observation_share": observed / max(observed + other, 1),
        "mean_prompt_tokens": statistics.mean(prompts),
        "peak_prompt_tokens": max(prompts),
    }


def _counter() -> Any:
    try:
        from contextwarden.tokens import ExactCounter

        return ExactCounter("o200k_base").count
    except ImportError:
        from contextwarden.tokens import HeuristicCounter

        return HeuristicCounter().count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="out/sessions")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    count = _counter()
    rows = []
    print(f"{'session':<14}{'turns':>6}{'obs share':>10}{'mean prompt':>13}{'peak':>9}")
    for k in range(args.count):
        doc = generate(args.seed + k)
        path = out / f"generated-{args.seed + k:03d}.json"
        path.write_text(json.dumps(doc, indent=1), encoding="utf-8")
        c = calibration(doc, count)
        rows.append(c)
        print(
            f"{path.stem:<14}{c['turns']:>6.0f}{c['observation_share']:>10.2f}{c['mean_prompt_tokens']:>13,.0f}"
            f"{c['peak_prompt_tokens']:>9,.0f}"
        )
    print(
        f"{'mean':<14}{statistics.mean(r['turns'] for r in rows):>6.1f}"
        f"{statistics.mean(r['observation_share'] for r in rows):>10.2f}"
        f"{statistics.mean(r['mean_prompt_tokens'] for r in rows):>13,.0f}"
    )
    print("targets: turns 50-70, observation share ~0.84, mean prompt tokens per call (raw) 10,000-25,000")


if __name__ == "__main__":
    main()
