"""Gemini CLI, headless, on the conformance task: its set-up, a scripted model for it, and the checks.

Gemini CLI (``scripts/clis.sh`` installs it and exports ``CONTEXTWARDEN_GEMINI_BIN``) runs
``gemini -p ... --approval-mode=yolo`` against a base URL with a made-up key, a scratch HOME whose
``settings.json`` selects API-key auth and turns usage statistics and telemetry off (then it
contacts nothing else), optionally with ``contextwarden mcp`` as an MCP server. :class:`GeminiUpstream`
plays the model from a function of each request body, and answers the CLI's side calls (routing and
loop checks, to other models) with a calm JSON. :func:`task_commands` is the task of
:mod:`.agenttask` in the CLI's shell tool and :class:`GeminiTaskAgent` plays it, signing every turn.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from ._reply import Reply
from ._validate import signature
from .agenttask import BUG_LINE, COMMIT_SUBJECT, FIXED_LINE, GIT_ENV, NOTES
from .scripted import ScriptedUpstream

MODEL = "gemini-2.5-flash"
"""The model the CLI is told to run (a name it does not know makes it compress its own history early)."""

SIDE_ANSWER = json.dumps({"reasoning": "the task is progressing", "confidence": 0.0})

SKIP_SIGNATURE = "skip_thought_signature_validator"
"""What Gemini CLI writes where the model sent no signature."""

_STEP = re.compile(r"# cw-step-(\d+)$")

RECALL = "mcp_contextwarden_recall"
"""The name Gemini CLI lists ``contextwarden mcp``'s recall tool under."""

RECALL_LINES = 300
"""Lines one recall asks for: a piece stays well under the 40,000 characters past which Gemini CLI cuts
a tool's answer itself (it keeps the first 8,000 and the last 32,000)."""

UNTRUSTED = "untrusted_context"
"""The tag Gemini CLI wraps shell and MCP output in; inside what it wraps, it escapes the closing tag."""

_PLACEHOLDER = re.compile(rf'{RECALL}\(id="([0-9a-f]{{32}})"\)')


def binary() -> str | None:
    """The installed Gemini CLI (``None``: not installed; ``scripts/clis.sh`` installs it)."""
    path = os.environ.get("CONTEXTWARDEN_GEMINI_BIN", "")
    return path if path and os.access(path, os.X_OK) else None


class GeminiUpstream(ScriptedUpstream):
    """The scripted upstream, answering each main request with what ``script`` makes of the body it got."""

    def __init__(self, script: Callable[[dict[str, Any]], Reply]) -> None:
        """Answer the main model's requests with ``script(body)``, the side calls with :data:`SIDE_ANSWER`."""
        super().__init__()
        self.script = script

    async def _answer(self, request: Request, fmt: str, *, model: str = "", stream: str | None = None) -> Response:
        side = model != MODEL
        self.push(Reply(text=SIDE_ANSWER) if side else self.script(json.loads(await request.body())))
        return await super()._answer(request, fmt, model=model, stream=stream)

    def main_requests(self) -> list[Any]:
        """The main conversation's requests as received (the side calls left out)."""
        return [x for x in self.received if f"{MODEL}:streamGenerateContent" in x.path]


def home(path: Path, store: str | None = None) -> Path:
    """A scratch HOME for the CLI; ``store``: configure ``contextwarden mcp`` over it."""
    (path / ".gemini").mkdir(parents=True, exist_ok=True)
    settings: dict[str, Any] = {
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
    }
    if store is not None:
        server = {"command": sys.executable, "args": ["-m", "contextwarden", "mcp", "--store", store]}
        settings["mcpServers"] = {"contextwarden": server}
    (path / ".gemini" / "settings.json").write_text(json.dumps(settings))
    return path


def run(
    path: str, workdir: Path, home_dir: Path, url: str, key: str, prompt: str, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """Gemini CLI at ``path``, headless in ``workdir``, talking to ``url`` with ``key``."""
    env = {
        **os.environ,
        "HOME": str(home_dir),
        "GOOGLE_GEMINI_BASE_URL": url,
        "GEMINI_API_KEY": key,
        "GEMINI_CLI_TRUST_WORKSPACE": "true",  # else --approval-mode=yolo is turned back to default
        "NO_COLOR": "1",
        "PYTHONPATH": str(Path(__file__).resolve().parents[2]),  # the MCP server runs this package
        **GIT_ENV,
    }
    command = [path, "-p", prompt, "--approval-mode=yolo", "-o", "stream-json", "-m", MODEL]
    return subprocess.run(command, cwd=workdir, env=env, capture_output=True, text=True, timeout=timeout)


def task_commands(python: str = sys.executable) -> list[str]:
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


class GeminiTaskAgent:
    """Plays the task: the step after the newest one the conversation's calls hold, each with a signed thought.

    With ``recall``, the first result the proxy shows as a placeholder naming the recall tool is
    recalled through the CLI, :data:`RECALL_LINES` lines at a time, before the task goes on.
    """

    def __init__(self, commands: list[str], *, recall: bool = False) -> None:
        """Play ``commands`` (:func:`task_commands`), then finish."""
        self.commands = commands
        self.recall = recall
        self.issued: list[str] = []
        """The signature issued with each answer, in order."""
        self.recall_of = ""
        """The CLI's id of the result whose placeholder named the recall call."""
        self.recall_calls: list[dict[str, Any]] = []
        """The arguments of each recall call made, in order."""
        self.pieces: list[str] = []
        """Each recall's answer as the CLI sent it back (its ``response.output``)."""

    def __call__(self, body: dict[str, Any]) -> Reply:
        """The next move for one main request."""
        steps = [
            int(found[1])
            for content in body["contents"]
            for part in content["parts"]
            if (found := _STEP.search(str(part.get("functionCall", {}).get("args", {}).get("command", ""))))
        ]
        step = max(steps) + 1 if steps else 0
        text = f"Step {step}: the plan continues from the last result."
        self.issued.append(signature(text))
        thinking = (text, self.issued[-1])
        move = self._recall_move(body) if self.recall else None
        if move is not None:
            call = (f"r{len(self.recall_calls)}", RECALL, move)
            return Reply(text="", tool_calls=(call,), thinking=thinking, output_tokens=30)
        if step >= len(self.commands):
            return Reply(text="Done: fixed total(), the tests pass, and the fix is committed.", thinking=thinking)
        call = (f"s{step}", "run_shell_command", {"command": self.commands[step], "description": "Work"})
        return Reply(text="", tool_calls=(call,), thinking=thinking, output_tokens=60)

    def _recall_move(self, body: Mapping[str, Any]) -> dict[str, Any] | None:
        """The next recall's arguments: the first placeholder's lines, then the next lines (``None``: none)."""
        responses = function_responses(body)
        if not self.recall_calls:
            for response in responses:
                found = _PLACEHOLDER.search(str(response.get("response", {}).get("output", "")))
                if found:
                    self.recall_of = str(response.get("id", ""))
                    self.recall_calls.append({"id": found[1], "start_line": 1, "end_line": RECALL_LINES})
                    return self.recall_calls[-1]
            return None
        answers = [r for r in responses if r.get("name") == RECALL]
        if len(answers) != len(self.recall_calls) or len(self.pieces) == len(answers):
            return None  # not the answer to the last call: the task goes on
        output = answers[-1].get("response", {}).get("output")
        if not isinstance(output, str) or _inner(output).count("\n") < RECALL_LINES:
            self.pieces.append(output if isinstance(output, str) else "")
            return None  # the last piece (or a refusal)
        self.pieces.append(output)
        last = self.recall_calls[-1]
        start = int(last["end_line"]) + 1
        self.recall_calls.append({"id": last["id"], "start_line": start, "end_line": start + RECALL_LINES - 1})
        return self.recall_calls[-1]

    def recalled_as_sent(self) -> str:
        """The recall pieces as the CLI sent them, unwrapped and put together (its closing tag left escaped)."""
        return "".join(_inner(piece) for piece in self.pieces)


def as_wrapped(text: str) -> str:
    """``text`` as it reads inside Gemini CLI's wrapping (the closing tag escaped), to compare with a recall."""
    return text.replace(f"</{UNTRUSTED}>", f"&lt;/{UNTRUSTED}&gt;")


def _inner(output: str) -> str:
    """What Gemini CLI wrapped in ``<untrusted_context>`` (an answer without the wrapping as it is)."""
    head, tail = f"<{UNTRUSTED}>\n", f"\n</{UNTRUSTED}>"
    return output[len(head) : -len(tail)] if output.startswith(head) and output.endswith(tail) else output


def function_responses(body: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """A request's ``functionResponse`` parts, in order."""
    return [
        p["functionResponse"]
        for c in body.get("contents") or []
        for p in c.get("parts") or []
        if "functionResponse" in p
    ]


def signatures(body: Mapping[str, Any]) -> list[str]:
    """Every ``thoughtSignature`` of a request's contents, in order."""
    return [p["thoughtSignature"] for c in body["contents"] for p in c["parts"] if "thoughtSignature" in p]


def breaks(bodies: list[dict[str, Any]]) -> list[int]:
    """The requests that do not extend the one before (tools, system instruction, then contents)."""
    out = []
    for k in range(1, len(bodies)):
        before, after = bodies[k - 1], bodies[k]
        same_head = all(before.get(key) == after.get(key) for key in ("tools", "systemInstruction"))
        if not same_head or after["contents"][: len(before["contents"])] != before["contents"]:
            out.append(k)
    return out
