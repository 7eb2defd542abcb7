"""Lines a repetitive output says only once survive a cut middle and a mask (ToolPolicy.odd_lines)."""

from __future__ import annotations

import dataclasses

import pytest

from contextwarden.log.events import AssistantMessage, ToolCall, ToolResult, UserMessage
from contextwarden.log.store.memory import MemoryStore
from contextwarden.tokens import HeuristicCounter
from contextwarden.window.policies._oddlines import find_odd_lines
from contextwarden.window.policies.presets import CODING_TOOL_POLICIES
from contextwarden.window.policies.truncate import truncate_output
from contextwarden.window.projection import Projection, ProjectionConfig

COUNTER = HeuristicCounter()
FACT = "FACT: the artifact bucket is s3://nightly-eu-west."


def build_log(lines: int, *, fact_at: int | None) -> str:
    out = [f"step {n}: compiling module_{n % 17} ... ok" for n in range(lines)]
    if fact_at is not None:
        out.insert(fact_at, FACT)
    return "\n".join(out)


def test_a_repetitive_log_has_its_one_odd_line() -> None:
    text = build_log(400, fact_at=200)
    (odd,) = find_odd_lines(text, limit=2)
    assert text[odd.start : odd.end] == FACT and odd.number == 201


def test_no_line_of_a_varied_output_is_odd() -> None:
    source = "\n".join(f"def handler_{chr(97 + n % 26)}{n}(request): return {n} * {'x' * (n % 5)}" for n in range(60))
    prose = "\n".join(["the quick brown fox", "jumps over the lazy dog", "and runs away"] * 3 + [FACT])
    assert find_odd_lines(source, limit=2) == []  # every line differs: nothing stands out
    assert find_odd_lines(prose, limit=2) == []  # too short to judge
    assert find_odd_lines(build_log(400, fact_at=200), limit=0) == []


@pytest.mark.parametrize("odd_lines", [0, 2])
def test_a_cut_keeps_the_middle_fact_only_when_asked(odd_lines: int) -> None:
    text = build_log(2000, fact_at=1000)
    cut = truncate_output(text, max_tokens=600, counter=COUNTER, artifact_id="a1", odd_lines=odd_lines)
    assert cut.truncated and COUNTER.count(cut.text) <= 600
    assert (FACT in cut.text) is (odd_lines > 0)
    assert cut.odd_lines == ((FACT,) if odd_lines else ())


@pytest.mark.parametrize("odd_lines", [0, 2])
def test_the_mask_placeholder_quotes_the_odd_line(odd_lines: int) -> None:
    policies = tuple(dataclasses.replace(p, odd_lines=odd_lines) for p in CODING_TOOL_POLICIES)
    store = MemoryStore()
    store.create_session("p")
    events = [
        UserMessage(text="find why the nightly build fails"),
        AssistantMessage(tool_calls=(ToolCall(id="k0", name="bash", arguments={"command": "make"}),)),
        ToolResult(call_id="k0", tool_name="bash", output=build_log(300, fact_at=150)),
    ]
    for n in range(1, 5):
        events += [
            AssistantMessage(tool_calls=(ToolCall(id=f"k{n}", name="bash", arguments={"command": f"ls {n}"}),)),
            ToolResult(call_id=f"k{n}", tool_name="bash", output=f"file_{n}.py"),
        ]
    p = Projection(ProjectionConfig(counter=COUNTER, tool_policies=policies))
    for event in store.append("p", events, expected_last_seq=0):
        p.add(event)
    edit = next(e for e in p.mask_edits(3, frozenset()) if "make" in e.replacement)
    assert (FACT in edit.replacement) is (odd_lines > 0)
    assert p.savings(edit) > 1000  # quoting one line still takes almost all of the output away
