"""A missing optional dependency names the ``pip install`` that brings it, in every command and import."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from _paths import ROOT
from contextwarden._extras import MODULE_EXTRAS, extra_for

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

PYPROJECT = ROOT / "pyproject.toml"
IMPORT_NAMES = {"openai-agents": "agents", "pydantic-ai-slim": "pydantic_ai", "google-adk": "google.adk"}
"""Distributions whose import name is not their name with ``_`` for ``-``."""
BUNDLES = {"all", "dev", "integrations"}
"""Extras that only gather other extras (and the development tools)."""


def _module(requirement: str) -> str:
    name = requirement.split(";")[0].split("[")[0]
    for mark in "<>=!~ ":
        name = name.split(mark)[0]
    name = name.strip().lower()
    return IMPORT_NAMES.get(name, name.removesuffix("-sdk").replace("-", "_"))


def test_every_optional_dependency_has_an_extra_to_install_it() -> None:
    extras = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    modules = {name: {_module(r) for r in reqs} for name, reqs in extras.items() if name not in BUNDLES}
    for extra, names in modules.items():
        for module in names:
            named = extra_for(module)
            assert named is not None, f"{module} (extra {extra}) is not in MODULE_EXTRAS"
            assert module in modules[named], f"{module}: MODULE_EXTRAS says {named}, which does not install it"
    assert set(MODULE_EXTRAS) <= set().union(*modules.values())


def _run(blocked: list[str], *args: str) -> subprocess.CompletedProcess[str]:
    # the module is absent as far as this process can tell: importing it raises ModuleNotFoundError
    code = (
        "import sys\n"
        f"for m in {blocked!r}: sys.modules[m] = None\n"
        "from contextwarden.cli import main\n"
        f"main({list(args)!r})\n"
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(
    ("blocked", "args", "extra"),
    [
        (["prometheus_client"], ["proxy", "--port", "0"], "proxy"),
        (["uvicorn"], ["proxy", "--port", "0"], "proxy"),
        (["aiohttp"], ["proxy", "--port", "0"], "proxy"),
        (["starlette"], ["proxy", "stats"], "proxy"),
        (["psycopg"], ["sessions", "ls", "--store", "postgresql://nobody@127.0.0.1:1/none"], "postgres"),
        (["psycopg"], ["proxy", "stats", "--store", "postgresql://nobody@127.0.0.1:1/none"], "postgres"),
    ],
)
def test_a_command_without_its_extra_says_what_to_install(
    blocked: list[str], args: list[str], extra: str, tmp_path: Path
) -> None:
    if "--store" not in args:
        args = [*args, "--store", str(tmp_path / "s.db")]
    done = _run(blocked, *args)
    assert done.returncode == 1
    (line,) = done.stderr.strip().splitlines()
    assert f"pip install 'contextwarden[{extra}]'" in line, line
    assert "unexpected" not in line and "a bug" not in line


@pytest.mark.parametrize(
    ("blocked", "module", "extra"),
    [
        (["prometheus_client"], "contextwarden.proxy", "proxy"),
        (["langchain"], "contextwarden.integrations.langchain", "langchain"),
        (["agents"], "contextwarden.integrations.openai_agents", "openai-agents"),
        (["pydantic_ai"], "contextwarden.integrations.pydantic_ai", "pydantic-ai"),
        (["google.adk"], "contextwarden.integrations.google_adk", "google-adk"),
    ],
)
def test_importing_without_the_extra_names_it(blocked: list[str], module: str, extra: str) -> None:
    code = f"import sys\nfor m in {blocked!r}: sys.modules[m] = None\nimport {module}\n"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert f"pip install 'contextwarden[{extra}]'" in done.stderr.strip().splitlines()[-1]
