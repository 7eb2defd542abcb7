"""Recognizing test runs in a command's argument vector, and keying them by target.

A key is ``<runner>:<target>`` (``pytest:tests/test_a.py``, ``go:./...``, ``cargo:all``) so that
a newer run of the same tests can supersede an older one, while a ``cargo test`` never
supersedes a ``pytest`` run of the same repository.
"""

from __future__ import annotations

import posixpath
import re

from ._paths import norm_path

# Options whose value is the next word (so the value is not taken for a test target).
# fmt: off
_PYTEST_VALUE_OPTS = frozenset({
    "-k", "-m", "-p", "-n", "-c", "-o", "-W", "-r", "--maxfail", "--tb", "--rootdir", "--junitxml", "--deselect",
    "--ignore", "--ignore-glob", "--log-level", "--durations", "--cov", "--cov-report", "--basetemp", "--confcutdir",
    "--import-mode", "--color", "--timeout", "--dist", "--numprocesses", "--capture", "--count",
})
# fmt: on
_PYTHONS = re.compile(r"^(?:python|python3|python3\.\d+|py|pypy3?)$")


def _paths(targets: list[str], cwd: str) -> list[str]:
    out: list[str] = []
    for target in targets:
        path, sep, node = target.partition("::")
        if "/" in path or path.endswith(".py") or path in (".", ".."):
            path = norm_path(path, cwd)
        out.append(f"{path}{sep}{node}")
    return out


_DJANGO_VALUE_OPTS = frozenset({"-v", "--verbosity", "--settings", "--parallel", "-k", "--tag", "--exclude-tag"})


def _pytest(runner: str, args: tuple[str, ...], cwd: str) -> tuple[str, ...]:
    value_opts = _DJANGO_VALUE_OPTS if runner in ("django", "runtests", "run_tests", "runtest") else _PYTEST_VALUE_OPTS
    targets: list[str] = []
    selector = ""
    skip_next = ""
    for arg in args:
        if skip_next:
            if skip_next == "-k":
                selector = f" -k {arg}"
            skip_next = ""
        elif arg in value_opts:
            skip_next = arg
        elif arg.startswith("-k") and len(arg) > 2:
            selector = f" -k {arg[2:]}"
        elif not arg.startswith("-"):
            targets.append(arg)
    keys = _paths(targets, cwd) or ["all"]
    return tuple(sorted(f"{runner}:{k}{selector}" for k in keys))


def _after_double_dash(args: tuple[str, ...]) -> list[str]:
    return [a for a in args[args.index("--") + 1 :] if not a.startswith("-")] if "--" in args else []


def _js(name: str, args: tuple[str, ...], cwd: str) -> tuple[str, ...] | None:
    if name in ("npm", "yarn", "pnpm", "bun"):
        script = [a for a in args if not a.startswith("-")][:2]
        if script[:1] == ["test"] or script[:1] in (["t"], ["tst"]) or script == ["run", "test"]:
            keys = _paths(_after_double_dash(args), cwd)
            return tuple(sorted(f"{name}:{k}" for k in keys)) or (f"{name}:all",)
        return None
    if name in ("jest", "vitest", "mocha", "ava", "karma", "playwright"):
        rest = [a for a in args if not a.startswith("-") and a not in ("run", "test", "start")]
        return tuple(sorted(f"{name}:{k}" for k in _paths(rest, cwd))) or (f"{name}:all",)
    return None


def _compiled(name: str, args: tuple[str, ...], cwd: str) -> tuple[str, ...] | None:
    if (name == "cargo" and args[:1] in (("test",), ("t",))) or (name == "cargo" and args[:2] == ("nextest", "run")):
        rest = args[2:] if args[0] == "nextest" else args[1:]
        head = rest[: rest.index("--")] if "--" in rest else rest
        names = [a for a in _skip_values(head, {"-p", "--package", "--features", "-j", "--target", "--test"})]
        return tuple(sorted(f"cargo:{n}" for n in names)) or ("cargo:all",)
    if name == "go" and args[:1] == ("test",):
        pkgs = _skip_values(args[1:], {"-run", "-timeout", "-count", "-tags", "-bench", "-p", "-parallel"})
        run = next((args[i + 1] for i, a in enumerate(args[:-1]) if a == "-run"), "")
        suffix = f" -run {run}" if run else ""
        return tuple(sorted(f"go:{p}{suffix}" for p in pkgs)) or (f"go:.{suffix}",)
    if name in ("mvn", "gradle", "gradlew", "./gradlew") and any(a in ("test", "check", "verify") for a in args):
        return (f"{posixpath.basename(name)}:all",)
    if name in ("dotnet", "swift", "mix", "rake", "bazel", "zig", "deno") and args[:1] in (("test",),):
        targets = [a for a in args[1:] if not a.startswith("-")]
        return tuple(sorted(f"{name}:{t}" for t in targets)) or (f"{name}:all",)
    return None


def _skip_values(args: tuple[str, ...], with_value: set[str]) -> list[str]:
    out: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg in with_value:
            skip = True
        elif not arg.startswith("-"):
            out.append(arg)
    return out


def _python(args: tuple[str, ...], cwd: str) -> tuple[str, ...] | None:
    if len(args) >= 2 and args[0] == "-m" and args[1] in ("pytest", "py.test", "unittest", "nose2", "tox", "nox"):
        module = args[1].replace("py.test", "pytest")
        if module in ("tox", "nox"):
            return _env_runner(module, args[2:])
        return _pytest(module, args[2:], cwd)
    script = next((a for a in args if not a.startswith("-")), "")
    base = posixpath.basename(script)
    if base == "manage.py" and "test" in args:
        return _pytest("django", args[args.index("test") + 1 :], cwd)
    if base in ("runtests.py", "run_tests.py", "runtest.py"):
        return _pytest(base.removesuffix(".py"), args[args.index(script) + 1 :], cwd)
    return None


def _env_runner(name: str, args: tuple[str, ...]) -> tuple[str, ...]:
    env = next((args[i + 1] for i, a in enumerate(args[:-1]) if a in ("-e", "--env", "-s", "--session")), "")
    return (f"{name}:{env or 'all'}",)


def test_targets(name: str, args: tuple[str, ...], cwd: str) -> tuple[str, ...] | None:
    """The test keys a command runs, or None when it runs no tests."""
    if name in ("pytest", "py.test", "pytest-3"):
        return _pytest("pytest", args, cwd)
    if _PYTHONS.match(name):
        return _python(args, cwd)
    if name in ("tox", "nox"):
        return _env_runner(name, args)
    if name == "make":
        goals = [a for a in args if not a.startswith("-") and "=" not in a]
        tests = [g for g in goals if g.startswith("test") or g in ("check", "tests")]
        return tuple(f"make:{g}" for g in tests) if tests else None
    if name in ("runtests.py", "run_tests.py"):
        return _pytest(name.removesuffix(".py"), args, cwd)
    if name in ("rspec", "phpunit", "ctest"):
        targets = [a for a in args if not a.startswith("-")]
        return tuple(sorted(f"{name}:{t}" for t in targets)) or (f"{name}:all",)
    if name == "bundle" and args[:2] == ("exec", "rspec"):
        return test_targets("rspec", args[2:], cwd)
    return _js(name, args, cwd) or _compiled(name, args, cwd)
