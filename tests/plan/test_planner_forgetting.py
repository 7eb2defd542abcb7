"""Never pay to forget: no placeholder or stale note larger than what it replaces."""

from __future__ import annotations

import dataclasses

from contextwarden.log.events import AssistantMessage, Event, ToolCall, ToolResult, UserMessage
from contextwarden.log.store.memory import MemoryStore
from contextwarden.models import get_profile
from contextwarden.plan.planner import PlannerSettings, plan
from contextwarden.plan.protection import Protection
from contextwarden.tokens import HeuristicCounter
from contextwarden.window.accounting import message_tokens
from contextwarden.window.policies.presets import CODING_TOOL_POLICIES
from contextwarden.window.projection import Projection, ProjectionConfig

COUNTER = HeuristicCounter()
UNPROTECTED = Protection(working_set_files=0, modified_files=0, working_set_reads=0, exploration_reads=False)
EAGER = PlannerSettings(
    cache_aware=False, min_batch_tokens=0, min_batch_share=0, keep_recent_tool_results=1, protection=UNPROTECTED
)


def project(*calls: tuple[str, str, dict[str, object]]) -> Projection:
    store = MemoryStore()
    store.create_session("p")
    events: list[Event] = [UserMessage(text="tidy the package")]
    for n, (name, output, args) in enumerate(calls):
        events += [
            AssistantMessage(tool_calls=(ToolCall(id=f"k{n}", name=name, arguments=args),)),  # type: ignore[arg-type]
            ToolResult(call_id=f"k{n}", tool_name=name, output=output),
        ]
    p = Projection(ProjectionConfig(counter=COUNTER, tool_policies=CODING_TOOL_POLICIES))
    for event in store.append("p", events, expected_last_seq=0):
        p.add(event)
    return p


def code(n: int, tag: str) -> str:
    return "\n".join(f"def {tag}_{i}(x):\n    return x + {i}" for i in range(n))


def edit(path: str) -> tuple[str, str, dict[str, object]]:
    return ("edit_file", f"Edited {path}.", {"path": path, "old_string": "a", "new_string": "b"})


def tool_texts(p: Projection) -> list[str]:
    return [i.message.text for i in p.items if i.message.role == "tool"]


def test_a_stale_note_flags_only_a_read_a_placeholder_would_shrink() -> None:
    small = project(("read_file", "x = 1\n", {"path": "a.py"}), edit("a.py"))
    large = project(("read_file", code(40, "f"), {"path": "a.py"}), edit("a.py"))
    assert tool_texts(small)[1] == "Edited a.py."  # a note would cost more than half the read it flags
    assert tool_texts(large)[1] == "Edited a.py.\n[note: earlier reads of this file are out of date]"


def test_a_read_already_masked_gets_no_stale_note() -> None:
    p = project(("read_file", code(40, "f"), {"path": "a.py"}), ("bash", code(40, "log"), {"command": "make"}))
    decided = plan(p, total=p.total, trigger=10**6, profile=get_profile("gpt-4o"), turns_so_far=2, settings=EAGER)
    p.apply_edits(decided.edits)
    assert "masked" in tool_texts(p)[0]
    p.add(AssistantMessage(seq=99, tool_calls=(ToolCall(id="e", name="edit_file", arguments={"path": "a.py"}),)))
    p.add(ToolResult(seq=100, call_id="e", tool_name="edit_file", output="Edited a.py."))
    assert tool_texts(p)[-1] == "Edited a.py."  # the placeholder shows no content to mistake for current


def test_every_edit_of_a_batch_saves_and_the_batch_counts_its_net_saving() -> None:
    # Small edit results go stale at every later edit of the same file: their placeholders would be larger.
    calls = [("read_file", code(30, f"m{i}"), {"path": f"m{i}.py"}) for i in range(3)]
    calls += [edit(f"m{i % 3}.py") for i in range(9)]
    calls += [("bash", code(30, f"t{i}"), {"command": f"pytest -k t{i}"}) for i in range(3)]
    p = project(*calls)
    decided = plan(p, total=p.total, trigger=10**6, profile=get_profile("gpt-4o"), turns_so_far=15, settings=EAGER)
    assert decided.edits and {e.action for e in decided.edits} >= {"stale", "mask"}
    before = {i.id: i for i in p.items}
    for e in decided.edits:
        item = before[e.target_id]
        shown = message_tokens(dataclasses.replace(item.message, text=e.replacement, parts=()), COUNTER)
        assert shown < item.tokens, (e.action, e.replacement)
    assert all(not t.startswith("Edited") for t in (before[e.target_id].message.text for e in decided.edits))
    total = p.total
    p.apply_edits(decided.edits)
    assert decided.saved_tokens == total - p.total > 0
