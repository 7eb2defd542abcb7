"""Context failure detectors over foreign request logs and replayed sessions."""

from __future__ import annotations

import json
from typing import Any

from contextwarden.governance.classify import classify_requests, classify_session
from contextwarden.governance.requests import RequestReader
from contextwarden.governance.taxonomy import Failure, TaxonomySettings
from contextwarden.log.events import AssistantMessage, Instruction, ToolCall, ToolResult, UserMessage
from contextwarden.log.store import MemoryStore

SYSTEM = "You are a careful coding agent."


class Log:
    """Builds an OpenAI Chat session request by request, the way an agent would send it."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": "Fix the login bug."},
        ]
        self.requests: list[dict[str, Any]] = []
        self.n = 0

    def call(self, name: str, args: dict[str, Any], output: str, text: str | None = None) -> str:
        self.n += 1
        cid = f"call_{self.n}"
        self.messages.append(
            {
                "role": "assistant",
                "content": text,
                "tool_calls": [
                    {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
                ],
            }
        )
        self.messages.append({"role": "tool", "tool_call_id": cid, "content": output})
        return cid

    def say(self, role: str, text: str) -> None:
        self.messages.append({"role": role, "content": text})

    def send(self) -> None:
        self.requests.append({"model": "gpt-4o", "messages": json.loads(json.dumps(self.messages))})

    def classify(self, settings: TaxonomySettings | None = None) -> Any:
        reader = RequestReader()
        return classify_requests([reader.parse(p) for p in self.requests], settings=settings)


def failures(report: Any, failure: Failure) -> list[Any]:
    return [t for t in report.tags if t.failure is failure]


def test_a_healthy_log_has_no_tags() -> None:
    log = Log()
    log.send()
    for i in range(5):
        log.call("read_file", {"path": f"src/m{i}.py"}, f"def f{i}(): pass")
        log.send()
    report = log.classify()
    assert report.requests == 6 and report.tags == ()
    assert set(report.counts) == {f.value for f in Failure}


def test_overflow_and_tool_output_dominance() -> None:
    log = Log()
    log.call("bash", {"command": "cat big.log"}, "error line\n" * 4_000)
    log.send()
    report = log.classify(TaxonomySettings(window=5_000))
    assert [t.request for t in failures(report, Failure.OVERFLOW)] == [1]
    dominance = failures(report, Failure.TOOL_OUTPUT_DOMINANCE)
    assert dominance and "tool result of bash" in dominance[0].item


def test_re_reading_evicted_content_is_under_context() -> None:
    log = Log()
    log.call("read_file", {"path": "src/auth.py"}, "def login(): ...\n" * 50)
    log.send()
    log.messages[3]["content"] = "[output masked to save space]"  # the harness evicted it
    log.say("assistant", "Let me look at the tests.")
    log.send()
    log.call("read_file", {"path": "src/auth.py"}, "def login(): ...\n" * 50)
    log.send()
    under = failures(log.classify(), Failure.UNDER_CONTEXT)
    assert len(under) == 1 and under[0].request == 3 and "read_file" in under[0].detail


def test_re_reading_after_a_change_is_not_under_context() -> None:
    log = Log()
    log.call("read_file", {"path": "src/auth.py"}, "v1")
    log.send()
    log.call("write_file", {"path": "src/auth.py", "content": "v2"}, "written")
    log.send()
    log.messages[3]["content"] = "[masked]"
    log.call("read_file", {"path": "src/auth.py"}, "v2")
    log.send()
    assert failures(log.classify(), Failure.UNDER_CONTEXT) == []


def test_an_old_read_shown_unmarked_after_an_edit_is_stale() -> None:
    log = Log()
    log.call("read_file", {"path": "src/auth.py"}, "def login(user): ...")
    log.send()
    log.call("edit_file", {"path": "src/auth.py", "old": "user", "new": "user, pw"}, "edited")
    log.send()
    log.say("assistant", "Now the handler.")
    log.send()
    stale = failures(log.classify(), Failure.STALE_CONTEXT)
    assert len(stale) == 1 and stale[0].request == 2 and "call_1" in stale[0].item

    marked = Log()
    marked.call("read_file", {"path": "src/auth.py"}, "def login(user): ...")
    marked.send()
    note = "edited\n[note: src/auth.py changed; its earlier output is out of date]"
    marked.call("edit_file", {"path": "src/auth.py"}, note)
    marked.send()
    assert failures(marked.classify(), Failure.STALE_CONTEXT) == []


def test_a_constraint_against_a_visible_plan_is_conflicting() -> None:
    log = Log()
    log.say("assistant", "Plan: I will modify src/auth.py to add the token check.")
    log.send()
    log.say("user", "Do not modify src/auth.py, change the middleware instead.")
    log.send()
    conflict = failures(log.classify(), Failure.CONFLICTING_CONTEXT)
    assert len(conflict) == 1 and conflict[0].request == 2 and conflict[0].item == "messages[2] (assistant)"


def test_a_constraint_lost_in_compaction_is_summary_drift_the_goal_lost_is_instruction_loss() -> None:
    log = Log()
    log.say("user", "Never use print statements in library code.")
    log.call("bash", {"command": "pytest"}, "1 failed")
    log.send()
    kept = Log()
    kept.messages = [log.messages[0], {"role": "user", "content": "Summary: we ran the tests; one failed."}]
    kept.send()
    lossy = Log()
    lossy.requests = [*log.requests, *kept.requests]
    report = lossy.classify()
    drift = failures(report, Failure.SUMMARY_DRIFT)
    assert len(drift) == 1 and "print statements" in drift[0].detail
    loss = failures(report, Failure.INSTRUCTION_LOSS)
    assert [t.detail for t in loss] == ["the original goal is no longer in the request"]

    faithful = Log()
    faithful.requests = [
        *log.requests,
        {
            "model": "gpt-4o",
            "messages": [
                log.messages[0],
                {
                    "role": "user",
                    "content": "Fix the login bug.\nConstraints: Never use print statements "
                    "in library code.\nSummary: one test failed.",
                },
            ],
        },
    ]
    report = faithful.classify()
    assert failures(report, Failure.SUMMARY_DRIFT) == [] and failures(report, Failure.INSTRUCTION_LOSS) == []


def test_prefix_instability_names_the_break() -> None:
    log = Log()
    log.send()
    log.messages[0]["content"] = SYSTEM + " Time: 2025-05-05 10:00:00"
    log.send()
    tags = failures(log.classify(), Failure.PREFIX_INSTABILITY)
    assert len(tags) == 1 and tags[0].item == "messages[0] (system)" and "system_dynamic" in tags[0].detail


def test_old_untouched_tool_output_is_irrelevant() -> None:
    log = Log()
    log.call("read_file", {"path": "docs/history.md"}, "old notes\n" * 600)
    log.send()
    for i in range(9):
        log.call("bash", {"command": f"echo {i}"}, str(i))
        log.send()
    tags = failures(log.classify(), Failure.IRRELEVANT_CONTEXT)
    assert tags and tags[0].request == 9


def test_claiming_tests_pass_without_a_passing_run_is_missing_evidence() -> None:
    log = Log()
    log.call("bash", {"command": "pytest"}, "FAILED tests/test_auth.py::test_login\n1 failed")
    log.send()
    log.say("assistant", "All tests pass now.")
    log.send()
    assert len(failures(log.classify(), Failure.MISSING_EVIDENCE)) == 1

    ok = Log()
    ok.call("bash", {"command": "pytest"}, "12 passed in 0.4s")
    ok.send()
    ok.say("assistant", "All tests pass now.")
    ok.send()
    assert failures(ok.classify(), Failure.MISSING_EVIDENCE) == []


# --------------------------------------------------------------------------- replayed sessions


def test_session_stale_read_is_never_presented_as_current() -> None:
    # Experiment 7 (stale context): read a file, edit it, continue; the old read must not pass for current.
    store = MemoryStore()
    sid = store.create_session().id
    events: list[Any] = [Instruction(text=SYSTEM), UserMessage(text="Add a password argument to login().")]
    events += [
        AssistantMessage(tool_calls=(ToolCall(id="r1", name="read_file", arguments={"path": "src/auth.py"}),)),
        ToolResult(call_id="r1", tool_name="read_file", output="def login(user):\n    return user\n"),
        AssistantMessage(
            tool_calls=(
                ToolCall(
                    id="e1",
                    name="edit_file",
                    arguments={"path": "src/auth.py", "old_string": "user)", "new_string": "user, password)"},
                ),
            )
        ),
        ToolResult(call_id="e1", tool_name="edit_file", output="The file src/auth.py has been updated."),
    ]
    for i in range(3):
        events += [
            AssistantMessage(tool_calls=(ToolCall(id=f"b{i}", name="bash", arguments={"command": "ls"}),)),
            ToolResult(call_id=f"b{i}", tool_name="bash", output="src tests"),
        ]
    events.append(AssistantMessage(text="Done."))
    store.append(sid, events, expected_last_seq=0)
    report = classify_session(store, sid, model="gpt-4o")
    assert report.requests == 6
    assert failures(report, Failure.STALE_CONTEXT) == [], report.tags


def test_session_masked_read_then_re_read_is_under_context() -> None:
    from dataclasses import replace

    from contextwarden.assemble.manager import ContextPolicy
    from contextwarden.plan.planner import PlannerSettings
    from contextwarden.plan.protection import Protection

    store = MemoryStore()
    sid = store.create_session().id
    events: list[Any] = [Instruction(text=SYSTEM), UserMessage(text="Study the modules.")]
    for i in range(8):
        path = "src/core.py" if i in (0, 7) else f"src/m{i}.py"
        events += [
            AssistantMessage(tool_calls=(ToolCall(id=f"c{i}", name="read_file", arguments={"path": path}),)),
            ToolResult(call_id=f"c{i}", tool_name="read_file", output=f"# {path}\n" + "x = 1\n" * 800),
        ]
    events.append(AssistantMessage(text="Done."))
    store.append(sid, events, expected_last_seq=0)
    eager = replace(
        ContextPolicy(),
        planner=PlannerSettings(
            keep_recent_tool_results=2,
            cache_aware=False,
            min_batch_tokens=1,
            protection=Protection(exploration_reads=False, working_set_reads=0),
        ),
    )  # an agent that only reads keeps its reads by default: mask them here to see the re-read
    report = classify_session(store, sid, model="gpt-4o", policy=eager)
    under = failures(report, Failure.UNDER_CONTEXT)
    assert len(under) == 1 and "src/core.py" in under[0].detail


def test_staleness_follows_the_tool_policies_in_force_not_the_coding_presets() -> None:
    from contextwarden.assemble.manager import ContextPolicy
    from contextwarden.window.policies.presets import CODING_TOOL_POLICIES, ToolPolicy

    log = Log()  # a spreadsheet agent: its tools are nothing the coding presets know
    log.call("load_sheet", {"path": "q3.xlsx"}, "A1=100")
    log.send()
    log.call("put_cell", {"path": "q3.xlsx", "cell": "A1", "value": 120}, "ok")
    log.send()
    reader = RequestReader()
    requests = [reader.parse(p) for p in log.requests]
    assert failures(classify_requests(requests), Failure.STALE_CONTEXT) == []
    sheets = ContextPolicy(
        tool_policies=(
            ToolPolicy(name="sheet-read", patterns=("load_sheet",), category="file_read"),
            ToolPolicy(name="sheet-write", patterns=("put_cell",), category="file_edit"),
            *CODING_TOOL_POLICIES,
        )
    )
    stale = failures(classify_requests(requests, policy=sheets), Failure.STALE_CONTEXT)
    assert len(stale) == 1 and "call_1" in stale[0].item
