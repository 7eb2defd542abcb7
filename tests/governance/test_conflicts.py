"""The user's latest word outranks older plans: marked in the request, seen by the taxonomy."""

from __future__ import annotations

import json
from typing import Any

from contextwarden import AssistantMessage, ContextManager, Steering, UserMessage, open_store, render
from contextwarden.governance.classify import classify_requests
from contextwarden.governance.requests import RequestReader
from contextwarden.governance.taxonomy import Failure

PLAN = "Plan: I will modify src/auth.py to add the token check, then run the tests."


def _conflicts(*bodies: dict[str, Any]) -> list[Any]:
    reader = RequestReader()
    report = classify_requests([reader.parse(json.loads(json.dumps(b))) for b in bodies])
    return [t for t in report.tags if t.failure is Failure.CONFLICTING_CONTEXT]


def _session_with_a_plan() -> Any:
    session = ContextManager(open_store("memory://")).session("s", model="gpt-4o", create=True)
    session.append(UserMessage(text="Fix the login bug."), AssistantMessage(text=PLAN))
    return session


def test_a_steering_marks_the_plan_it_overrides_in_the_request() -> None:
    session = _session_with_a_plan()
    before = render(session.build(), "openai_chat")
    session.append(Steering(text="Do not modify src/auth.py; change the middleware instead."))
    after = render(session.build(), "openai_chat")
    assert after["messages"][: len(before["messages"])] == before["messages"]  # the plan is not rewritten
    steering = after["messages"][-1]["content"]
    assert "<steering>" in steering
    assert '[note: this overrides the earlier plan that said: "Plan: I will modify src/auth.py' in steering
    assert steering.endswith("That plan no longer applies.]")
    assert _conflicts(before, after) == []  # marked: the taxonomy sees the override


def test_the_same_constraint_as_a_user_message_is_marked_the_same_way() -> None:
    session = _session_with_a_plan()
    session.append(UserMessage(text="Do not modify src/auth.py."))
    text = render(session.build(), "openai_chat")["messages"][-1]["content"]
    assert text.startswith("Do not modify src/auth.py.\n[note: this overrides the earlier plan")


def test_the_taxonomy_sees_an_unmarked_steering_conflict() -> None:
    plan = {"role": "assistant", "content": PLAN}
    first = {"model": "gpt-4o", "messages": [{"role": "user", "content": "Fix the login bug."}, plan]}
    steering = {"role": "user", "content": "<steering>\nDo not modify src/auth.py.\n</steering>"}
    second = {"model": "gpt-4o", "messages": [*first["messages"], steering]}
    found = _conflicts(first, second)
    assert len(found) == 1 and "src/auth.py" in found[0].detail


def test_a_constraint_about_another_file_marks_nothing() -> None:
    session = _session_with_a_plan()
    session.append(Steering(text="Do not modify src/db.py."))
    assert "[note:" not in render(session.build(), "openai_chat")["messages"][-1]["content"]
