"""Per-command readers for :mod:`._shell`.

Which files ``head``, ``tail``, ``sed``, ``git`` and SWE-agent's viewer and editor commands
read or write, worked out from their arguments alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ._paths import norm_path

_PATCH_FILE = re.compile(
    r"^(?:\*\*\* (?:Update|Add|Delete) File: (?P<codex>.+?)|\*\*\* Move to: (?P<move>.+?)"
    r"|\+\+\+ (?:b/)?(?P<plus>[^\t\n]+?)|--- (?:a/)?(?P<minus>[^\t\n]+?))[ \t]*$",
    re.MULTILINE,
)


@dataclass(frozen=True)
class Touch:
    """One resource a command touches: ``kind`` file/test/search, ``access`` read/write/run."""

    kind: str
    key: str
    access: str
    part: str = ""


def patch_files(text: str) -> list[str]:
    """Files named by a unified diff or a Codex ``*** Begin Patch`` block, in order."""
    files: list[str] = []
    for match in _PATCH_FILE.finditer(text):
        name = next((g for g in match.groups() if g), "")
        if name and name != "/dev/null" and name not in files:
            files.append(name)
    return files


def positionals(args: tuple[str, ...], with_value: frozenset[str] = frozenset()) -> list[str]:
    out: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg in with_value:
            skip = True
        elif not arg.startswith("-") or arg == "-":
            out.append(arg)
    return out


def read_tail_head(name: str, args: tuple[str, ...], cwd: str) -> list[Touch]:
    count, files, skip = 10, [], False
    from_line = False
    for i, arg in enumerate(args):
        if skip:
            skip = False
            continue
        value = ""
        if arg in ("-n", "--lines") and i + 1 < len(args):
            value, skip = args[i + 1], True
        elif arg.startswith("--lines="):
            value = arg.split("=", 1)[1]
        elif re.fullmatch(r"-n[+-]?\d+", arg) or re.fullmatch(r"-\d+", arg):
            value = arg[2:] if arg.startswith("-n") else arg[1:]
        elif arg in ("-c", "--bytes"):
            skip = True
        elif not arg.startswith("-"):
            files.append(arg)
        if value:
            from_line = value.startswith("+")
            digits = value.lstrip("+-")
            count = int(digits) if digits.isdigit() else count
    tail_part = f"from line {count}" if from_line else f"last {count} lines"
    part = f"lines 1-{count}" if name == "head" else tail_part
    return [Touch("file", norm_path(f, cwd), "read", part) for f in files]


def sed_touches(args: tuple[str, ...], cwd: str) -> list[Touch]:
    in_place = any(a.startswith("-i") or a.startswith("--in-place") for a in args)
    quiet = any(a in ("-n", "--quiet", "--silent") or re.fullmatch(r"-[a-zA-Z]*n[a-zA-Z]*", a) for a in args)
    has_script_opt = any(a in ("-e", "-f") or a.startswith("--expression") for a in args)
    positional = positionals(args, frozenset({"-e", "-f", "--expression", "--file"}))
    script = "" if has_script_opt else (positional[0] if positional else "")
    files = positional if has_script_opt else positional[1:]
    if not script:
        script = next((args[i + 1] for i, a in enumerate(args[:-1]) if a == "-e"), "")
    if in_place:
        return [Touch("file", norm_path(f, cwd), "write") for f in files]
    part = ""
    if quiet:
        m = re.fullmatch(r"\s*(\d+)(?:\s*,\s*(\d+|\$))?\s*p\s*;?\s*", script)
        if m:
            end = m.group(2) or m.group(1)
            part = f"from line {m.group(1)}" if end == "$" else f"lines {m.group(1)}-{end}"
        else:
            part = "selected lines"
    return [Touch("file", norm_path(f, cwd), "read", part) for f in files]


def git_touches(args: tuple[str, ...], cwd: str, bodies: list[str]) -> list[Touch]:
    if not args:
        return []
    sub, rest = args[0], args[1:]
    if sub in ("apply", "am"):
        named = [f for body in bodies for f in patch_files(body)]
        return [Touch("file", norm_path(f, cwd), "write") for f in named]
    if sub == "checkout" and "--" in rest:
        files = rest[rest.index("--") + 1 :]
        return [Touch("file", norm_path(f, cwd), "write") for f in files]
    if sub == "checkout" and rest == (".",):
        return [Touch("file", norm_path(".", cwd), "write")]
    if (sub == "restore" and "--staged" not in rest) or (sub == "restore" and "--worktree" in rest):
        return [Touch("file", norm_path(f, cwd), "write") for f in positionals(rest, frozenset({"-s", "--source"}))]
    if sub in ("reset", "stash") and ("--hard" in rest or (sub == "stash" and rest[:1] in ((), ("push",)))):
        return [Touch("file", norm_path(".", cwd), "write")]
    if sub == "grep":
        return [Touch("search", " ".join(("git", *args)), "read")]
    return []


def swe_agent_touches(name: str, args: tuple[str, ...], cwd: str, open_file: str) -> list[Touch]:
    """SWE-agent's file viewer and editor commands (they act on the file last opened)."""
    if name == "open" and args:
        part = f"window at line {args[1]}" if len(args) > 1 else "window at line 1"
        return [Touch("file", norm_path(args[0], cwd), "read", part)]
    if name in ("goto", "scroll_up", "scroll_down") and open_file:
        part = f"window at line {args[0]}" if name == "goto" and args else f"window ({name})"
        return [Touch("file", open_file, "read", part)]
    if name in ("edit", "insert") and open_file:
        return [Touch("file", open_file, "write")]
    if name == "create" and args:
        return [Touch("file", norm_path(args[0], cwd), "write")]
    if name in ("find_file", "search_file", "search_dir"):
        target = list(args)
        if name == "search_file" and len(args) < 2 and open_file:
            target.append(open_file)
        return [Touch("search", " ".join((name, *target)), "read")]
    if name == "str_replace_editor" and len(args) >= 2:
        access = "read" if args[0] == "view" else "write"
        return [Touch("file", norm_path(args[1], cwd), access)]
    return []
