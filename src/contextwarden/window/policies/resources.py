"""Resource identity: which file, URL, test target, search or page a tool call reads, changes or runs.

Supersession and staleness are decided on these: a newer whole read of a file supersedes older
reads of it (:func:`covers`), a write makes earlier reads of it stale (:func:`affects`), a newer
run of the same test target supersedes the older run, a newer browser snapshot supersedes the
older page state.

Everything is textual and deterministic: paths are normalized without touching the filesystem
(``./a//b/../c`` → ``a/c``; a relative path is joined to the call's ``workdir`` or the ``cwd``
the caller passes), shell commands are parsed, never run.

Keys by kind:

- ``file``: the normalized path; ``part`` says which part a partial read showed
  (``lines 10-20``, ``from line 100``, ``last 20 lines``, ``window at line 500``), "" for all of it;
- ``url``: the URL with scheme and host lowercased and the fragment dropped;
- ``test``: ``<runner>:<target>`` (``pytest:tests/test_a.py``, ``pytest:all``, ``go:./...``);
- ``search``: the search itself (tool and arguments, or the command line), so only the same
  search again supersedes it;
- ``page``: the browser tab (``current`` when the tool names none).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, cast
from urllib.parse import urlsplit, urlunsplit

from ...log.events import JSONValue, ToolCall
from ._commands import patch_files, swe_agent_touches
from ._paths import norm_path
from ._shell import classify, shell_touches

__all__ = [
    "Resource",
    "affects",
    "as_shown",
    "classify_command",
    "command_of",
    "command_program",
    "covers",
    "normalize_path",
    "normalize_url",
    "opened_file",
    "resources_of",
]

ResourceKind = Literal["file", "url", "test", "search", "page"]
Access = Literal["read", "write", "run"]


@dataclass(frozen=True, kw_only=True)
class Resource:
    """One thing a tool call touched."""

    kind: ResourceKind
    """``file``, ``url``, ``test``, ``search`` or ``page``."""
    key: str
    """Its identity (see the module docstring for each kind)."""
    access: Access
    """``read``, ``write`` (changed it) or ``run`` (tests)."""
    part: str = ""
    """For a partial read, which part (``lines 10-20``); empty when the whole resource was read."""


_PATH_KEYS = (
    "file_path",
    "path",
    "filepath",
    "filename",
    "file",
    "notebook_path",
    "target_file",
    "relative_path",
    "absolute_path",
    "abs_path",
    "dir_path",
    "directory",
)
_URL_KEYS = ("url", "uri", "href", "link")
_QUERY_KEYS = ("query", "q", "pattern", "regex", "search_term", "search", "term", "keyword")
_BULKY_KEYS = frozenset(
    {
        "content",
        "file_text",
        "new_string",
        "old_string",
        "new_str",
        "old_str",
        "edits",
        "new_source",
        "text",
        "code",
        "patch",
        "input",
        "body",
        "data",
    }
)
_EDITOR_COMMANDS = frozenset({"view", "create", "str_replace", "insert", "undo_edit", "write", "append"})
_SWE_AGENT = frozenset(
    {
        "open",
        "goto",
        "scroll_up",
        "scroll_down",
        "edit",
        "insert",
        "create",
        "find_file",
        "search_file",
        "search_dir",
    }
)
_WRITE_VERBS = re.compile(
    r"write|edit|create|delete|remove|update|patch|move|rename|save|upload|insert|replace"
    r"|append|mkdir"
)
_BROWSER_GOTO = re.compile(r"""\bgoto\(\s*["']([^"']+)["']""")
_SHELLS = ("bash", "sh", "zsh", "dash")


def normalize_path(path: str, cwd: str = "") -> str:
    """Normalize a path textually (``./a//b/../c`` → ``a/c``), joining a relative one to ``cwd``."""
    return norm_path(path, cwd)


def normalize_url(url: str) -> str:
    """Lowercase the scheme and host and drop the fragment; keep the path and query as they are."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return url.strip()
    if not parts.scheme or not parts.netloc:
        return url.strip()
    path = parts.path if parts.path not in ("", "/") else ""
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), path, parts.query, ""))


CLIENT_CUT_PART = "as the client cut it"
"""The ``part`` of a whole read whose output the client itself cut (it shows head and tail only)."""

_CLIENT_CUTS = (
    re.compile(r"\[\.\.\. omitted \d+ of \d+ lines \.\.\.\]"),  # Codex, line-based
    re.compile(r"\u2026\s*\d+ (?:tokens|chars|characters|bytes|lines) truncated\s*\u2026"),  # Codex, token-based
    re.compile(r"\[\.\.\.\s*\d+ (?:tokens|chars|characters|bytes|lines) (?:truncated|omitted)\s*\.\.\.\]"),
    re.compile(r"<response clipped>"),  # SWE-agent's editor
)
"""Markers clients put where they cut a tool's output before the model (and the proxy) saw it."""


def as_shown(resources: tuple[Resource, ...], output: str) -> tuple[Resource, ...]:
    """``resources`` as the output shows them: whole reads of an output the client cut are partial.

    A read that shows only a file's head and tail does not cover an earlier read of any part of it.
    """
    if not any(r.access == "read" and r.kind == "file" and not r.part for r in resources):
        return resources
    if not any(cut.search(output) for cut in _CLIENT_CUTS):
        return resources
    return tuple(
        Resource(kind=r.kind, key=r.key, access=r.access, part=CLIENT_CUT_PART)
        if r.access == "read" and r.kind == "file" and not r.part
        else r
        for r in resources
    )


def covers(newer: Resource, older: Resource) -> bool:
    """Whether a newer read shows everything an older read of the same resource showed."""
    return (newer.kind, newer.key) == (older.kind, older.key) and newer.part in ("", older.part)


def affects(change: Resource, read: Resource) -> bool:
    """Whether a write changes what an earlier read showed (the same file, or a file under a changed directory)."""
    if change.access != "write" or change.kind != read.kind:
        return False
    if change.key == read.key or change.key == ".":
        return True
    return read.key.startswith(change.key.rstrip("/") + "/")


def _text(value: JSONValue) -> str:
    return value if isinstance(value, str) else ""


def command_of(call: ToolCall) -> str:
    """Return the shell command line a call runs (``command``/``cmd``, argv lists, ``local_shell``), or ""."""
    args = call.arguments
    action = args.get("action")
    value: JSONValue = args.get("command", args.get("cmd"))
    if value is None and isinstance(action, dict):
        value = action.get("command")
    if value is None and call.name.lower() in ("bash", "shell", "sh", "terminal"):
        value = args.get("_raw")
    if isinstance(value, list):
        argv = [str(v) for v in value]
        if len(argv) >= 3 and argv[0].rsplit("/", 1)[-1] in _SHELLS and argv[1].startswith("-") and "c" in argv[1]:
            return argv[2]
        return shlex.join(argv)
    return _text(value) if value is not None else ""


def classify_command(command: str) -> str:
    """``test``, ``file_read`` or ``search`` when the command line is only that, otherwise ``""``."""
    return classify(command)[0]


def command_program(command: str) -> str:
    """Return the program that decided :func:`classify_command` (``pytest``, ``cat``, ``grep``), or ""."""
    return classify(command)[1]


def _cwd_of(call: ToolCall, cwd: str) -> str:
    args = call.arguments
    action = args.get("action")
    workdir = args.get("workdir") or args.get("cwd") or args.get("working_directory")
    if workdir is None and isinstance(action, dict):
        workdir = action.get("working_directory")
    return norm_path(workdir, cwd) if isinstance(workdir, str) and workdir else cwd


def _path_arg(args: Mapping[str, JSONValue]) -> str:
    return next((v for k in _PATH_KEYS if isinstance(v := args.get(k), str) and v), "")


def _int(value: JSONValue) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return None


def _part(args: Mapping[str, JSONValue]) -> str:
    """Which part of a file a read shows, from its range arguments ("" = all of it)."""
    view = args.get("view_range")
    if isinstance(view, list) and len(view) == 2 and (a := _int(view[0])) is not None:
        b = _int(view[1])
        return f"from line {a}" if b is None or b < 0 else f"lines {a}-{b}"
    offset, limit = _int(args.get("offset")), _int(args.get("limit"))
    if offset is not None or limit is not None:
        start = max(offset or 1, 1)
        return f"lines {start}-{start + limit - 1}" if limit is not None else f"from line {start}"
    first, last = _int(args.get("start_line")), _int(args.get("end_line"))
    if first is not None:
        return f"lines {first}-{last}" if last is not None and last >= first else f"from line {first}"
    line = _int(args.get("line_number", args.get("line")))
    return f"window at line {line}" if line is not None else ""


def _signature(call: ToolCall) -> str:
    """Return a search's identity: the tool and its identifying arguments, in sorted order."""
    fields = [
        f"{k}={v}"
        for k, v in sorted(call.arguments.items())
        if k not in _BULKY_KEYS and isinstance(v, (str, int, float, bool)) and v != ""
    ]
    return " ".join([call.name.lower(), *fields])


def opened_file(call: ToolCall, *, cwd: str = "") -> str:
    """Return the file a SWE-agent ``open``/``create`` makes current (``goto``, ``scroll_*``, ``edit`` use it)."""
    name = call.name.lower()
    path = _path_arg(call.arguments) if name in ("open", "create") else ""
    if path:
        return norm_path(path, _cwd_of(call, cwd))
    command = command_of(call)  # SWE-agent's own trajectories put the whole line in ``command``
    if command:
        words = command.split()
        if len(words) >= 2 and words[0] in ("open", "create"):
            return norm_path(words[1].strip("\"'"), _cwd_of(call, cwd))
    return ""


def _touches(kind: str, key: str, access: str, part: str = "") -> Resource:
    return Resource(kind=cast(ResourceKind, kind), key=key, access=cast(Access, access), part=part)


def _file_call(call: ToolCall, category: str, cwd: str) -> list[Resource]:
    args = call.arguments
    path = _path_arg(args)
    editor = _text(args.get("command", ""))
    if editor in _EDITOR_COMMANDS and path:
        access = "read" if editor == "view" else "write"
        return [_touches("file", norm_path(path, cwd), access, _part(args) if access == "read" else "")]
    if path:
        access = "read" if category == "file_read" else "write"
        return [_touches("file", norm_path(path, cwd), access, _part(args) if access == "read" else "")]
    if category == "file_edit":
        named = [f for v in args.values() if isinstance(v, str) for f in patch_files(v)]
        return [_touches("file", norm_path(f, cwd), "write") for f in named]
    return []


def _browser_call(call: ToolCall) -> list[Resource]:
    args = call.arguments
    tab = next(
        (str(v) for k in ("tab_id", "tabId", "page_id", "tab", "index") if (v := args.get(k)) is not None),
        "current",
    )
    out = [_touches("page", tab, "read")]
    url = next((v for k in _URL_KEYS if isinstance(v := args.get(k), str) and v), "")
    if not url:
        match = _BROWSER_GOTO.search(_text(args.get("code", "")))
        url = match.group(1) if match else ""
    if url:
        out.append(_touches("url", normalize_url(url), "read"))
    return out


def _generic(call: ToolCall, cwd: str) -> list[Resource]:
    args = call.arguments
    out: list[Resource] = []
    path = _path_arg(args)
    if path:
        access = "write" if _WRITE_VERBS.search(call.name.lower()) else "read"
        out.append(_touches("file", norm_path(path, cwd), access, _part(args) if access == "read" else ""))
    url = next((v for k in _URL_KEYS if isinstance(v := args.get(k), str) and v), "")
    if url:
        out.append(_touches("url", normalize_url(url), "read"))
    if not out and any(isinstance(args.get(k), str) for k in _QUERY_KEYS):
        out.append(_touches("search", _signature(call), "read"))
    return out


def _swe_agent_call(call: ToolCall, cwd: str, open_file: str) -> list[Resource]:
    raw = call.arguments.get("_raw")
    if isinstance(raw, str):
        words = tuple(raw.split())
    else:
        words = tuple(str(v) for v in call.arguments.values() if isinstance(v, (str, int)) and not isinstance(v, bool))
    if call.name.lower() in ("edit", "insert"):
        words = ()
    found = swe_agent_touches(call.name.lower(), words, cwd, open_file)
    return [_touches(t.kind, t.key, t.access, t.part) for t in found]


def resources_of(call: ToolCall, category: str, *, cwd: str = "", open_file: str = "") -> tuple[Resource, ...]:
    """Return what ``call`` reads, writes or runs, given its policy ``category`` (() when unknown).

    ``cwd`` is the session's working directory, if known (a ``workdir`` argument of the call
    wins); ``open_file`` is the file a SWE-agent ``open`` made current (see :func:`opened_file`),
    which ``goto``, ``scroll_*`` and ``edit`` act on.
    """
    cwd = _cwd_of(call, cwd)
    name = call.name.lower()
    command = command_of(call)
    found: list[Resource]
    editor = _text(call.arguments.get("command", "")) in _EDITOR_COMMANDS and bool(_path_arg(call.arguments))
    swe_agent = name in _SWE_AGENT and not command and not (name in ("edit", "insert") and _path_arg(call.arguments))
    if editor:
        found = _file_call(call, "file_edit", cwd)
    elif swe_agent:
        found = _swe_agent_call(call, cwd, open_file)
    elif command and category not in ("browser", "fetch", "retrieval"):
        found = [_touches(t.kind, t.key, t.access, t.part) for t in shell_touches(command, cwd, open_file)]
        if category == "test" and not any(r.kind == "test" for r in found):
            found.append(_touches("test", f"{name}:{command.strip()}", "run"))
    elif category in ("file_read", "file_edit"):
        found = _file_call(call, category, cwd)
    elif category == "search":
        found = [_touches("search", _signature(call), "read")]
    elif category == "browser":
        found = _browser_call(call)
    elif category == "fetch":
        url = next((v for k in _URL_KEYS if isinstance(v := call.arguments.get(k), str) and v), "")
        found = [_touches("url", normalize_url(url), "read")] if url else []
    elif category == "test":
        target = _path_arg(call.arguments) or _text(call.arguments.get("target", ""))
        found = [_touches("test", f"{name}:{norm_path(target, cwd) if target else 'all'}", "run")]
    elif category == "retrieval":
        found = []
    else:
        found = _generic(call, cwd)
    unique: list[Resource] = []
    for resource in found:
        if resource.key and resource not in unique:
            unique.append(resource)
    return tuple(unique)
