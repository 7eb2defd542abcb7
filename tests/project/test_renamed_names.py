"""Renamed public names still work for one release, and every use of an old one warns.

Each old name resolves to the very object of its new name, under a DeprecationWarning that names
the replacement.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from contextwarden import ContextManager, SpendLimit, SpendTracker, open_store
from contextwarden.cli import cli, main


@pytest.mark.parametrize(
    ("module", "old", "new"),
    [
        ("contextwarden", "BudgetExhausted", "SpendLimitReached"),
        ("contextwarden.errors", "BudgetExhausted", "SpendLimitReached"),
        ("contextwarden.errors", "ContextOverflowError", "PromptTooLongError"),
        ("contextwarden", "TreeBudget", "SpendTracker"),
        ("contextwarden", "TreeBudgetPolicy", "SpendLimit"),
        ("contextwarden.importers", "FORMATS", "TRANSCRIPT_FORMATS"),
        ("contextwarden.importers", "detect_format", "detect_transcript_format"),
    ],
)
def test_old_name_warns_and_is_the_new_one(module: str, old: str, new: str) -> None:
    mod = importlib.import_module(module)
    with pytest.warns(DeprecationWarning, match=f"{old} is deprecated .* use .*{new}"):
        value = getattr(mod, old)
    assert value is getattr(mod, new)


def test_an_old_error_name_still_catches_the_new_error() -> None:
    from contextwarden.errors import SpendLimitReached

    with pytest.warns(DeprecationWarning):
        from contextwarden.errors import BudgetExhausted
    with pytest.raises(BudgetExhausted):
        raise SpendLimitReached("spent")


def test_an_unknown_name_is_still_an_attribute_error() -> None:
    import contextwarden.errors

    with pytest.raises(AttributeError, match="NoSuchError"):
        _ = contextwarden.errors.NoSuchError  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("TreeBudgetPolicy", "SpendLimit"),
        ("TreeBudget", "SpendTracker"),
        ("TreeUsage", "TreeSpend"),
        ("TreeBudgetHook", "SpendLimitHook"),
        ("NOTICE_SOURCE", "NOTICE_SOURCE"),
    ],
)
def test_the_old_spend_module_warns_on_import_and_on_each_old_name(old: str, new: str) -> None:
    sys.modules.pop("contextwarden.plan.treebudget", None)
    with pytest.warns(DeprecationWarning, match="contextwarden.plan.treebudget is deprecated"):
        old_module = importlib.import_module("contextwarden.plan.treebudget")
    spend = importlib.import_module("contextwarden.plan.spend")
    with pytest.warns(DeprecationWarning, match=f"use contextwarden.plan.spend.{new}"):
        assert getattr(old_module, old) is getattr(spend, new)


def test_the_managers_old_keyword_warns_and_still_limits_spending() -> None:
    tracker = SpendTracker(SpendLimit(limit=1_000))
    with pytest.warns(DeprecationWarning, match="tree_budget= is deprecated .* use spend_tracker="):
        manager = ContextManager(open_store("memory:"), tree_budget=tracker)
    assert manager.spend_tracker is tracker


def test_the_old_spend_command_runs_the_new_one_with_a_note(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    open_store(str(store)).close()
    new = CliRunner().invoke(cli, ["spend", "nobody", "--limit", "10", "--store", str(store)])
    old = CliRunner().invoke(cli, ["budget", "nobody", "--limit", "10", "--store", str(store)])
    assert "`contextwarden budget` is deprecated" in old.stderr and "use `contextwarden spend`" in old.stderr
    assert "deprecated" not in new.stderr
    assert old.exit_code == new.exit_code == 2 and "no session 'nobody'" in old.stderr
    listed = CliRunner().invoke(cli, ["--help"]).stdout
    assert " spend " in listed and " budget " not in listed


def test_the_proxys_old_limit_option_is_hidden_and_notes_its_new_name(capsys: pytest.CaptureFixture[str]) -> None:
    main(["proxy", "--budget-limit", "5", "stats", "--store", "memory:"])
    err = capsys.readouterr().err
    assert "--budget-limit is deprecated" in err and "use --spend-limit" in err
    assert "--budget-limit" not in CliRunner().invoke(cli, ["proxy", "--help"]).stdout


def test_build_seen_warns_and_returns_what_build_with_last_seq_returns() -> None:
    from contextwarden import UserMessage

    manager = ContextManager(open_store("memory:"))
    session = manager.session("s", model="gpt-4o", create=True)
    session.append(UserMessage(text="hello"))
    context, last_seq = manager.build_with_last_seq("s", model="gpt-4o")
    with pytest.warns(DeprecationWarning, match=r"ContextManager.build_seen\(\) is deprecated .*build_with_last_seq"):
        old_context, old_seq = manager.build_seen("s", model="gpt-4o")
    assert old_seq == last_seq == manager.store.get_session("s").last_seq
    assert old_context.messages == context.messages


def test_model_context_window_warns_and_is_the_context_window() -> None:
    from contextwarden import UserMessage

    manager = ContextManager(open_store("memory:"))
    session = manager.session("s", model="gpt-4o", create=True)
    session.append(UserMessage(text="hello"))
    context = session.build()
    assert context.context_window == 128_000
    with pytest.warns(DeprecationWarning, match="ModelContext.window is deprecated .*ModelContext.context_window"):
        assert context.window == 128_000


def test_the_budgets_window_for_warns_and_answers_the_input_window() -> None:
    from contextwarden import BudgetPolicy, get_profile

    gpt5 = get_profile("gpt-5")
    with pytest.warns(DeprecationWarning, match=r"BudgetPolicy.window_for\(\) is deprecated .*input_window_for"):
        assert BudgetPolicy().window_for(gpt5) == BudgetPolicy().input_window_for(gpt5) == 272_000


def test_the_summarizers_window_warns_and_is_its_input_window() -> None:
    from contextwarden import get_profile
    from contextwarden.plan.compaction.summarizers import LLMSummarizer
    from contextwarden.testing import ScriptedProvider

    summarizer = LLMSummarizer(ScriptedProvider([]), model=get_profile("gpt-4o"))
    with pytest.warns(DeprecationWarning, match="LLMSummarizer.window is deprecated .*LLMSummarizer.input_window"):
        assert summarizer.window == summarizer.input_window == 128_000


def test_the_managers_tree_budget_attribute_warns_and_reads_its_spend_tracker() -> None:
    from contextwarden import SpendLimit, SpendTracker

    tracker = SpendTracker(SpendLimit(limit=1_000_000))
    manager = ContextManager(open_store("memory:"), spend_tracker=tracker)
    with pytest.warns(DeprecationWarning, match=r"ContextManager.tree_budget is deprecated .*spend_tracker"):
        assert manager.tree_budget is tracker
