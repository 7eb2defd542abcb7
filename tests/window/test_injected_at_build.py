"""Rules 2 and 6 when the request is built: dynamic values in the prefix, unregistered fragments."""

from __future__ import annotations

from contextwarden import AssistantMessage, ContextManager, Instruction, UserMessage, open_store, render
from contextwarden.governance.session import lint_session

STAMPED = "2026-12-05T14:35:50 session 3f2a9c1e-5b7d-4e21-9a0b-6c8d2e4f1a3b\nYou are a coding agent."
GIT_STATUS = "<git_status>\nM src/app.py\n?? notes.txt\n</git_status>\nWhy does the build fail?"


def test_a_timestamp_and_session_id_at_the_front_of_the_prefix_is_a_decision_and_a_finding() -> None:
    store = open_store("memory://")
    session = ContextManager(store).session("s", model="gpt-4o", create=True)
    session.append(Instruction(text=STAMPED), UserMessage(text="hi"))
    context = session.build()
    flagged = [d for d in context.decisions if d.action == "dynamic_prefix"]
    assert len(flagged) == 1
    assert "2026-12-05T14:35" in flagged[0].reason and "3f2a9c1e-5b7d" in flagged[0].reason
    assert context.system.startswith("2026-12-05")  # kept: only the caller knows where it belongs
    session.append(AssistantMessage(text="Hello."))
    assert any(f.rule == "R2" and "look dynamic" in f.message for f in lint_session(store, "s").findings)


def test_an_unregistered_fragment_in_a_user_message_is_escaped_and_recorded() -> None:
    store = open_store("memory://")
    session = ContextManager(store).session("s", model="gpt-4o", create=True)
    session.append(UserMessage(text="Fix the build."), AssistantMessage(text="Looking."), UserMessage(text=GIT_STATUS))
    context = session.build()
    sent = render(context, "openai_chat")["messages"][-1]["content"]
    assert sent.startswith("&lt;git_status>\nM src/app.py") and "&lt;/git_status>" in sent
    assert "<git_status>" not in sent
    user = [e for e in store.read("s") if isinstance(e, UserMessage)][-1]
    assert [d.action for d in context.decisions if d.target == user.id] == ["escape_fragment"]
    session.append(AssistantMessage(text="It fails in app.py."))
    assert any(f.rule == "R6" and "<git_status>" in f.message for f in lint_session(store, "s").findings)


def test_html_and_registered_fragments_are_left_alone() -> None:
    session = ContextManager(open_store("memory://")).session("s", model="gpt-4o", create=True)
    html = "Fix this:\n<div>\n<span>x</span>\n</div>"
    context_note = "<environment_context>\ncwd: /repo\n</environment_context>"
    session.append(UserMessage(text=html), UserMessage(text=context_note))
    context = session.build()
    texts = [m["content"] for m in render(context, "openai_chat")["messages"] if m["role"] == "user"]
    assert texts[-2:] == [html, context_note]
    assert not [d for d in context.decisions if d.action in ("escape_fragment", "dynamic_prefix")]


def test_the_task_itself_is_kept_as_the_person_gave_it() -> None:
    """The first user message is the goal, pinned verbatim: a SWE task's ``<pr_description>`` stays as it is."""
    session = ContextManager(open_store("memory://")).session("s", model="gpt-4o", create=True)
    task = "<pr_description>\nrequests.get sends Content-Length on GET\n</pr_description>\nFix it."
    session.append(UserMessage(text=task))
    context = session.build()
    assert render(context, "openai_chat")["messages"][-1]["content"] == task
    assert not [d for d in context.decisions if d.action == "escape_fragment"]
