"""One-line placeholders for tool results that are masked, superseded or stale.

Each names the tool and a short rendering of its arguments, the size of what it replaces, the
artifact id (the tool result's event id) and the call that brings it back (``read_range``, or the
client's own recall tool behind the proxy), so eviction is never forgetting. They are
deterministic: no times, nothing but their inputs. :func:`retrieval_call` is the one wording of
that call, for placeholders and truncation markers alike.
"""

from __future__ import annotations

import json
import re
from typing import Union

from ...log.events import JSONValue, ToolCall, ToolResult

__all__ = [
    "Retrievable",
    "extract_sources",
    "masked_placeholder",
    "render_call",
    "retrieval_call",
    "stale_placeholder",
    "superseded_placeholder",
]

Retrievable = Union[bool, str]  # noqa: UP007 (a runtime alias on Python 3.10)
"""How the model gets evicted content back: ``True``, the library's ``read_range``; ``False``, it
cannot (nothing names an id); a tool name, that recall tool of the client's own (``contextwarden
mcp``'s ``recall`` as the client lists it, called with the artifact id as ``id``)."""

ARGUMENTS_MAX_CHARS = 120
"""The rendered arguments of a call are cut to this many characters."""
_VALUE_MAX_CHARS = 80
_IDENTITY_KEYS = (
    "file_path",
    "path",
    "notebook_path",
    "filename",
    "file",
    "command",
    "cmd",
    "url",
    "uri",
    "query",
    "pattern",
    "artifact_id",
)
_BULKY = frozenset(
    {
        "content",
        "file_text",
        "new_string",
        "old_string",
        "new_str",
        "old_str",
        "edits",
        "new_source",
        "patch",
        "input",
        "body",
        "data",
        "code",
    }
)
_URL = re.compile(r"https?://[^\s<>\"'`)\]}]+")


def _cap(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _json(value: JSONValue) -> str:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    if not text.isascii() and re.search("[\ud800-\udfff]", text):
        # lone surrogates (undecodable bytes) cannot be sent; escape everything instead
        text = json.dumps(value, ensure_ascii=True, separators=(",", ":"))
    return text


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _value(key: str, value: JSONValue) -> str:
    if key in _BULKY and isinstance(value, (str, list, dict)):
        size = len(value) if isinstance(value, str) else len(_json(value))
        return f"<{size:,} chars>"
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        # argv lists (Codex shell): render as the command line they stand for
        value = " ".join(str(v) for v in value)
    return _cap(_json(value), _VALUE_MAX_CHARS)


def render_call(call: ToolCall | None, tool_name: str = "") -> str:
    """``Name(key="value", ...)`` with identifying arguments first, bulky ones as sizes, capped."""
    name = call.name if call is not None else tool_name or "tool"
    if call is None:
        return f"{name}(…)"
    args = call.arguments
    raw = args.get("_raw") if len(args) == 1 else None
    if isinstance(raw, str):
        return f"{name}({_cap(_json(raw), ARGUMENTS_MAX_CHARS)})"
    keys = [k for k in _IDENTITY_KEYS if k in args] + [k for k in args if k not in _IDENTITY_KEYS]
    rendered = ", ".join(f"{k}={_value(k, args[k])}" for k in keys)
    return f"{name}({_cap(rendered, ARGUMENTS_MAX_CHARS)})"


def extract_sources(text: str, *, limit: int = 8) -> tuple[str, ...]:
    """Return the first ``limit`` distinct URLs cited in ``text`` (for research placeholders)."""
    found: list[str] = []
    for match in _URL.finditer(text):
        url = match.group().rstrip(".,;:")
        if url not in found:
            found.append(url)
            if len(found) == limit:
                break
    return tuple(found)


def _size(tokens: int, lines: int) -> str:
    return f"{tokens:,} tokens, {lines:,} line{'s' if lines != 1 else ''}"


def retrieval_call(retrievable: Retrievable, artifact_id: str, start_line: int, end_line: int, *, whole: bool) -> str:
    """The call that brings lines ``start_line``..``end_line`` of ``artifact_id`` back (``whole``: all of it).

    ``retrievable`` must not be ``False`` (:data:`Retrievable`). A recall tool gives a whole output
    back byte for byte when asked for no lines, so a whole output is asked for by its id alone.
    """
    if isinstance(retrievable, str) and retrievable:
        lines = "" if whole else f", start_line={start_line}, end_line={end_line}"
        return f'{retrievable}(id="{artifact_id}"{lines})'
    return f'read_range(artifact_id="{artifact_id}", start_line={start_line}, end_line={end_line})'


def _get_back(result: ToolResult, lines: int, retrievable: Retrievable) -> str:
    # Only name a tool the model was given. Without retrieval an id is of no use to the model, and it
    # costs tokens on every later request (in the proxy, ~1.5% of the bill: docs/proxy.md, "Measured").
    if not retrievable:
        return "not retrievable in this session"
    return retrieval_call(retrievable, result.id, 1, max(lines, 1), whole=True)


def _subject(call: ToolCall | None, result: ToolResult) -> str:
    failed = " (failed)" if result.is_error or result.exit_code not in (None, 0) else ""
    return f"output of {_one_line(render_call(call, result.tool_name))}{failed}"


def masked_placeholder(
    call: ToolCall | None,
    result: ToolResult,
    *,
    tokens: int,
    lines: int,
    sources: tuple[str, ...] = (),
    quotes: tuple[str, ...] = (),
    retrievable: Retrievable = True,
) -> str:
    """Render the line that replaces a result masked for age or space (``sources``: URLs to keep).

    ``quotes``: lines the output says only once (``ToolPolicy.odd_lines``), kept word for word.

    ``retrievable``: how the model gets it back (:data:`Retrievable`), so the placeholder may tell it. Why it was
    masked is the edit's reason in the log, not here: the line rides on every later request, and the
    model needs what it was and how to get it back, not the planner's rule.
    """
    cited = f" Sources: {_cap(_one_line(', '.join(sources)), 400)}." if sources else ""
    if quotes:
        cited += " It says once: " + " | ".join(_one_line(q) for q in quotes) + "."
    got = _get_back(result, lines, retrievable)
    back = f" Get it back with {got}" if retrievable else f" ({got})"
    return f"[{_subject(call, result)} masked: {_size(tokens, lines)}.{cited}{back}]"


def superseded_placeholder(
    call: ToolCall | None,
    result: ToolResult,
    *,
    tokens: int,
    lines: int,
    by: str,
    retrievable: Retrievable = True,
) -> str:
    """Render the line that replaces a result made redundant by a newer one.

    ``by`` names the newer result as the model sees it: its tool and the id of its call.
    """
    return (
        f"[{_subject(call, result)} superseded by the later {_one_line(by)}: {_size(tokens, lines)}."
        f" The old one: {_get_back(result, lines, retrievable)}]"
    )


def stale_placeholder(
    call: ToolCall | None,
    result: ToolResult,
    *,
    tokens: int,
    lines: int,
    by: str,
    retrievable: Retrievable = True,
) -> str:
    """Render the line that replaces a result a later change made out of date (``by``: that change's call)."""
    return (
        f"[{_subject(call, result)} is stale: the later {_one_line(by)} changed it; read the current version."
        f" Old output ({_size(tokens, lines)}): {_get_back(result, lines, retrievable)}]"
    )
