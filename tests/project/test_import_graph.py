"""The import graph of the package: no cycles, and the core imports none of the edges.

The graph is read from the source with ``ast``, so it sees every import a reader sees: module
level, inside functions (a lazy import is still a dependency, only a hidden one) and under
``TYPE_CHECKING`` (a type-only import still makes a reader climb back up). Importing ``a.b.c``
also depends on the packages ``a.b`` and ``a`` (Python runs their ``__init__`` first), except the
importer's own enclosing packages, which are already being imported when it runs.

The data path is checked as an order of steps, base -> log -> shared -> window -> plan -> assemble
-> wire: a module imports only modules of its own step or earlier ones. A module's step is the
folder it sits in (``log/``, ``window/``, ``plan/``, ``assemble/``, ``wire/``) or, for a module or
package directly under ``contextwarden/``, its entry in :data:`PLACE`. Every entry of :data:`PLACE`
names a module or package that exists, so an entry cannot outlive its module.
"""

from __future__ import annotations

import ast
from pathlib import Path

import _paths

PACKAGE = "contextwarden"
ROOT = _paths.ROOT / "src" / PACKAGE
EDGES = ("cli", "proxy", "integrations", "importers", "replay", "report", "__main__")
"""The edge packages of docs/architecture.md (and the ``python -m`` entry point, which runs the CLI)."""

STEPS = ("base", "log", "shared", "window", "plan", "assemble", "wire")
"""The data path in order; the last five are the step folders."""
FOLDERS = ("log", "window", "plan", "assemble", "wire")
OUTSIDE = "outside"
"""Around the data path: the edges, the public API and what no step may import."""
PLACE: dict[str, str] = {
    **dict.fromkeys(("errors", "models", "_families", "budget", "_dataclass_json", "_deprecated"), "base"),
    **dict.fromkeys(
        ("context", "tokens", "fragments", "tools", "instructions", "_catalog", "_files", "_trust", "pairing", "chat"),
        "shared",
    ),
    "_chat_compat": "shared",
    **dict.fromkeys(
        (*EDGES, "__init__", "governance", "providers", "mirror", "loop", "testing", "_extras"),
        OUTSIDE,
    ),
}
"""The step of each module or package directly under ``contextwarden/`` (step folders aside)."""


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for path in ROOT.rglob("*.py"):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _imported(module: str, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The package modules one import statement names (a name imported from a package may be a submodule)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        base = module.split(".")
        if MODULES[module].name != "__init__.py":
            base.pop()
        base = base[: len(base) - (node.level - 1)]
        name = ".".join([*base, node.module] if node.module else base)
    else:
        name = node.module or ""
    submodules = [f"{name}.{alias.name}" for alias in node.names if f"{name}.{alias.name}" in MODULES]
    # ``from pkg import sub`` needs only ``sub`` (and pkg's ancestors, added below), not pkg's
    # re-exports; ``from pkg import Name`` needs pkg itself.
    names_only_submodules = len(submodules) == len(node.names)
    return submodules if names_only_submodules else [name, *submodules]


def _with_packages(module: str, target: str) -> set[str]:
    """``target`` and its enclosing packages that ``module`` is not itself inside."""
    parts = target.split(".")
    out = {".".join(parts[:n]) for n in range(1, len(parts) + 1)}
    own = module.split(".")
    own_packages = {".".join(own[:n]) for n in range(1, len(own))}
    if MODULES.get(module, Path()).name == "__init__.py":
        own_packages.add(module)
    return {m for m in out if m in MODULES and m not in own_packages and m != module}


def _dependencies(module: str, tree: ast.Module) -> set[str]:
    """The package modules ``module``'s source imports, anywhere in it."""
    deps: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            for target in _imported(module, node):
                deps |= _with_packages(module, target)
    return deps


def import_graph() -> dict[str, set[str]]:
    """Each package module and the package modules it imports."""
    return {m: _dependencies(m, ast.parse(p.read_text(encoding="utf-8"))) for m, p in MODULES.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def step_of(module: str) -> str:
    """The step of the data path ``module`` belongs to (``outside`` for the edges and the public API)."""
    parts = module.split(".")[1:] or ["__init__"]
    if parts[0] in FOLDERS:
        return parts[0]
    if parts[0] not in PLACE:
        raise AssertionError(f"{module}: say which step it belongs to in PLACE (tests/project/test_import_graph.py)")
    return PLACE[parts[0]]


def _is_edge(module: str) -> bool:
    return module.split(".")[1:2] != [] and module.split(".")[1] in EDGES


LAZY_AND_TYPE_ONLY = """
from typing import TYPE_CHECKING
from . import context
if TYPE_CHECKING:
    from .models import ModelProfile
def f():
    from .tokens._exact import ExactCounter
"""


def test_the_graph_sees_lazy_and_type_only_imports() -> None:
    # errors.py and tokens/ stay where they are in either layout.
    deps = _dependencies(f"{PACKAGE}.errors", ast.parse(LAZY_AND_TYPE_ONLY))
    names = {f"{PACKAGE}.{m}" for m in ("context", "models", "tokens", "tokens._exact")}
    assert deps == names
    # A package's own submodules do not depend back on it; its __init__ depends on what it re-exports.
    graph = import_graph()
    assert f"{PACKAGE}.tokens._exact" in graph[f"{PACKAGE}.tokens"]
    assert f"{PACKAGE}.tokens" not in graph[f"{PACKAGE}.tokens._exact"]


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles() -> None:
    assert cycles(import_graph()) == []


def test_the_core_imports_no_edge() -> None:
    graph = import_graph()
    crossing = sorted(
        f"{module} -> {dep}" for module, deps in graph.items() if not _is_edge(module) for dep in deps if _is_edge(dep)
    )
    assert crossing == []


def climbs(graph: dict[str, set[str]]) -> list[str]:
    """Imports from a step of the data path into a later step, or out of the data path."""
    rank = {step: n for n, step in enumerate(STEPS)}
    return sorted(
        f"{module} ({step_of(module)}) -> {dep} ({step_of(dep)})"
        for module, deps in graph.items()
        if step_of(module) != OUTSIDE
        for dep in deps
        if step_of(dep) == OUTSIDE or rank[step_of(dep)] > rank[step_of(module)]
    )


def top_level() -> set[str]:
    """The modules and packages directly under ``contextwarden/`` (``__init__`` for the package itself)."""
    return {p.stem for p in ROOT.glob("*.py")} | {p.parent.name for p in ROOT.glob("*/__init__.py")}


def stale_places(place: dict[str, str], present: set[str]) -> list[str]:
    """Entries of ``place`` that name no module or package, or a step folder (its folder says its step)."""
    return sorted(name for name in place if name not in present or name in FOLDERS)


def test_the_stale_check_sees_a_stale_entry() -> None:
    assert stale_places({"errors": "base", "gone": "log", "window": "window"}, {"errors", "window"}) == [
        "gone",
        "window",
    ]


def test_every_place_names_a_module_that_exists() -> None:
    assert stale_places(PLACE, top_level()) == []
    assert [folder for folder in FOLDERS if not (ROOT / folder / "__init__.py").is_file()] == []


def test_the_step_check_sees_a_climb() -> None:
    events, tokens, cli = (f"{PACKAGE}.{m}" for m in ("log.events", "tokens", "cli"))
    assert climbs({tokens: {events}, events: set()}) == []
    assert climbs({events: {tokens}}) == [f"{events} (log) -> {tokens} (shared)"]
    assert climbs({tokens: {cli}}) == [f"{tokens} (shared) -> {cli} (outside)"]


def test_each_step_imports_only_itself_and_earlier_steps() -> None:
    assert climbs(import_graph()) == []


def _dynamic_imports(tree: ast.Module) -> list[int]:
    """Lines that import by a computed name (``importlib.import_module``, ``__import__``): the graph cannot see them."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if name in ("import_module", "__import__"):
                lines.append(node.lineno)
    return lines


def test_the_data_path_imports_nothing_by_a_computed_name() -> None:
    assert _dynamic_imports(ast.parse("import importlib\nimportlib.import_module('x')\n__import__('y')")) == [2, 3]
    hidden = sorted(
        f"{module}:{line}"
        for module, path in MODULES.items()
        if step_of(module) != OUTSIDE
        for line in _dynamic_imports(ast.parse(path.read_text(encoding="utf-8")))
    )
    assert hidden == []
