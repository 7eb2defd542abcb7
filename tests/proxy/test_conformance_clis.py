"""Claude Code and Codex, unmodified, on a long coding task through the proxy: direct, observe, manage.

The real CLIs (``scripts/clis.sh`` installs them and exports ``CONTEXTWARDEN_CLAUDE_BIN`` and
``CONTEXTWARDEN_CODEX_BIN``; ``CONTEXTWARDEN_CLI_VERSIONS=latest`` installs the newest instead) run
their own tools in a scratch git repository while the strict scripted upstream plays the model from a
script and refuses whatever the real API would refuse. The ``recall`` arm is ``manage`` with
``contextwarden mcp`` configured in the client: a read the proxy masked is recalled through the client
and must come back byte for byte, and another credential's server must refuse its id. Each arm runs
once per module; each check is its own test. A check that fails only because of a known proxy bug is
marked ``xfail(strict=True)`` naming the bug, so it turns red the day the bug is fixed and the mark must go.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import anyio
import pytest
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters

from _paths import DATA, ROOT
from contextwarden.proxy import agentcli
from contextwarden.proxy.agentscript import mcp_answer
from contextwarden.proxy.agenttask import COMMIT_SUBJECT
from contextwarden.proxy.conformance import (
    MODEL_PATHS,
    RECALL_ARM,
    ArmResult,
    cause,
    cause_kind,
    hidden_references,
    prefix_breaks,
    run_arm,
    thinking_problems,
    uncovered_supersessions,
    unexplained_breaks,
)

CLIENTS = ("claude-code", "codex")
PROXIED = ("observe", "manage")

KNOWN: dict[tuple[str, str, str], str] = {}
"""Checks that fail because of a known proxy bug: ``(check, client, arm) -> the bug`` (none at the pinned
versions; a newer client run with ``CONTEXTWARDEN_CLI_VERSIONS=latest`` may need one)."""

_RUNS: dict[tuple[str, str], ArmResult] = {}

ArmOf = Callable[[str, str], ArmResult]


def _params(check: str, arms: tuple[str, ...]) -> list[object]:
    out: list[object] = []
    for client in CLIENTS:
        for arm in arms:
            reason = KNOWN.get((check, client, arm))
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            out.append(pytest.param(client, arm, marks=marks, id=f"{client}-{arm}"))
    return out


@pytest.fixture(scope="module")
def arm_of(tmp_path_factory: pytest.TempPathFactory) -> ArmOf:
    """Runs (once per module) and returns one client's arm."""

    def get(client: str, arm: str) -> ArmResult:
        binary = agentcli.binary(client)
        if binary is None:
            pytest.skip(f"{client} is not installed ({agentcli.BIN_ENV[client]} unset): run scripts/clis.sh")
        if (client, arm) not in _RUNS:
            _RUNS[(client, arm)] = run_arm(client, binary, arm, tmp_path_factory.mktemp(f"{client}-{arm}"))
        return _RUNS[(client, arm)]

    return get


def _cli_json(*args: str) -> Any:
    """A ``contextwarden`` command's JSON output, run as a user would."""
    done = subprocess.run([sys.executable, "-m", "contextwarden", *args], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _why(result: ArmResult) -> str:
    return f"exit {result.cli.returncode}; stderr: {result.cli.stderr[-1500:]}; stdout: {result.cli.stdout[-1500:]}"


@pytest.mark.parametrize(("client", "arm"), _params("completes", ("direct", *PROXIED, RECALL_ARM)))
def test_task_completes(arm_of: ArmOf, client: str, arm: str) -> None:
    result = arm_of(client, arm)
    assert result.cli.returncode == 0, _why(result)
    assert result.agent.failures == []
    assert result.agent.played[-1] == len(result.agent.script.steps), result.agent.played
    assert result.state == {
        "fixed": True,
        "notes": True,
        "subject": COMMIT_SUBJECT,
        "commits": 2,
        "clean": True,
    }


@pytest.mark.parametrize(("client", "arm"), _params("no_upstream_errors", ("direct", *PROXIED, RECALL_ARM)))
def test_no_request_is_refused_upstream(arm_of: ArmOf, client: str, arm: str) -> None:
    result = arm_of(client, arm)
    assert result.upstream.refusals == []
    assert [r.path for r in result.upstream.received if r.path in MODEL_PATHS and r.status != 200] == []
    assert [row.note for row in result.rows if row.outcome == "upstream_error"] == []


@pytest.mark.parametrize(("client", "arm"), _params("no_fallbacks", (*PROXIED, RECALL_ARM)))
def test_no_request_falls_back(arm_of: ArmOf, client: str, arm: str) -> None:
    result = arm_of(client, arm)
    assert len(result.rows) >= len(result.task_requests())
    notes = sorted({row.note for row in result.rows if row.outcome == "fallback"})
    assert notes == []
    assert [w for w in result.warnings if "fell back" in w] == []


@pytest.mark.parametrize("client", CLIENTS)
def test_the_client_itself_extends_each_request(arm_of: ArmOf, client: str) -> None:
    """The baseline: without the proxy, each request extends the previous one (so any break is the proxy's)."""
    result = arm_of(client, "direct")
    bodies = [json.loads(r.body) for r in result.task_requests()]
    assert prefix_breaks(result.fmt, bodies) == []


@pytest.mark.parametrize(("client", "arm"), _params("window_causes", (*PROXIED, RECALL_ARM)))
def test_every_prefix_break_is_a_window_event_with_a_real_cause(arm_of: ArmOf, client: str, arm: str) -> None:
    result = arm_of(client, arm)
    assert unexplained_breaks(result) == []
    assert [e.kind for e in result.window_events() if not cause(e)] == []
    # the clients never edit, trim or rewind their history on this task (the direct arm shows it),
    # so a window restarted from "the client's copy" had no real cause
    restarts = [cause(e) for e in result.window_events() if cause_kind(e).startswith("client")]
    assert restarts == [], f"{len(restarts)} restarts, first: {restarts[:1]}"


@pytest.mark.parametrize(("client", "arm"), _params("thinking", ("direct", *PROXIED, RECALL_ARM)))
def test_thinking_and_reasoning_come_back_byte_for_byte(arm_of: ArmOf, client: str, arm: str) -> None:
    result = arm_of(client, arm)
    assert result.agent.issued, "the client did not turn thinking on"
    assert thinking_problems(result) == []


@pytest.mark.parametrize(("client", "arm"), _params("ledger", PROXIED))
def test_the_ledger_agrees_with_the_stand_ins_bill(arm_of: ArmOf, client: str, arm: str) -> None:
    result = arm_of(client, arm)
    direct = arm_of(client, "direct")
    total = _cli_json("proxy", "stats", "--json", "--store", result.store)["total"]
    assert total == result.stats["total"]
    assert math.isclose(total["cost_usd"], result.bill_usd(), rel_tol=0.02), (total, result.bill_usd())
    # the counterfactual the ledger prices is what the direct arm was really billed
    assert math.isclose(total["client_cost_usd"], direct.bill_usd(), rel_tol=0.05), (total, direct.bill_usd())


@pytest.mark.parametrize(("client", "arm"), _params("supersession", ("manage",)))
def test_a_result_is_superseded_only_by_one_that_holds_it(arm_of: ArmOf, client: str, arm: str) -> None:
    result = arm_of(client, arm)
    sent = result.sent_task_bodies()
    forwarded = [json.loads(r.body) for r in result.task_requests()]
    assert len(sent) == len(forwarded)
    assert uncovered_supersessions(result.fmt, sent, forwarded) == []


@pytest.mark.parametrize(("client", "arm"), _params("references", ("manage",)))
def test_a_result_the_client_points_back_to_is_forwarded_as_sent(arm_of: ArmOf, client: str, arm: str) -> None:
    """Claude Code may answer a re-read with "file unchanged since your last Read" (2.1.197 does)."""
    result = arm_of(client, arm)
    forwarded = [json.loads(r.body) for r in result.task_requests()]
    assert hidden_references(result.sent_task_bodies(), forwarded) == []


CLIENT_SESSION_HEADERS = {"claude-code": "x-claude-code-session-id", "codex": "session-id"}


@pytest.mark.parametrize(("client", "arm"), _params("sessions", (*PROXIED, RECALL_ARM)))
def test_sessions_ls_lists_the_session_under_the_clients_id(arm_of: ArmOf, client: str, arm: str) -> None:
    result = arm_of(client, arm)
    ids = {r.headers.get(CLIENT_SESSION_HEADERS[client], "") for r in result.task_requests()} - {""}
    assert len(ids) == 1, ids
    listed = json.dumps(_cli_json("sessions", "ls", "--json", "--store", result.store))
    assert ids.pop() in listed, listed[:500]


RECALL_TOOLS = {"claude-code": "mcp__contextwarden__recall", "codex": "mcp__contextwarden.recall"}
"""The call each client's placeholders name: Claude Code lists the tool under a name of its own, Codex
defers it in a namespace the model loads with ``tool_search`` and calls the tool of."""

RECALL_KNOWN: dict[str, str] = {}
"""Clients whose recall scenario fails for a known reason: ``client -> the reason`` (none at the pinned versions)."""


def _recall_params() -> list[object]:
    out: list[object] = []
    for client in CLIENTS:
        reason = RECALL_KNOWN.get(client)
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        out.append(pytest.param(client, marks=marks, id=client))
    return out


def _recall_over_stdio(store: str, key: str, rid: str) -> tuple[bool, str]:
    """``recall(rid)`` from ``contextwarden mcp`` bound to the credential ``key``, over stdio as a client starts it."""
    src = str(ROOT / "src")
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "contextwarden", "mcp", "--store", store, "--credential-env", "AGENT_KEY"],
        env={**os.environ, "PYTHONPATH": src, "AGENT_KEY": key},
    )

    async def go() -> tuple[bool, str]:
        async with Client(params) as client:
            result = await client.call_tool("recall", {"id": rid})
            return bool(result.is_error), "".join(getattr(c, "text", "") for c in result.content)

    return anyio.run(go)


@pytest.mark.parametrize("client", _recall_params())
def test_a_masked_read_is_recalled_byte_for_byte_and_not_by_another_credential(arm_of: ArmOf, client: str) -> None:
    """With ``contextwarden mcp`` configured, the agent recalls a read the proxy masked, through the client."""
    result = arm_of(client, RECALL_ARM)
    assert result.cli.returncode == 0, _why(result)
    assert result.agent.failures == []
    assert result.state["fixed"] and result.state["clean"], result.state
    assert result.upstream.refusals == []
    assert [row.note for row in result.rows if row.outcome == "fallback"] == []
    assert result.agent.recall_calls, "no forwarded placeholder named a recall call"
    call_id, tool, arguments = result.agent.recall_calls[0]
    assert tool == RECALL_TOOLS[client]
    # a deferred tool is loaded first, with the client's own tool search
    assert len(result.agent.searches) == (1 if "." in tool else 0)
    rid = arguments["id"]
    original = result.first_output(result.agent.recall_of)
    assert original is not None and len(original) > 10_000
    # the client returns the recall's answer byte for byte as the read first returned it
    assert mcp_answer(result.first_output(call_id) or "") == original
    # and the model sees all of it: whole, or cut and filled in by the recalls the cut's marker names
    assert result.agent.recalled_as_seen() == original
    # another credential's server holds no session with that id; the agent's own credential's does
    refused, text = _recall_over_stdio(result.store, agentcli.API_KEYS[client] + "-other", rid)
    assert refused and f"no session of this credential holds {rid};" in text, text
    assert _recall_over_stdio(result.store, agentcli.API_KEYS[client], rid) == (False, original)


def test_recordings_are_of_the_pinned_versions() -> None:
    """The fixtures the fast replay tests use are named for the versions ``scripts/clis.sh`` pins."""
    script = (ROOT / "scripts" / "clis.sh").read_text()
    recorded = {p.name for p in (DATA / "recorded").glob("*.jsonl.xz")}
    for package, name in (("@anthropic-ai/claude-code", "claude-code"), ("@openai/codex", "codex")):
        line = next(x for x in script.splitlines() if x.strip().startswith(f'"{package} '))
        assert f"{name}-{line.split()[1]}.jsonl.xz" in recorded
