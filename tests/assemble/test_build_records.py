"""``inspect`` and ``lint`` rebuild the requests an agent really sent, from the builds' records."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from click.testing import CliRunner

from contextwarden import (
    AssistantMessage,
    ContextManager,
    ModelContext,
    ToolCall,
    ToolDefinition,
    ToolResult,
    UserMessage,
    get_profile,
    render,
)
from contextwarden.cli.inspect import command as inspect_command
from contextwarden.cli.lint import command as lint_command
from contextwarden.governance.inspection import inspect_session
from contextwarden.log.store import SQLiteStore
from contextwarden.tokens import HeuristicCounter

TOOLS = (
    ToolDefinition(name="read_file", description="Read a file.", parameters={"type": "object"}),
    ToolDefinition(name="bash", description="Run a command.", parameters={"type": "object"}),
)
SMALL = dataclasses.replace(get_profile("gpt-4o"), name="tiny-16k", context_window=16_000, max_output_tokens=1_000)
"""A model no registry knows: only the build record can tell ``inspect`` its window."""


def _agent(path: Path, turns: int = 60) -> tuple[str, ModelContext]:
    """An agent loop at a 16K window (compactions included); returns the store and its last request."""
    store = SQLiteStore(str(path))
    manager = ContextManager(store, counter=HeuristicCounter())
    session = manager.session("agent", model=SMALL, tools=TOOLS, create=True)
    session.append(UserMessage(text="Port the parser to the new API. Never change the CLI flags."))
    for n in range(turns):
        session.build()
        call = ToolCall(id=f"c{n}", name="read_file", arguments={"path": f"src/mod{n % 6}.py"})
        output = "\n".join(f"def f{n}_{i}(x):  # revision {n}, line {i}" for i in range(400))
        session.append(AssistantMessage(text=f"Reading module {n % 6}.", tool_calls=(call,)))
        session.append(ToolResult(call_id=call.id, tool_name="read_file", output=output))
    last = session.build()
    store.close()
    return str(path), last


def test_inspect_rebuilds_the_last_request_the_agent_sent(tmp_path: Path) -> None:
    db, sent = _agent(tmp_path / "s.db")
    store = SQLiteStore(db)
    view = inspect_session(store, "agent", counter=HeuristicCounter())
    store.close()
    assert view.context.model == "tiny-16k" and view.window == 16_000
    assert view.sections["summary"] > 0, "the 16K window was compacted, and the summary is shown"
    assert render(view.context, "openai_chat") == render(sent, "openai_chat")


def test_inspect_json_reports_the_recorded_window_and_tools(tmp_path: Path) -> None:
    db, _ = _agent(tmp_path / "s.db", turns=6)
    result = CliRunner().invoke(inspect_command, ["agent", "--store", db, "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["model"] == "tiny-16k" and data["window"] == 16_000
    assert data["sections"]["tools"]["tokens"] > 0


def test_an_unknown_model_or_policy_is_refused_with_the_known_names(tmp_path: Path) -> None:
    db, _ = _agent(tmp_path / "s.db", turns=2)
    for args, known in ((["--model", "gpt-9-mega"], "gpt-4o"), (["--policy", "astrology"], "research")):
        for command in (inspect_command, lint_command):
            result = CliRunner().invoke(command, ["agent", "--store", db, *args])
            assert result.exit_code == 2, (command.name, result.output)
            assert known in result.output, result.output


def test_lint_taxonomy_runs_on_the_recorded_requests(tmp_path: Path) -> None:
    db, _ = _agent(tmp_path / "s.db", turns=6)
    result = CliRunner().invoke(lint_command, ["agent", "--store", db, "--json", "--taxonomy"])
    data = json.loads(result.output)
    assert data["requests"] == data["taxonomy"]["requests"] == 6  # one per model call
    assert set(data["taxonomy"]["counts"]) >= {"OVERFLOW", "STALE_CONTEXT"}


def test_budget_command_sums_a_session_tree(tmp_path: Path) -> None:
    from contextwarden import UsageReport
    from contextwarden.cli.spend import command as budget_command

    db = str(tmp_path / "tree.db")
    store = SQLiteStore(db)
    store.create_session("root")
    store.create_session("child", parent_session_id="root")
    store.append(
        "root", [UsageReport(input_tokens=1_000, cache_read_tokens=600, output_tokens=100)], expected_last_seq=0
    )
    store.append("child", [UsageReport(input_tokens=400, output_tokens=50)], expected_last_seq=0)
    store.close()
    result = CliRunner().invoke(budget_command, ["child", "--store", db, "--limit", "1000", "--json"])
    data = json.loads(result.output)
    # (100 + 400 x 0.25) + (50 + 400 x 0.25): cached input is not counted
    assert result.exit_code == 0 and data["root"] == "root" and data["spent"] == 350
    spent = CliRunner().invoke(budget_command, ["root", "--store", db, "--limit", "300"])
    assert spent.exit_code == 1 and "limit reached" in spent.output
