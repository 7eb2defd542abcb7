"""One scripted answer of the scripted upstream (what ``_sse`` renders and ``scripted`` serves)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

TOOL_SEARCH = "tool_search"
"""The Responses API's tool search (``{"type": "tool_search"}`` in a request's tools): a call of it loads
deferred tools, and the client answers with the tools it found (``tool_search_output``)."""


@dataclass(frozen=True, kw_only=True)
class Reply:
    """One scripted answer."""

    text: str = "ok"
    """The visible answer."""
    tool_calls: tuple[tuple[str, str, dict[str, Any] | str], ...] = ()
    """Tool calls as ``(id, name, arguments)``; string arguments make a Responses custom tool call
    (a freeform tool such as Codex's ``apply_patch``), whose input is that text. In Responses, a
    ``namespace.tool`` name calls ``tool`` of a namespace (a function name has no dot), and
    :data:`TOOL_SEARCH` is a client-executed ``tool_search_call`` whose arguments are the search."""
    thinking: tuple[str, str] | None = None
    """A reasoning block as ``(text, signature)``; Responses renders it as encrypted reasoning."""
    output_tokens: int = 8
    """Output tokens billed."""
    status: int = 200
    """Anything but 200 returns ``error_body`` with this status instead of an answer."""
    error_body: bytes = b""
    """The body of a scripted error."""
    ident: str = ""
    """Makes the response's ids unique (``msg_<ident>``, ``resp_<ident>``, ``rs_<ident>``...), as a real
    provider's are; a client that groups blocks by message id needs it. Empty: fixed ids."""
    delay: float = 0.0
    """Seconds to wait between streamed events (to test a client that leaves mid-stream)."""
