from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from contextwarden.assemble.retrieval import ReReadTracker, answer_retrieval, read_range, recall
from contextwarden.log.events import (
    AssistantMessage,
    ContextEdit,
    ContextEditBatch,
    Event,
    JSONValue,
    ToolCall,
    ToolResult,
    UserMessage,
    with_position,
)
from contextwarden.tokens import HeuristicCounter
from contextwarden.tools import READ_RANGE, RECALL
from contextwarden.window.policies.presets import CODING_TOOL_POLICIES, apply_policy, policy_for

COUNTER = HeuristicCounter()


class _Session:
    """Builds a positioned event list the way a store would."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self._n = 0

    def add(self, event: Event) -> Event:
        stored = with_position(event, session_id="s1", seq=len(self.events) + 1)
        self.events.append(stored)
        return stored

    def tool(self, name: str, output: str, **arguments: JSONValue) -> ToolResult:
        self._n += 1
        call = ToolCall(id=f"call_{self._n}", name=name, arguments=arguments)
        self.add(AssistantMessage(tool_calls=(call,)))
        result = self.add(ToolResult(id=f"res_{self._n}", call_id=call.id, tool_name=name, output=output))
        assert isinstance(result, ToolResult)
        return result

    def mask(self, *ids: str, action: str = "mask") -> None:
        edits = tuple(ContextEdit(target_id=i, action=action, replacement="[masked]") for i in ids)  # type: ignore[arg-type]
        self.add(ContextEditBatch(edits=edits))


def _log(n: int) -> str:
    return "".join(f"line {i}: building target_{i}\n" for i in range(1, n + 1))


def test_read_range_returns_the_requested_lines_inclusive() -> None:
    s = _Session()
    result = s.tool("Bash", _log(100), command="make all")
    out = read_range(s.events, result.id, 10, 12, max_tokens=1_000, counter=COUNTER)
    header, body = out.split("\n", 1)
    assert header == f'[read_range artifact_id="{result.id}" (Bash(command="make all")): lines 10-12 of 100]'
    assert body == "line 10: building target_10\nline 11: building target_11\nline 12: building target_12\n"


def test_read_range_bad_requests_get_one_line_answers() -> None:
    s = _Session()
    result = s.tool("Bash", _log(15), command="make")
    empty = s.tool("Bash", "", command="true")
    answers = [
        read_range(s.events, "nope", 1, 5, max_tokens=500, counter=COUNTER),
        read_range(s.events, result.id, 20, 30, max_tokens=500, counter=COUNTER),
        read_range(s.events, result.id, 9, 3, max_tokens=500, counter=COUNTER),
        read_range(s.events, empty.id, 1, 1, max_tokens=500, counter=COUNTER),
    ]
    for answer in answers:
        assert answer.startswith("read_range: ") and "\n" not in answer
    assert 'no tool output with artifact_id "nope"' in answers[0]
    assert "has 15 lines; start_line 20 is past its end" in answers[1]
    assert "end_line (3) is before start_line (9)" in answers[2]
    assert "is empty" in answers[3]


def test_read_range_clips_a_range_past_the_end_and_says_so() -> None:
    s = _Session()
    result = s.tool("Bash", _log(15), command="make")
    out = read_range(s.events, result.id, 0, 99, max_tokens=1_000, counter=COUNTER)
    assert "lines 1-15 of 15 (asked for 0-99)]" in out.splitlines()[0]
    assert out.endswith("line 15: building target_15\n")


def test_read_range_output_is_bounded_with_absolute_line_numbers() -> None:
    s = _Session()
    result = s.tool("Bash", _log(5_000), command="make")
    out = read_range(s.events, result.id, 1_001, 4_000, max_tokens=800, counter=COUNTER)
    assert COUNTER.count(out) <= 800
    assert "line 1001: building target_1001" in out
    assert "line 4000: building target_4000" in out
    call = re.search(r"start_line=(\d+), end_line=(\d+)\)", out)
    assert call is not None and 1_001 < int(call.group(1)) < int(call.group(2)) < 4_000


def test_marker_ranges_and_read_range_agree_after_normalization() -> None:
    s = _Session()
    raw = "".join(f"\x1b[32mstep {i}\x1b[0m\n" + "retrying...\n" * 5 for i in range(1, 2_001))
    result = s.tool("Bash", raw, command="./deploy.sh")
    policy = policy_for("Bash", None, CODING_TOOL_POLICIES)
    cut = apply_policy(raw, policy, counter=COUNTER, artifact_id=result.id, max_tokens=600)
    call = re.search(r'read_range\(artifact_id="([^"]+)", start_line=(\d+), end_line=(\d+)\)', cut.text)
    assert call is not None
    start, end = int(call.group(2)), int(call.group(3))
    last_kept_head = cut.text.split("\n[... output truncated")[0].splitlines()[-1]
    out = read_range(s.events, call.group(1), start - 1, start + 3, max_tokens=500, counter=COUNTER)
    assert out.splitlines()[1] == last_kept_head  # the line before the cut is where the head ended
    assert "\x1b" not in out and "[... previous line repeated 4 more times]" in out
    assert start < end


def test_recall_finds_passages_with_artifact_ids_and_line_numbers() -> None:
    s = _Session()
    s.add(UserMessage(text="Fix the flaky upload test; never touch the production config."))
    log = _log(200).replace("line 137: building target_137", "line 137: ERROR checksum mismatch in upload.py")
    result = s.tool("Bash", log, command="make test")
    s.tool("Read", "def upload(data):\n    return send(data)\n", file_path="src/upload.py")
    out = recall(s.events, "checksum mismatch", counter=COUNTER)
    first = out.splitlines()[1]
    assert first.startswith(f'1. output of Bash(command="make test") [artifact_id="{result.id}", lines 121-140')
    assert "   137: line 137: ERROR checksum mismatch in upload.py" in out
    config = recall(s.events, "production config", counter=COUNTER)
    assert "1. user message [seq 1]" in config and "never touch the production config" in config


def test_recall_limits_bounds_and_misses() -> None:
    s = _Session()
    for i in range(30):
        s.tool("Bash", f"warning: parser {i} deprecated\n" * 3, command=f"run {i}")
    out = recall(s.events, "parser deprecated", counter=COUNTER, limit=3)
    assert out.count("\n1. ") == 1 and "\n3. " in out and "\n4. " not in out
    assert "the best 3 of 30 matching passages" in out
    small = recall(s.events, "parser deprecated", counter=COUNTER, limit=30, max_tokens=120)
    assert COUNTER.count(small) <= 120
    assert recall(s.events, "zebra", counter=COUNTER) == "recall 'zebra': nothing in this session matches."
    assert recall(s.events, "  ?! ", counter=COUNTER) == "recall: the query has no searchable words."


def test_recall_handles_chinese_and_skips_retrieval_results() -> None:
    s = _Session()
    s.add(UserMessage(text="不要修改生产环境的配置文件"))
    s.tool("read_range", "不要修改生产环境的配置文件 (copy)", artifact_id="x", start_line=1, end_line=2)
    out = recall(s.events, "生产环境", counter=COUNTER)
    assert "1. user message [seq 1]" in out
    assert "read_range" not in out


def test_the_tool_schemas_name_the_arguments_the_answers_read() -> None:
    s = _Session()
    out = s.tool("Bash", _log(50), command="make")
    artifact, start, end = READ_RANGE.parameters["required"]
    read = ToolCall(id="r", name=READ_RANGE.name, arguments={artifact: out.id, start: 7, end: 7})
    assert "line 7: building target_7" in answer_retrieval(s.events, read, counter=COUNTER, max_tokens=500)
    (query,) = RECALL.parameters["required"]
    search = ToolCall(id="q", name=RECALL.name, arguments={query: "target_9"})
    assert out.id in answer_retrieval(s.events, search, counter=COUNTER, max_tokens=500)


def test_re_read_rate_counts_reads_of_evicted_content() -> None:
    s = _Session()
    a = s.tool("Read", "A\n", file_path="/r/a.py")
    b = s.tool("Read", "B\n", file_path="/r/b.py")
    c = s.tool("Bash", _log(50), command="make")
    s.mask(a.id, b.id, c.id)
    s.tool("Bash", "A\n", command="cat /r/a.py")  # re-read of a (same file, another tool)
    s.tool("Read", "A\n", file_path="/r/a.py")  # a is back in view: not a re-read
    s.tool("read_range", "x", artifact_id=c.id, start_line=1, end_line=10)  # re-read of c
    s.tool("read_range", "x", artifact_id=c.id, start_line=11, end_line=20)  # c already back
    s.tool("Read", "C\n", file_path="/r/c.py")  # never evicted
    tracker = ReReadTracker.from_events(s.events)
    assert tracker.evictions == 3
    assert tracker.re_reads == 2
    assert tracker.rate == 2 / 3
    assert tracker.re_read_call_ids == ["call_4", "call_6"]


def test_supersession_is_not_an_eviction_and_rate_starts_at_zero() -> None:
    s = _Session()
    a = s.tool("Read", "A\n", file_path="a.py")
    assert ReReadTracker.from_events(s.events).rate == 0.0
    s.mask(a.id, action="supersede")
    s.mask(a.id, action="mask")
    s.mask(a.id, action="clear")  # the same result evicted twice counts once
    s.tool("Read", "A\n", file_path="a.py")
    tracker = ReReadTracker.from_events(s.events)
    assert (tracker.evictions, tracker.re_reads, tracker.rate) == (1, 1, 1.0)


def test_swe_agent_scrolling_back_into_an_evicted_file_counts() -> None:
    s = _Session()
    opened = s.tool("open", "[File: a.py (300 lines total)]\n", path="a.py", line_number=1)
    s.mask(opened.id)
    s.tool("goto", "[File: a.py]\n", line_number=200)
    assert ReReadTracker.from_events(s.events).re_reads == 1


@given(
    start=st.integers(min_value=-5, max_value=400),
    length=st.integers(min_value=-3, max_value=400),
    limit=st.integers(min_value=1, max_value=600),
)
@settings(max_examples=150, deadline=None)
def test_read_range_never_exceeds_its_limit(start: int, length: int, limit: int) -> None:
    s = _Session()
    result = s.tool("Bash", _log(300), command="make")
    out = read_range(s.events, result.id, start, start + length, max_tokens=limit, counter=COUNTER)
    assert COUNTER.count(out) <= limit or out.startswith("read_range: ")
