"""Running a real coding CLI non-interactively against a base URL (the proxy, or an upstream directly).

The binaries come from ``scripts/clis.sh``, which installs pinned versions from npm and prints
``CONTEXTWARDEN_CLAUDE_BIN=...`` and ``CONTEXTWARDEN_CODEX_BIN=...``. Each run gets a scratch home
(no user configuration leaks in), a made-up API key, and every telemetry, update and error-report
channel turned off: the machine may have no internet, and nothing may leave it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from .agentscript import prompt
from .agenttask import GIT_ENV

BIN_ENV = {"claude-code": "CONTEXTWARDEN_CLAUDE_BIN", "codex": "CONTEXTWARDEN_CODEX_BIN"}
"""The environment variable that names each client's binary."""

API_KEYS = {"claude-code": "sk-ant-conformance-key", "codex": "sk-conformance-key"}
"""The made-up credential each client sends."""

MODELS = {"claude-code": "claude-opus-5-5", "codex": "gpt-5.5"}
"""The model each client is told to use: the pinned versions' own defaults (the tools a client
declares depend on the model: Codex offers ``apply_patch`` to its newest models only)."""

BILL_AS = {"claude-opus-5-5": "claude-opus-4-5", "gpt-5.5": "gpt-5"}
"""The registered profile whose cache rules and prices the scripted upstream bills each model by."""

CODEX_KEY_ENV = "CONTEXTWARDEN_CONFORMANCE_OPENAI_KEY"
"""The variable Codex's model provider reads its key from (``env_key``)."""

MCP_KEY_ENV = "CONTEXTWARDEN_AGENT_KEY"
"""The variable the ``contextwarden mcp`` server a client starts reads the client's own key from
(``--credential-env``), so it serves only the sessions the proxy filed under that key."""


@dataclass(frozen=True, kw_only=True)
class McpServer:
    """A stdio MCP server a client starts: its command line and environment."""

    command: str
    args: tuple[str, ...]
    env: dict[str, str]


def recall_server(client: str, store: str) -> McpServer:
    """``contextwarden mcp`` over ``store`` (this interpreter, this ``contextwarden``), bound to ``client``'s key."""
    # the package this process imported, by absolute path: the client starts the server in the task's repository
    package_root = str(Path(__file__).resolve().parents[2])
    env = {MCP_KEY_ENV: API_KEYS[client], "PYTHONPATH": package_root}
    args = ("-m", "contextwarden", "mcp", "--store", store, "--credential-env", MCP_KEY_ENV)
    return McpServer(command=sys.executable, args=args, env=env)


@dataclass(frozen=True, kw_only=True)
class CliRun:
    """One finished run of a client."""

    returncode: int
    stdout: str
    stderr: str
    seconds: float


def binary(client: str) -> str | None:
    """The installed binary of ``client`` (``None``: not installed; ``scripts/clis.sh`` installs it)."""
    path = os.environ.get(BIN_ENV[client], "")
    return path if path and os.access(path, os.X_OK) else None


def version(path: str) -> str:
    """A binary's version, as the first word of its ``--version`` that starts with a digit."""
    out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60, check=False).stdout
    return next((w for w in out.split() if w[:1].isdigit()), "unknown")


def _base_env(home: Path) -> dict[str, str]:
    # the Python that runs the task's tests comes first: the one with pytest
    path = f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin"
    return {"PATH": path, "HOME": str(home), "LANG": "C.UTF-8", "TERM": "dumb", "NO_COLOR": "1", **GIT_ENV}


def claude_command(
    path: str, base_url: str, home: Path, model: str, mcp: McpServer | None = None
) -> tuple[list[str], dict[str, str]]:
    """Claude Code in print mode, streaming JSON, tools allowed without asking; ``mcp`` as its only MCP server."""
    env = {
        **_base_env(home),
        "IS_SANDBOX": "1",  # lets --dangerously-skip-permissions run as root
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": API_KEYS["claude-code"],
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "DISABLE_BUG_COMMAND": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "CLAUDE_CODE_DISABLE_TERMINAL_TITLE": "1",
    }
    args = [path, "-p", prompt(), "--output-format", "stream-json", "--verbose", "--dangerously-skip-permissions"]
    args += ["--model", model] if model else []
    if mcp is not None:
        server = {"type": "stdio", "command": mcp.command, "args": list(mcp.args), "env": mcp.env}
        config = home / "mcp.json"
        config.write_text(json.dumps({"mcpServers": {"contextwarden": server}}))
        args += ["--mcp-config", str(config), "--strict-mcp-config"]
        env["MCP_TIMEOUT"] = "120000"  # a busy machine starts Python slowly
        # Claude Code defers MCP tools behind its ToolSearch (their names only, in a message): the proxy
        # knows the recall tool only when the client's own tool list declares it
        env["ENABLE_TOOL_SEARCH"] = "false"
    return args, env


CODEX_CONFIG = """\
{model_line}model_provider = "conformance"
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false

[model_providers.conformance]
name = "conformance"
base_url = "{base_url}/v1"
wire_api = "responses"
env_key = "{key_env}"

[analytics]
enabled = false

[feedback]
enabled = false

[otel]
exporter = "none"
"""

CODEX_MCP = """
# required: Codex waits for the server before its first request, whose listing of deferred tools then
# names it (a server that starts later is listed later, and the proxy words a session from its start)
[mcp_servers.contextwarden]
command = {command}
args = {args}
env = {{ {env} }}
startup_timeout_sec = 120
tool_timeout_sec = 120
required = true
"""


def codex_command(
    path: str, base_url: str, home: Path, model: str, mcp: McpServer | None = None
) -> tuple[list[str], dict[str, str]]:
    """``codex exec`` with a model provider whose base URL is ``base_url``, no approvals, no sandbox; ``mcp`` added."""
    codex_home = home / "codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    model_line = f'model = "{model}"\n' if model else ""
    config = CODEX_CONFIG.format(model_line=model_line, base_url=base_url.rstrip("/"), key_env=CODEX_KEY_ENV)
    if mcp is not None:  # TOML strings and arrays are written as JSON ones (a subset)
        env_pairs = ", ".join(f"{k} = {json.dumps(v)}" for k, v in mcp.env.items())
        config += CODEX_MCP.format(command=json.dumps(mcp.command), args=json.dumps(list(mcp.args)), env=env_pairs)
    (codex_home / "config.toml").write_text(config)
    env = {**_base_env(home), "CODEX_HOME": str(codex_home), CODEX_KEY_ENV: API_KEYS["codex"]}
    args = [path, "exec", "--json", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", prompt()]
    return args, env


def run(
    client: str,
    path: str,
    *,
    base_url: str,
    repo: Path,
    home: Path,
    model: str | None = None,
    timeout: float = 600,
    mcp: McpServer | None = None,
) -> CliRun:
    """Run ``client`` (its binary at ``path``) on the task in ``repo``, talking to ``base_url``.

    ``model`` defaults to :data:`MODELS`; an empty string leaves the client's own default. ``mcp``:
    an MCP server the client is configured with (:func:`recall_server`).
    """
    home.mkdir(parents=True, exist_ok=True)
    command = claude_command if client == "claude-code" else codex_command
    args, env = command(path, base_url, home, MODELS[client] if model is None else model, mcp)
    started = time.monotonic()
    try:
        done = subprocess.run(
            args, cwd=repo, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else exc.stdout or ""
        return CliRun(returncode=-1, stdout=out, stderr=f"timed out after {timeout}s", seconds=timeout)
    return CliRun(
        returncode=done.returncode, stdout=done.stdout, stderr=done.stderr, seconds=time.monotonic() - started
    )
