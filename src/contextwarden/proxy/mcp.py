"""``contextwarden mcp``: the proxy's session store as an MCP server (the official ``mcp`` SDK).

Added once to an agent (docs/proxy.md has the line per client), it offers three tools over the
store the proxy writes: ``recall`` (what a placeholder or truncation marker stands for, byte for
byte, whole or by lines), ``search_history`` (lines of the session's log holding some words, with
the ids that recall them) and ``window`` (what the current window holds and why). Access is by
capability: a recall id the conversation was shown (:mod:`.recall`). Every refusal is a tool
error with one clear sentence; nothing here writes to the store.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from ..errors import ContextWardenError
from ..log.store import SessionStore
from .recall import (
    MAX_ANSWER_CHARS,
    MAX_SEARCH_LINES,
    RECALL_DESCRIPTION,
    RECALL_NAME,
    SERVER_INSTRUCTIONS,
    Credential,
    History,
    window_view,
)

SERVER_NAME = "contextwarden"
"""The name clients list the server under (Claude Code then names its tools ``mcp__contextwarden__<tool>``)."""

TOOLS = (RECALL_NAME, "search_history", "window")
"""The tools the server offers."""


def build_server(
    store: SessionStore, *, max_answer_chars: int = MAX_ANSWER_CHARS, credential: Credential | None = None
) -> Any:
    """The MCP server over ``store`` (an ``mcp.server.mcpserver.MCPServer``); ``credential``: see :class:`History`."""
    try:
        from mcp.server.mcpserver import MCPServer
        from mcp.server.mcpserver.exceptions import ToolError
    except ImportError as exc:  # pragma: no cover - the extra is part of the dev install
        raise ImportError("contextwarden mcp needs the MCP SDK: pip install 'contextwarden[mcp]'") from exc

    history = History(store, max_answer_chars=max_answer_chars, credential=credential)
    server = MCPServer(SERVER_NAME, instructions=SERVER_INSTRUCTIONS)

    def answer(call: Any, *args: Any) -> str:
        try:
            return str(call(*args))
        except ContextWardenError as exc:  # unknown ids, bad ranges, a store that is down
            raise ToolError(str(exc)) from exc

    # Plain text answers, no structured copy: a client given both may show the model the structured one,
    # JSON-escaped ({"result": "..."}, as Claude Code does), where recall must give the bytes back as they were.
    @server.tool(name=RECALL_NAME, description=RECALL_DESCRIPTION, structured_output=False)
    def recall(
        id: Annotated[str, Field(description="The id a placeholder or truncation marker names (32 hex digits)")],
        start_line: Annotated[int | None, Field(description="First line to return (1-based); omit for all")] = None,
        end_line: Annotated[int | None, Field(description="Last line to return (inclusive); omit for the end")] = None,
    ) -> str:
        return answer(history.recall, id, start_line, end_line)

    @server.tool(
        name="search_history",
        description="Lines of this conversation's history (tool outputs and messages) that hold every word of the"
        " query, each with the recall id and line number that bring it back in full.",
        structured_output=False,
    )
    def search_history(
        session: Annotated[str, Field(description="Any recall id this conversation shows (its session is searched)")],
        query: Annotated[str, Field(description="Words that must all appear on a line (case-insensitive)")],
        limit: Annotated[int, Field(description=f"Most lines to return (1-{MAX_SEARCH_LINES})")] = 20,
    ) -> str:
        return answer(history.search, session, query, limit)

    @server.tool(
        name="window",
        description="What this conversation's context window holds and why: tokens by section, window events,"
        " each reduction (masked, superseded, stale) with its reason and recall id, and the items.",
        structured_output=False,
    )
    def window(
        session: Annotated[str, Field(description="Any recall id this conversation shows (its session is shown)")],
    ) -> str:
        return answer(window_view, history, session)

    return server
