"""Every snippet of the README, docs/library.md, docs/proxy.md and docs/integrations.md, run as written.

Python blocks run (the integration ones with the framework's scripted model from
``contextwarden.integrations.testing`` as ``model`` and one real tool as ``tools``: the names each
snippet says it takes). Shell blocks: every ``contextwarden`` command line parses with the CLI as
it is (subcommands and options exist), every ``pip install`` names an extra ``pyproject.toml`` has,
and the ``curl`` lines run against a real proxy. The README's own Python blocks run in
``test_readme.py``.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from _paths import ROOT, TESTS
from contextwarden.log.store import SQLiteStore

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

DOCS = ["README.md", "docs/library.md", "docs/proxy.md", "docs/integrations.md"]
FRAMEWORKS = {
    "langchain": ("langchain.agents", "langchain_model"),
    "agents": ("agents", "agents_model"),
    "pydantic_ai": ("pydantic_ai", "pydantic_ai_model"),
    "google.adk": ("google.adk", "adk_model"),
}
"""A snippet's framework (by what it imports): the module it needs and its scripted model in the testing helpers."""


def _blocks(doc: str, lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", (ROOT / doc).read_text(encoding="utf-8"), flags=re.S)


PYTHON = [(doc, n, block) for doc in DOCS[1:] for n, block in enumerate(_blocks(doc, "python"))]


def _framework(block: str) -> str | None:
    for name in FRAMEWORKS:
        if re.search(rf"^from {re.escape(name)}[ .]", block, flags=re.M):
            return name
    return None


def _read_log(path: str) -> str:
    """Read a build log."""
    return "\n".join(f"{path} line {n}: ok" for n in range(200))


def _given(framework: str) -> dict[str, Any]:
    """What an integration snippet takes from the reader: ``model`` and ``tools``."""
    from contextwarden.integrations import testing

    maker = FRAMEWORKS[framework][1]
    model = getattr(testing, maker)([("_read_log", {"path": "build.log"})], final="Done.")
    tool: Any = _read_log
    if framework == "langchain":
        from langchain_core.tools import tool as lc_tool

        tool = lc_tool(_read_log)
    elif framework == "agents":
        from agents import function_tool, set_tracing_disabled

        set_tracing_disabled(True)
        tool = function_tool(_read_log)
    return {"model": model, "tools": [tool]}


@pytest.mark.parametrize(("doc", "n", "block"), PYTHON, ids=[f"{d}#{n}" for d, n, _ in PYTHON])
def test_python_snippet_runs_as_written(doc: str, n: int, block: str, tmp_path: Path) -> None:
    framework = _framework(block)
    if framework is not None:
        pytest.importorskip(FRAMEWORKS[framework][0], reason=f"the {framework} snippet needs its framework")
    # a process of its own, as a reader runs it (frameworks' event loops do not share one process well)
    code = (
        f"import sys\nsys.path.insert(0, {str(TESTS)!r})\n"
        "from test_docs_snippets import _given\n"
        f"namespace = _given({framework!r}) if {framework is not None} else {{}}\n"
        "namespace['__name__'] = 'doc_snippet'\n"
        f"exec(compile({block!r}, {f'{doc} (python block {n})'!r}, 'exec'), namespace)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    if framework in ("langchain", "agents", "pydantic_ai"):  # these snippets run the agent: it left a session
        store = SQLiteStore(tmp_path / "sessions.db")
        try:
            (info,) = store.list_sessions()
            kinds = [e.kind for e in store.read(info.id)]
        finally:
            store.close()
        assert kinds.count("tool_result") == 1 and "assistant" in kinds


def _commands(prefix: str) -> list[tuple[str, str]]:
    found = []
    for doc in DOCS:
        for block in _blocks(doc, "bash"):
            for line in block.replace("\\\n", " ").splitlines():
                line = line.split(" # ", 1)[0].split("  #", 1)[0].strip()
                if line.startswith(prefix):
                    found.append((doc, line))
    return found


CLI = _commands("contextwarden ")


@pytest.mark.parametrize(("doc", "line"), CLI, ids=[f"{d}: {line}" for d, line in CLI])
def test_every_command_line_parses(doc: str, line: str) -> None:
    args = shlex.split(line)[1:]
    # ``--help`` after the options: click still checks every subcommand and option name before it
    done = subprocess.run(
        [sys.executable, "-m", "contextwarden", *args, "--help"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, f"{doc}: {line}: {done.stderr}"


def test_every_pip_install_names_a_real_extra() -> None:
    extras = set(
        tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    )
    named = [m for doc in DOCS for m in re.findall(r"contextwarden\[([a-z,-]+)\]", (ROOT / doc).read_text("utf-8"))]
    assert named
    for group in named:
        assert set(group.split(",")) <= extras, group


def test_the_curl_lines_answer_from_a_real_proxy(tmp_path: Path) -> None:
    from _proxy import rig

    lines = _commands("curl ")
    assert len(lines) >= 3
    with rig(str(tmp_path / "s.db")) as r:
        r.anthropic("doc-key").messages.create(
            model="claude-sonnet-4-5", max_tokens=8, messages=[{"role": "user", "content": "hi"}]
        )
        env = {**os.environ, "ANTHROPIC_API_KEY": "doc-key"}
        for doc, line in lines:
            command = line.replace("http://127.0.0.1:8787", r.url)
            done = subprocess.run(["bash", "-c", f"{command} --fail -sS"], capture_output=True, text=True, env=env)
            assert done.returncode == 0, f"{doc}: {line}: {done.stderr}"
            if "/contextwarden/stats" in line and "session=ID" not in line:
                assert '"requests":1' in done.stdout.replace(" ", ""), done.stdout  # the key's own session


def test_every_toml_block_parses() -> None:
    blocks = [(doc, block) for doc in DOCS for block in _blocks(doc, "toml")]
    assert blocks  # the Codex provider of docs/proxy.md
    for doc, block in blocks:
        try:
            tomllib.loads(block)
        except tomllib.TOMLDecodeError as exc:
            pytest.fail(f"{doc}: a TOML block does not parse: {exc}")
