"""Gemini CLI, headless, through the proxy to the scripted upstream, with ``contextwarden mcp`` configured.

The scripted agent reads a file and finishes; the CLI must complete with no fall-back, its requests
must form one session, and its tool list must hold the MCP server's tools. Skips when Gemini CLI is
not installed (``scripts/clis.sh`` sets ``CONTEXTWARDEN_GEMINI_BIN``).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from starlette.requests import Request
from starlette.responses import Response

from _proxy import rig
from contextwarden.log.events import ToolResult
from contextwarden.proxy._validate import signature
from contextwarden.proxy.agenttask import BUG_LINE, COMMIT_SUBJECT, FIXED_LINE, GIT_ENV, NOTES, make_repo, repo_state
from contextwarden.proxy.conformance import cause
from contextwarden.proxy.scripted import Reply, ScriptedUpstream

GEMINI = (
    os.environ.get("CONTEXTWARDEN_GEMINI_BIN")
    or "/root/.cache/cw-clis/@google+gemini-cli@0.61.0/node_modules/.bin/gemini"
)
SMALL = "gemini-2.5-flash"
"""The model the CLI runs; the test gives the proxy's profile of it a 60K window, so a short session
reaches the planner's trigger (a name the CLI does not know makes it compress its own history early)."""
RECALL = "mcp_contextwarden_recall"
"""The name Gemini CLI lists ``contextwarden mcp``'s recall under."""

SIDE_ANSWER = json.dumps({"reasoning": "the task is progressing", "confidence": 0.0})

pytestmark = pytest.mark.skipif(not os.access(GEMINI, os.X_OK), reason=f"Gemini CLI is not installed at {GEMINI}")


class _Agent(ScriptedUpstream):
    """The scripted upstream, answering each request with what ``script`` makes of the body it got."""

    def __init__(self, script: Callable[[dict[str, Any]], Reply]) -> None:
        super().__init__()
        self.script = script

    async def _answer(self, request: Request, fmt: str, *, model: str = "", stream: str | None = None) -> Response:
        # Gemini CLI's side calls (routing, loop checks) ask another model for JSON: a calm answer
        side = model != SMALL
        self.push(Reply(text=SIDE_ANSWER) if side else self.script(json.loads(await request.body())))
        return await super()._answer(request, fmt, model=model, stream=stream)


def _responses(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [p["functionResponse"] for c in body["contents"] for p in c["parts"] if "functionResponse" in p]


def _reader(files: int) -> Callable[[dict[str, Any]], Reply]:
    """Cat one file a turn until a placeholder names the recall tool, recall that id, then stop."""

    def script(body: dict[str, Any]) -> Reply:
        done = _responses(body)
        if done and done[-1]["name"] == RECALL:
            return Reply(text="recalled")
        for response in done:
            found = re.search(rf'{RECALL}\(id="([0-9a-f]{{32}})"\)', json.dumps(response))
            if found:
                return Reply(text="", tool_calls=(("r", RECALL, {"id": found[1]}),))
        n = len(done)
        if n >= files:
            return Reply(text="no placeholder came")
        return Reply(text="", tool_calls=((f"c{n}", "run_shell_command", {"command": f"cat part_{n}.txt"}),))

    return script


def _gemini(workdir: Path, home: Path, url: str, key: str, prompt: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "HOME": str(home),
        "GOOGLE_GEMINI_BASE_URL": url,
        "GEMINI_API_KEY": key,
        "GEMINI_CLI_TRUST_WORKSPACE": "true",
        "NO_COLOR": "1",
        "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src"),
        **GIT_ENV,
    }
    command = [GEMINI, "-p", prompt, "--approval-mode=yolo", "-o", "stream-json", "-m", SMALL]
    return subprocess.run(command, cwd=workdir, env=env, capture_output=True, text=True, timeout=300)


def _home(tmp_path: Path, store: Path) -> Path:
    home = tmp_path / "home"
    (home / ".gemini").mkdir(parents=True)
    server = {"command": sys.executable, "args": ["-m", "contextwarden", "mcp", "--store", str(store)]}
    settings = {
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "mcpServers": {"contextwarden": server},
    }
    (home / ".gemini" / "settings.json").write_text(json.dumps(settings))
    return home


def test_gemini_cli_completes_a_task_through_the_proxy_with_the_mcp_tools_listed(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "part_0.txt").write_text("".join(f"row {i}: value {i * 7}\n" for i in range(400)))
    store = tmp_path / "s.db"
    agent = _Agent(_reader(1))
    with rig(str(store), upstream=agent) as r:
        run = _gemini(work, _home(tmp_path, store), r.url, "gemini-key-a", "read part_0.txt")
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


# ---------------------------------------------------------------------------- the long task

STEP = re.compile(r"# cw-step-(\d+)$")
SKIP_SIGNATURE = "skip_thought_signature_validator"
"""What Gemini CLI writes where the model sent no signature."""


def _task_commands(python: str) -> list[str]:
    """The conformance task in Gemini CLI's shell tool: large reads, long outputs, the fix, notes, the commit."""
    commands = [
        "git status --short && ls -la",
        "cat engine.py",
        f"{python} -m pytest -q 2>&1 | tail -n 5",
        "cat data/log.txt",
        "seq 1 5000 | sed 's/^/row /'",
        "grep -n '^def ' engine.py",
        *(f"cat pkg/util_{i}.py" for i in range(4)),
        "cat engine.py",
        "head -c 20000 data/log.txt",
        f"sed -i 's/^{BUG_LINE}$/{FIXED_LINE}/' engine.py && tail -n 3 engine.py",
        f"printf '%s' {shlex.quote(NOTES)} > NOTES.md",
        f"{python} -m pytest -q 2>&1 | tail -n 3",
        f"git add -A && git commit -q -m '{COMMIT_SUBJECT}' && git log --oneline -1",
        f"git status --short && {python} -m pytest -q 2>&1 | tail -n 1",
    ]
    return [f"{c}  # cw-step-{n:02d}" for n, c in enumerate(commands)]


class _TaskAgent:
    """Plays the task: the step after the newest one the conversation's calls hold, each with a signed thought."""

    def __init__(self, commands: list[str]) -> None:
        self.commands = commands
        self.issued: list[str] = []

    def __call__(self, body: dict[str, Any]) -> Reply:
        steps = [
            int(found[1])
            for content in body["contents"]
            for part in content["parts"]
            if (found := STEP.search(str(part.get("functionCall", {}).get("args", {}).get("command", ""))))
        ]
        step = max(steps) + 1 if steps else 0
        text = f"Step {step}: the plan continues from the last result."
        self.issued.append(signature(text))
        thinking = (text, self.issued[-1])
        if step >= len(self.commands):
            return Reply(text="Done: fixed total(), the tests pass, and the fix is committed.", thinking=thinking)
        call = (f"s{step}", "run_shell_command", {"command": self.commands[step], "description": "Work"})
        return Reply(text="", tool_calls=(call,), thinking=thinking, output_tokens=60)


def _signatures(body: dict[str, Any]) -> list[str]:
    return [p["thoughtSignature"] for c in body["contents"] for p in c["parts"] if "thoughtSignature" in p]


def _breaks(bodies: list[dict[str, Any]]) -> list[int]:
    """The requests that do not extend the one before (tools, system instruction, then contents)."""
    out = []
    for k in range(1, len(bodies)):
        before, after = bodies[k - 1], bodies[k]
        same_head = all(before.get(key) == after.get(key) for key in ("tools", "systemInstruction"))
        if not same_head or after["contents"][: len(before["contents"])] != before["contents"]:
            out.append(k)
    return out


def test_gemini_cli_completes_the_long_task_through_the_proxy(tmp_path: Path) -> None:
    """The task completes, no fall-back, no upstream error, the prefix breaks only at window events, signatures kept."""
    repo = make_repo(tmp_path / "repo")
    store = tmp_path / "s.db"
    commands = _task_commands(sys.executable)
    play = _TaskAgent(commands)
    agent = _Agent(play)
    with rig(str(store), upstream=agent) as r:
        run = _gemini(repo, _home(tmp_path, store), r.url, "gemini-key-a", "fix the off-by-one in engine.py total()")
        r.proxy.settle()
        rows = r.rows()
        events = [e for s in r.proxy.store.list_sessions() for e in r.proxy.store.read(s.id) if e.is_window_event]
    assert [e.kind for e in events if not cause(e)] == []  # every window event names its cause
    assert run.returncode == 0, run.stderr[-2000:]
    assert '"status":"success"' in run.stdout, run.stdout[-2000:]
    state = repo_state(repo)
    assert state == {"fixed": True, "notes": True, "subject": COMMIT_SUBJECT, "commits": 2, "clean": True}
    main = [x for x in agent.received if f"{SMALL}:streamGenerateContent" in x.path]
    bodies = [json.loads(x.body) for x in main]
    assert len(bodies) == len(commands) + 1
    assert [row.note for row in rows if row.outcome == "fallback"] == []
    assert [(row.outcome, row.status) for row in rows if row.status != 200 or row.outcome == "upstream_error"] == []
    # every prefix break falls while a window event was logged
    unexplained = [k for k in _breaks(bodies) if not any(main[k - 1].at <= e.created_at <= main[k].at for e in events)]
    assert unexplained == []
    # each signature issued comes back on the model's turn, as issued; none is made up
    for k, body in enumerate(bodies[1:], start=1):
        found = _signatures(body)
        assert play.issued[k - 1] in found, k
        assert set(found) - set(play.issued) <= {SKIP_SIGNATURE}
