"""``read_range`` and ``recall`` as tools a framework runs: each call is served from the session log."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ..assemble.manager import ContextManager
from ..context import ToolDefinition
from ..log.events import JSONValue, ToolCall
from ..tools import READ_RANGE, RECALL

_SPECS: dict[str, ToolDefinition] = {READ_RANGE.name: READ_RANGE, RECALL.name: RECALL}


class RetrievalServer:
    """Answers the retrieval tools for whichever session the running agent is in."""

    names: tuple[str, ...] = tuple(_SPECS)
    """The tool names, in the order adapters register them."""

    def __init__(self, manager: ContextManager, session: Callable[[], str]) -> None:
        """Serve from ``manager``'s store; ``session`` tells the id of the session being run."""
        self.manager = manager
        self.session = session

    @staticmethod
    def spec(name: str) -> ToolDefinition:
        """The tool's name, description and JSON schema, exactly as contextwarden offers it."""
        return _SPECS[name]

    def serve(self, name: str, arguments: Mapping[str, JSONValue]) -> str:
        """The tool's answer (bounded like any tool output); the framework records it as a tool result."""
        session_id = self.session()
        if not session_id:
            return f"{name} is unavailable: this run has no contextwarden session yet."
        call = ToolCall(id=f"{name}-call", name=name, arguments=dict(arguments))
        return self.manager.retrieve(session_id, call).output
