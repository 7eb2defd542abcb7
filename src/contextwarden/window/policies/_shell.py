"""Reading shell command lines: which files a command reads or writes and which tests it runs.

Textual only: nothing is executed and the filesystem is never touched. The parser understands
``;``/``&&``/``||``/``|`` chains, ``cd`` within a chain, redirections, heredocs (whose bodies
may carry a patch), ``bash -c`` wrappers, environment prefixes and wrappers such as ``timeout``,
``uv run`` or ``sudo``. Anything it does not recognize yields no resource rather than a guess.
"""

from __future__ import annotations

import functools
import posixpath
import re
import shlex
from dataclasses import dataclass

from ._commands import Touch, git_touches, patch_files, positionals, read_tail_head, sed_touches, swe_agent_touches
from ._paths import norm_path
from ._testrun import test_targets

_HEREDOC = re.compile(r"(?<!<)<<(?!<)(-?)[ \t]*(['\"]?)([A-Za-z_][\w.-]*)\2[^\n]*\n")
_FD_DUP = re.compile(r"(?<![\w>])\d*>&(?:\d+|-)")
_FD_REDIRECT = re.compile(r"(?<![\w$])\d+(>>?)")
_COMMENT_LINE = re.compile(r"^[ \t]*#.*$", re.MULTILINE)
_SEPARATORS = frozenset({";", "&&", "||", "|", "&", "(", ")", "|&", ";;"})
_WRITE_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>"})
_WRAPPERS = frozenset({"sudo", "time", "nohup", "nice", "exec", "command", "builtin", "stdbuf", "unbuffer"})
_RUNNERS = {
    ("uv", "run"),
    ("poetry", "run"),
    ("pipenv", "run"),
    ("pdm", "run"),
    ("hatch", "run"),
    ("rye", "run"),
}
_SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh"})
_READERS = frozenset({"cat", "tac", "nl", "less", "more", "bat", "batcat", "view"})
# fmt: off
_SEARCHERS = frozenset({
    "grep", "egrep", "fgrep", "rg", "ag", "ack", "find", "fd", "ls", "tree", "find_file", "search_file", "search_dir",
    "locate",
})
# Commands that neither read nor change the workspace in a way that matters for classification.
_TRIVIAL = frozenset({
    "cd", "pwd", "echo", "printf", "true", "false", "export", "set", "source", ".", "pushd", "popd", "clear", "wc",
    "sort", "uniq", "cut", "tr", "xargs", "sleep", "which", "type",
})
# fmt: on
_NULL_TARGETS = ("/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty")


@dataclass(frozen=True)
class _Simple:
    argv: tuple[str, ...]
    reads: tuple[str, ...]
    writes: tuple[str, ...]
    cwd: str
    piped: bool = False
    """Reads the previous command's output (after ``|``)."""
    feeds: bool = False
    """Its output goes into the next command (before ``|``), so what it read is not shown as it is."""


def _heredocs(command: str) -> tuple[str, list[str]]:
    """Remove heredoc bodies from ``command``; return the rest and the bodies."""
    bodies: list[str] = []
    out: list[str] = []
    pos = 0
    for match in _HEREDOC.finditer(command):
        if match.start() < pos:
            continue
        tag = match.group(3)
        end = re.compile(rf"^[ \t]*{re.escape(tag)}[ \t]*$", re.MULTILINE).search(command, match.end())
        body_end = end.start() if end else len(command)
        out.append(command[pos : match.start()] + " ")
        bodies.append(command[match.end() : body_end])
        pos = end.end() if end else len(command)
        out.append("\n")
    out.append(command[pos:])
    return "".join(out), bodies


def _tokens(command: str) -> list[str]:
    command = command.replace("\\\n", " ")
    command = _COMMENT_LINE.sub("", command)
    command = _FD_DUP.sub(" ", command)
    command = _FD_REDIRECT.sub(r" \1", command)
    command = command.replace("\n", " ; ")
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        tokens = list(lexer)
    except ValueError:  # an unbalanced quote: fall back to plain words
        tokens = command.split()
    # A word starting with # comments out the rest of its line (newlines became ";").
    out: list[str] = []
    comment = False
    for tok in tokens:
        comment = (comment or tok.startswith("#")) and tok != ";"
        if not comment:
            out.append(tok)
    return out


def _unwrap(argv: list[str]) -> list[str]:
    """Drop environment assignments and wrappers (``timeout 60``, ``uv run``, ``env X=1``...)."""
    while argv:
        head = posixpath.basename(argv[0])
        if "=" in argv[0] and not argv[0].startswith(("-", "=")) and re.match(r"^[A-Za-z_]\w*=", argv[0]):
            argv = argv[1:]
        elif head == "env":
            argv = argv[1:]
            while argv and (argv[0].startswith("-") or "=" in argv[0]):
                argv = argv[1:]
        elif head in _WRAPPERS:
            argv = argv[1:]
            while argv and argv[0].startswith("-"):
                argv = argv[1:]
        elif head == "timeout":
            argv = [a for a in argv[1:] if not a.startswith("-")][1:] if len(argv) > 2 else []
        elif len(argv) > 1 and (head, argv[1]) in _RUNNERS:
            argv = argv[2:]
        elif head in ("npx", "bunx", "pnpx"):
            argv = [a for a in argv[1:] if a not in ("--yes", "-y")]
        else:
            return argv
    return argv


def _is_shell_c(argv: list[str]) -> bool:
    """``bash -c 'script'`` (also ``-lc``, ``-ec``...)."""
    return len(argv) > 2 and posixpath.basename(argv[0]) in _SHELLS and argv[1].startswith("-") and "c" in argv[1][1:]


def _simple_commands(command: str, cwd: str) -> tuple[list[_Simple], list[str]]:
    text, bodies = _heredocs(command)
    simples: list[_Simple] = []
    words: list[str] = []
    reads: list[str] = []
    writes: list[str] = []
    piped = False
    tokens = _tokens(text)
    i = 0
    while i <= len(tokens):
        tok = tokens[i] if i < len(tokens) else ";"
        if tok in _SEPARATORS:
            argv = _unwrap(words)
            if argv and posixpath.basename(argv[0]) in ("cd", "pushd"):
                target = next((a for a in argv[1:] if not a.startswith("-")), "")
                cwd = norm_path(target, cwd) if target and target != "-" else cwd
            elif _is_shell_c(argv):
                inner, inner_bodies = _simple_commands(argv[2], cwd)
                simples.extend(inner)
                bodies.extend(inner_bodies)
            elif argv or reads or writes:
                feeds = tok in ("|", "|&")
                simples.append(_Simple(tuple(argv), tuple(reads), tuple(writes), cwd, piped, feeds))
            words, reads, writes = [], [], []
            piped = tok in ("|", "|&")
        elif tok in _WRITE_REDIRECTS or tok == "<":
            target = tokens[i + 1] if i + 1 < len(tokens) else ""
            if target and target not in _SEPARATORS and not target.startswith(_NULL_TARGETS):
                (reads if tok == "<" else writes).append(target)
            i += 1
        elif tok in ("<<<", "<<"):
            i += 1
        else:
            words.append(tok)
        i += 1
    return simples, bodies


def _one(simple: _Simple, bodies: list[str], open_file: str) -> list[Touch]:  # noqa: C901 - a dispatch table
    cwd = simple.cwd
    touches = [Touch("file", norm_path(r, cwd), "read") for r in simple.reads]
    touches += [Touch("file", norm_path(w, cwd), "write") for w in simple.writes]
    if not simple.argv:
        return touches
    name, args = posixpath.basename(simple.argv[0]), simple.argv[1:]
    tests = test_targets(name, args, cwd)
    if tests is not None:
        return touches + [Touch("test", key, "run") for key in tests]
    if name in _READERS:
        touches += [Touch("file", norm_path(f, cwd), "read") for f in positionals(args, frozenset({"-r"}))]
    elif name in ("head", "tail"):
        touches += read_tail_head(name, args, cwd)
    elif name == "sed":
        touches += sed_touches(args, cwd)
    elif name in ("rm", "touch", "unlink", "shred", "truncate"):
        touches += [Touch("file", norm_path(f, cwd), "write") for f in positionals(args, frozenset({"-s"}))]
    elif name == "mv":
        touches += [Touch("file", norm_path(f, cwd), "write") for f in positionals(args, frozenset({"-t"}))]
    elif name == "cp":
        files = positionals(args, frozenset({"-t"}))
        touches += [Touch("file", norm_path(f, cwd), "read") for f in files[:-1]]
        touches += [Touch("file", norm_path(f, cwd), "write") for f in files[-1:]]
    elif name == "tee":
        touches += [Touch("file", norm_path(f, cwd), "write") for f in positionals(args)]
    elif name == "perl" and any(a.startswith("-i") or re.fullmatch(r"-\w*i\w*", a) for a in args):
        files = positionals(args, frozenset({"-e", "-pe", "-pie", "-ne"}))
        inline = any(a in ("-e", "-pe", "-pie", "-ne") for a in args)
        touches += [Touch("file", norm_path(f, cwd), "write") for f in (files if inline else files[1:])]
    elif name in ("patch", "apply_patch", "applypatch"):
        named = [f for body in bodies for f in patch_files(body)]
        if not named and name == "patch":
            named = positionals(args, frozenset({"-p", "-i", "-d", "-o", "-r", "-F"}))[:1]
        if not named and name != "patch":
            named = [f for a in args for f in patch_files(a)]
        touches += [Touch("file", norm_path(f, cwd), "write") for f in named]
    elif name == "git":
        touches += git_touches(args, cwd, bodies)
    elif name in _SEARCHERS and simple.piped:
        pass  # filters the previous command's output: not a search of the workspace
    elif name in _SEARCHERS:
        touches += swe_agent_touches(name, args, cwd, open_file) or [Touch("search", " ".join(simple.argv), "read")]
    else:
        touches += swe_agent_touches(name, args, cwd, open_file)
    return touches


@functools.lru_cache(maxsize=4096)
def shell_touches(command: str, cwd: str = "", open_file: str = "") -> tuple[Touch, ...]:
    """Every resource the command line reads, writes or runs, in order, without duplicates."""
    simples, bodies = _simple_commands(command, cwd)
    out: list[Touch] = []
    for simple in simples:
        for touch in _one(simple, bodies, open_file):
            if simple.feeds and touch.kind == "file" and touch.access == "read" and not touch.part:
                touch = Touch(touch.kind, touch.key, touch.access, PIPED_PART)  # ``nl a.py | sed -n 5,9p``
            if touch.key and touch not in out:
                out.append(touch)
    return tuple(out)


PIPED_PART = "as a pipe filtered it"
"""The part of a file a read shows when its output went on through a pipe: not all of it, as far as we know."""


_VIEWERS = frozenset({"head", "tail", "sed", "open", "goto", "scroll_up", "scroll_down"})


@functools.lru_cache(maxsize=4096)
def classify(command: str) -> tuple[str, str]:
    """Return (kind, program) for a command line.

    kind is ``test`` when it runs tests, ``file_read`` when it only reads files, ``search`` when
    it only searches (reads allowed), otherwise ``""``; program is the command that decided it.
    """
    simples, _ = _simple_commands(command, "")
    touches = shell_touches(command)
    names = [posixpath.basename(s.argv[0]) for s in simples if s.argv]
    meaningful = [n for n in names if n not in _TRIVIAL]
    if any(t.kind == "test" for t in touches):
        runner = next((t.key.split(":", 1)[0] for t in touches if t.kind == "test"), "")
        return "test", runner
    if not touches or not meaningful or any(t.access == "write" for t in touches):
        return "", ""
    if all(n in _READERS or n in _VIEWERS for n in meaningful):
        return "file_read", meaningful[0]
    if all(n in _READERS or n in _SEARCHERS or n in _VIEWERS or n == "git" for n in meaningful):
        return "search", next(n for n in meaningful if n in _SEARCHERS or n == "git")
    return "", ""
