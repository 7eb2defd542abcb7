"""An example coding agent whose context contextwarden manages.

The agent fixes a bug in a scratch directory with three tools (``read_file``, ``write_file``,
``run``). Every event goes to a SQLite session log; each model call sees a projection of it built
by a ``ContextManager``; long sessions compact through a ``WindowCompactor`` (an LLM summary when a
model is available, the structured summary otherwise) and overflows are recovered by the loop.

    python examples/coding_agent.py --scripted                   # no model needed
    CONTEXTWARDEN_LLM_URL=http://127.0.0.1:8765/v1 python examples/coding_agent.py

``--workdir`` keeps the scratch directory (and its ``sessions.db``) where you can look at it.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

from contextwarden.assemble.manager import ContextManager
from contextwarden.context import ToolDefinition
from contextwarden.log.events import Instruction, ToolCall, UserMessage
from contextwarden.log.store.sqlite import SQLiteStore
from contextwarden.loop import AgentTool, ToolOutput, run_agent_loop
from contextwarden.models import get_profile
from contextwarden.plan.compaction import LLMSummarizer, StructuredSummarizer, WindowCompactor
from contextwarden.plan.compaction._base import Summarizer
from contextwarden.providers import OpenAICompatProvider, Provider
from contextwarden.testing import ScriptedProvider, make_response

BUGGY = "def add(a, b):\n    return int(str(a) + str(b))\n"
FIXED = "def add(a, b):\n    return a + b\n"
TEST = (
    "from calc import add\n\n"
    "assert add(2, 3) == 5, f'add(2, 3) == {add(2, 3)!r}'\n"
    "assert add(-1, 1) == 0\n"
    "print('all tests passed')\n"
)
TASK = (
    "Fix add in calc.py: add(2, 3) returns 23 but should return 5. "
    "Do not rename add or change its parameters. Run `python test_calc.py` to check."
)
SYSTEM = (
    "You are a coding agent working in a scratch directory. Use read_file to read files, write_file to "
    "replace a file's content and run to run `python <file>`. Read before you write; test after you write."
)


def workspace_tools(root: Path) -> list[AgentTool]:
    """The three tools, confined to ``root``."""

    def inside(path: object) -> Path:
        target = (root / str(path)).resolve()
        if root.resolve() not in target.parents and target != root.resolve():
            raise PermissionError(f"{path} is outside the workspace")
        return target

    def read_file(args: dict[str, object]) -> ToolOutput:
        target = inside(args.get("path", ""))
        if not target.is_file():
            return ToolOutput(output=f"error: no file {args.get('path')}", is_error=True)
        return ToolOutput(output=target.read_text())

    def write_file(args: dict[str, object]) -> str:
        target = inside(args.get("path", ""))
        target.write_text(str(args.get("content", "")))
        return f"wrote {target.relative_to(root)} ({target.stat().st_size} bytes)"

    def run(args: dict[str, object]) -> ToolOutput:
        argv = shlex.split(str(args.get("command", "")))
        if len(argv) != 2 or argv[0] not in ("python", "python3"):
            return ToolOutput(output="error: only `python <file>` may be run here", is_error=True)
        done = subprocess.run([sys.executable, str(inside(argv[1]))], cwd=root, capture_output=True, text=True,
                              timeout=30, check=False)
        return ToolOutput(output=(done.stdout + done.stderr)[-4_000:], is_error=done.returncode != 0,
                          exit_code=done.returncode)

    def schema(**props: str) -> dict[str, object]:
        return {"type": "object", "properties": {k: {"type": "string", "description": v} for k, v in props.items()},
                "required": list(props)}

    return [
        AgentTool(definition=ToolDefinition(name="read_file", description="Read a file of the workspace.",
                                            parameters=schema(path="Path relative to the workspace.")),
                  run=read_file),
        AgentTool(definition=ToolDefinition(name="write_file", description="Replace a file's whole content.",
                                            parameters=schema(path="Path relative to the workspace.",
                                                              content="The new content.")),
                  run=write_file),
        AgentTool(definition=ToolDefinition(name="run", description="Run `python <file>` in the workspace.",
                                            parameters=schema(command="For example: python test_calc.py")),
                  run=run),
    ]


def scripted_provider() -> ScriptedProvider:
    """A provider that plays a competent agent: read, fix, test, report."""

    def step(n: int, name: str, **args: str) -> object:
        return make_response(tool_calls=[ToolCall(id=f"call_{n}", name=name, arguments=dict(args))])

    return ScriptedProvider([
        step(1, "read_file", path="calc.py"),
        step(2, "run", command="python test_calc.py"),
        step(3, "write_file", path="calc.py", content=FIXED),
        step(4, "run", command="python test_calc.py"),
        "Fixed: add concatenated the digits as strings; it now returns a + b. The tests pass.",
    ])


def main(argv: list[str] | None = None) -> int:
    """Run the example; returns 0 when the tests in the workspace pass afterwards."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scripted", action="store_true", help="use a scripted provider instead of a model")
    parser.add_argument("--workdir", type=Path, help="scratch directory to use (default: a temporary one)")
    parser.add_argument("--max-turns", type=int, default=12)
    parser.add_argument("--window", type=int, default=2_048, help="the local model's context window")
    args = parser.parse_args(argv)
    root = args.workdir or Path(tempfile.mkdtemp(prefix="cw-agent-"))
    root.mkdir(parents=True, exist_ok=True)
    (root / "calc.py").write_text(BUGGY)
    (root / "test_calc.py").write_text(TEST)
    url = os.environ.get("CONTEXTWARDEN_LLM_URL", "")
    provider: Provider
    summarizer: Summarizer
    if args.scripted or not url:
        if not args.scripted:
            print("CONTEXTWARDEN_LLM_URL is not set; running scripted (pass --scripted to silence this)")
        provider, model = scripted_provider(), get_profile("gpt-4o")
        summarizer = StructuredSummarizer()
    else:
        provider = OpenAICompatProvider(url, timeout=300, max_retries=1)
        model = dataclasses.replace(get_profile("gpt-4o"), name="local", context_window=args.window,
                                    max_output_tokens=max(args.window // 4, 128))
        summarizer = LLMSummarizer(provider, model=model)
    store = SQLiteStore(root / "sessions.db")
    session = store.create_session(metadata={"example": "coding_agent"}).id
    store.append(session, [Instruction(text=SYSTEM), UserMessage(text=TASK)], expected_last_seq=0)
    manager = ContextManager(store, compactor=WindowCompactor(store, summarizer=summarizer))
    result = run_agent_loop(provider, workspace_tools(root), manager, session, model=model, max_turns=args.max_turns)
    check = subprocess.run([sys.executable, "test_calc.py"], cwd=root, capture_output=True, text=True, check=False)
    print(f"workspace: {root}")
    print(f"turns: {result.turns}  stop: {result.stop_reason}  compactions: {len(result.compactions)}  "
          f"overflow recoveries: {result.overflow_recoveries}")
    print(f"tokens: {result.input_tokens} in, {result.output_tokens} out")
    print(f"agent: {result.text.strip()[:300]}")
    print(f"tests: {'pass' if check.returncode == 0 else 'FAIL'}: {(check.stdout + check.stderr).strip()[-200:]}")
    store.close()
    return 0 if check.returncode == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
