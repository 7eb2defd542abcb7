"""Gemini CLI, headless, through the proxy to the scripted upstream, with ``contextwarden mcp`` configured.

A short task: the scripted agent reads a file and finishes; the CLI must complete with no fall-back,
its requests must form one session, and its tool list must hold the MCP server's tools. Recall: the
agent reads files again until the proxy shows one read superseded, then recalls it through the CLI,
which must send back the read's bytes inside its own wrapping; another credential's server refuses
the id. The long conformance task (:mod:`contextwarden.proxy.agentgemini`): it completes, with no fall-back and no
upstream error, the prefix breaks only at window events, and every thought signature comes back as
issued. Skips when Gemini CLI is not installed (``scripts/clis.sh`` sets ``CONTEXTWARDEN_GEMINI_BIN``).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.client import Client

from _proxy import rig
from contextwarden.log.events import ToolResult
from contextwarden.proxy import agentgemini
from contextwarden.proxy.agenttask import COMMIT_SUBJECT, make_repo, repo_state
from contextwarden.proxy.conformance import cause
from contextwarden.proxy.mcp import build_server
from contextwarden.proxy.recall import Credential
from contextwarden.proxy.scripted import Reply

GEMINI = (
    os.environ.get("CONTEXTWARDEN_GEMINI_BIN")
    or "/root/.cache/cw-clis/@google+gemini-cli@0.61.0/node_modules/.bin/gemini"
)
SMALL = agentgemini.MODEL
RECALL = "mcp_contextwarden_recall"
"""The name Gemini CLI lists ``contextwarden mcp``'s recall under."""

pytestmark = pytest.mark.skipif(not os.access(GEMINI, os.X_OK), reason=f"Gemini CLI is not installed at {GEMINI}")


def _responses(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [p["functionResponse"] for c in body["contents"] for p in c["parts"] if "functionResponse" in p]


def _reader(
    files: int, *, distinct: int = 0, recalled: dict[str, str] | None = None
) -> Callable[[dict[str, Any]], Reply]:
    """Cat one file a turn (of ``distinct`` files in turn, 0: each once) until a placeholder names the recall tool.

    Then recall that id (``recalled`` gets the id of the CLI's result that showed the placeholder) and stop.
    """

    def script(body: dict[str, Any]) -> Reply:
        done = _responses(body)
        if done and done[-1]["name"] == RECALL:
            return Reply(text="recalled")
        for response in done:
            found = re.search(rf'{RECALL}\(id="([0-9a-f]{{32}})"\)', str(response["response"].get("output", "")))
            if found:
                if recalled is not None:
                    recalled.update(shown_in=str(response.get("id", "")), id=found[1])
                return Reply(text="", tool_calls=(("r", RECALL, {"id": found[1]}),))
        n = len(done)
        if n >= files:
            return Reply(text="no placeholder came")
        part = n % distinct if distinct else n
        return Reply(text="", tool_calls=((f"c{n}", "run_shell_command", {"command": f"cat part_{part}.txt"}),))

    return script


def test_gemini_cli_completes_a_task_through_the_proxy_with_the_mcp_tools_listed(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "part_0.txt").write_text("".join(f"row {i}: value {i * 7}\n" for i in range(400)))
    store = tmp_path / "s.db"
    agent = agentgemini.GeminiUpstream(_reader(1))
    with rig(str(store), upstream=agent) as r:
        home = agentgemini.home(tmp_path / "home", str(store))
        run = agentgemini.run(GEMINI, work, home, r.url, "gemini-key-a", "read part_0.txt")
        assert run.returncode == 0, run.stderr[-2000:]
        assert '"status":"success"' in run.stdout, run.stdout[-2000:]
        rows = r.rows()
        main = [row for row in rows if row.model == SMALL]
        assert len(main) >= 2 and all(row.format == "gemini" and row.status == 200 for row in rows)
        assert [row for row in rows if row.outcome == "fallback"] == []
        bodies = [json.loads(x.body) for x in agent.received if f"{SMALL}:streamGenerateContent" in x.path]
        # the CLI lists contextwarden mcp's tools, and its requests extend each other as one session
        names = [d["name"] for t in bodies[0]["tools"] for d in t.get("functionDeclarations", [])]
        assert RECALL in names
        assert bodies[1]["contents"][: len(bodies[0]["contents"])] == bodies[0]["contents"]
        sessions = {row.session_id for row in main}
        assert len(sessions) == 1
        # what the CLI echoed of the model turn (its own call id, the skip signature) is kept as it sent it
        echoed = bodies[1]["contents"][len(bodies[0]["contents"])]
        call = next(p for p in echoed["parts"] if "functionCall" in p)
        assert call["functionCall"]["name"] == "run_shell_command" and call["functionCall"].get("id")
        stored = [e for e in r.proxy.store.read(sessions.pop()) if isinstance(e, ToolResult)]
        assert len(stored) == 1 and "row 399: value 2793" in stored[0].output


def test_gemini_cli_completes_the_long_task_through_the_proxy(tmp_path: Path) -> None:
    """The task completes, no fall-back, no upstream error, the prefix breaks only at window events, signatures kept."""
    repo = make_repo(tmp_path / "repo")
    store = tmp_path / "s.db"
    commands = agentgemini.task_commands()
    play = agentgemini.GeminiTaskAgent(commands)
    agent = agentgemini.GeminiUpstream(play)
    with rig(str(store), upstream=agent) as r:
        home = agentgemini.home(tmp_path / "home", str(store))
        run = agentgemini.run(GEMINI, repo, home, r.url, "gemini-key-a", "fix the off-by-one in engine.py total()")
        r.proxy.settle()
        rows = r.rows()
        events = [e for s in r.proxy.store.list_sessions() for e in r.proxy.store.read(s.id) if e.is_window_event]
    assert [e.kind for e in events if not cause(e)] == []  # every window event names its cause
    assert run.returncode == 0, run.stderr[-2000:]
    assert '"status":"success"' in run.stdout, run.stdout[-2000:]
    state = repo_state(repo)
    assert state == {"fixed": True, "notes": True, "subject": COMMIT_SUBJECT, "commits": 2, "clean": True}
    main = agent.main_requests()
    bodies = [json.loads(x.body) for x in main]
    assert len(bodies) == len(commands) + 1
    assert [row.note for row in rows if row.outcome == "fallback"] == []
    assert [(row.outcome, row.status) for row in rows if row.status != 200 or row.outcome == "upstream_error"] == []
    # every prefix break falls while a window event was logged
    unexplained = [
        k for k in agentgemini.breaks(bodies) if not any(main[k - 1].at <= e.created_at <= main[k].at for e in events)
    ]
    assert unexplained == []
    # each signature issued comes back on the model's turn, as issued; none is made up
    for k, body in enumerate(bodies[1:], start=1):
        found = agentgemini.signatures(body)
        assert play.issued[k - 1] in found, k
        assert set(found) - set(play.issued) <= {agentgemini.SKIP_SIGNATURE}


UNTRUSTED = "untrusted_context"
"""The tag Gemini CLI wraps shell and MCP output in; it escapes the closing tag inside what it wraps."""


def _recall_as(store: Any, salt: str, key: str, rid: str) -> tuple[bool, str]:
    """``recall(rid)`` from ``contextwarden mcp`` bound to the credential ``key``, through the official MCP client."""
    server = build_server(store, credential=Credential(secret=key, salt=salt))

    async def go() -> tuple[bool, str]:
        async with Client(server) as client:
            result = await client.call_tool("recall", {"id": rid})
            return bool(result.is_error), "".join(getattr(c, "text", "") for c in result.content)

    return anyio.run(go)


def test_a_superseded_read_is_recalled_through_gemini_cli_and_not_by_another_credential(tmp_path: Path) -> None:
    """Reads under the CLI's own 40,000-character cut, read again until the proxy shows one superseded."""
    work = tmp_path / "work"
    work.mkdir()
    for n in range(3):
        rows = (f"file {n} row {i}: value {i * 7} & <b>{'x' * 40}</b>\n" for i in range(200))
        (work / f"part_{n}.txt").write_text("".join(rows))
    store = tmp_path / "s.db"
    seen: dict[str, str] = {}
    agent = agentgemini.GeminiUpstream(_reader(12, distinct=3, recalled=seen))
    with rig(str(store), upstream=agent) as r:
        home = agentgemini.home(tmp_path / "home", str(store))
        run = agentgemini.run(GEMINI, work, home, r.url, "gemini-key-a", "read the parts")
        rows = r.rows()
        bodies = [json.loads(x.body) for x in agent.main_requests()]
        assert run.returncode == 0, run.stderr[-2000:]
        assert [row.note for row in rows if row.outcome == "fallback"] == []
        assert seen, "no forwarded placeholder named the recall tool"
        # what the CLI first sent for the read the placeholder stood for
        original = next(
            resp["response"]["output"]
            for body in bodies
            for resp in _responses(body)
            if resp.get("id") == seen["shown_in"] and UNTRUSTED in str(resp["response"].get("output", ""))
        )
        assert 10_000 < len(original) < 40_000
        recall = _responses(bodies[-1])[-1]
        assert recall["name"] == RECALL
        # the recalled bytes, wrapped as the CLI wraps every MCP answer, with its closing tag escaped inside
        escaped = original.replace(f"</{UNTRUSTED}>", f"&lt;/{UNTRUSTED}&gt;")
        assert recall["response"]["output"] == f"<{UNTRUSTED}>\n{escaped}\n</{UNTRUSTED}>"
        salt = r.proxy.pipeline.salt
        assert _recall_as(r.proxy.store, salt, "gemini-key-a", seen["id"]) == (False, original)
        refused, text = _recall_as(r.proxy.store, salt, "gemini-key-b", seen["id"])
        assert refused and "no session of this credential holds" in text
