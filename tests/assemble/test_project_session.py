"""A session opened on a project directory: its rules, prompt files and catalogs reach the request."""

from __future__ import annotations

from pathlib import Path

from contextwarden import ContextManager, Instruction, ProjectContext, UserMessage, open_store, render
from contextwarden.instructions import read_skill


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _project(tmp_path: Path) -> tuple[Path, Path]:
    home = tmp_path / "home"
    home.mkdir()
    _write(home / "AGENTS.md", "Global: answer in English.")
    _write(tmp_path / "work" / "CLAUDE.md", "Workspace: never push.")
    _write(tmp_path / "work" / "app" / "AGENTS.md", "App: run pytest -q.")
    _write(tmp_path / "work" / "app" / "AGENTS.override.md", "App override: run make test.")
    _write(
        home / "skills" / "release" / "SKILL.md",
        "---\nname: release\ndescription: Cut a release.\n---\nSKILL BODY: tag, build, upload.",
    )
    return home, tmp_path / "work" / "app"


def test_a_session_on_a_project_starts_with_its_rules_and_catalog_in_the_request(tmp_path: Path) -> None:
    home, cwd = _project(tmp_path)
    manager = ContextManager(open_store("memory://"))
    session = manager.session("s", model="gpt-4o", create=True, project=ProjectContext(cwd=cwd, home=home))
    session.append(UserMessage(text="Fix the bug."))
    body = str(render(session.build(), "openai_chat"))
    # global first, then from the filesystem root down (no repository here), the override wins in app/
    order = [body.index(t) for t in ("Global: answer", "Workspace: never push", "App override: run make")]
    assert order == sorted(order)
    assert "App: run pytest" not in body
    assert f'path="{tmp_path / "work" / "CLAUDE.md"}"' in body
    # the catalog names the skill; its body is read on demand
    assert "Cut a release." in body and "SKILL BODY" not in body
    assert "SKILL BODY" in read_skill(home / "skills" / "release" / "SKILL.md")


def test_a_rule_file_edited_mid_session_arrives_as_a_new_instruction_and_the_prefix_stays(tmp_path: Path) -> None:
    home, cwd = _project(tmp_path)
    manager = ContextManager(open_store("memory://"))
    session = manager.session("s", model="gpt-4o", create=True, project=ProjectContext(cwd=cwd, home=home))
    session.append(UserMessage(text="Fix the bug."))
    first = render(session.build(), "openai_chat")["messages"]
    assert session.build().messages == session.build().messages  # nothing changed: nothing appended

    _write(tmp_path / "work" / "CLAUDE.md", "Workspace: push only to the fork.")
    second = render(session.build(), "openai_chat")["messages"]
    assert second[: len(first)] == first  # the earlier rules are not rewritten
    added = [e for e in session.events() if isinstance(e, Instruction) and "updated_project_rules" in e.source]
    assert len(added) == 1
    assert "push only to the fork" in added[0].text and "App override" not in added[0].text
    assert "push only to the fork" in str(second[len(first) :])


def test_a_reopened_session_learns_what_changed_while_it_was_closed(tmp_path: Path) -> None:
    home, cwd = _project(tmp_path)
    manager = ContextManager(open_store("memory://"))
    project = ProjectContext(cwd=cwd, home=home)
    session = manager.session("s", model="gpt-4o", create=True, project=project)
    session.append(UserMessage(text="Fix the bug."))
    session.build()
    count = len(session.events())
    assert len(manager.session("s", project=project).events()) == count  # same files: nothing appended
    (cwd / "AGENTS.override.md").unlink()
    reopened = manager.session("s", model="gpt-4o", project=project)
    last = reopened.events()[-1]
    assert isinstance(last, Instruction) and "App: run pytest -q." in last.text


def test_the_parents_rules_need_no_repository_but_project_files_need_trust(tmp_path: Path) -> None:
    home, cwd = _project(tmp_path)
    _write(cwd / ".contextwarden" / "APPEND_SYSTEM.md", "Project addition.")
    manager = ContextManager(open_store("memory://"))
    session = manager.session("s", model="gpt-4o", create=True, project=ProjectContext(cwd=cwd, home=home))
    assert session.project is not None
    assert any("not trusted" in note for note in session.project.notes)
    session.append(UserMessage(text="hi"))
    assert "Project addition." not in str(render(session.build(), "openai_chat"))


def test_inspect_project_lists_the_rule_files_from_the_filesystem_root(tmp_path: Path) -> None:
    import json

    from click.testing import CliRunner

    from contextwarden.cli import cli

    home, cwd = _project(tmp_path)
    runner = CliRunner()
    env = {"CONTEXTWARDEN_HOME": str(home)}
    result = runner.invoke(cli, ["inspect", "--project", str(cwd), "--json"], env=env)
    assert result.exit_code == 0, result.output
    shown = json.loads(result.output)
    assert shown["rule_files"] == [
        str(home / "AGENTS.md"),
        str(tmp_path / "work" / "CLAUDE.md"),
        str(cwd / "AGENTS.override.md"),
    ]
    assert [e["name"] for e in shown["catalog_entries"]] == ["release"]
    assert shown["tokens"]["project_rules"] > 0
    text = runner.invoke(cli, ["inspect", "--project", str(cwd)], env=env)
    assert text.exit_code == 0 and "CLAUDE.md" in text.output
    neither = runner.invoke(cli, ["inspect"], env=env)
    assert neither.exit_code == 2 and "--project" in neither.output
