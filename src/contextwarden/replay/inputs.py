"""What a replay reads: transcripts as :class:`ReplayInput`, from files or from a session store."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import SessionNotFound, UsageError
from ..log.events import AssistantMessage, Event, JSONValue
from ..log.store._protocol import SessionStore


@dataclass(frozen=True, kw_only=True)
class ReplayInput:
    """One transcript to replay: its events as they happened."""

    name: str
    """A short name (the file stem or the session id)."""
    source: str
    """The file path or ``session:<id>``."""
    events: tuple[Event, ...]
    """The events in order."""
    format: str = ""
    """The transcript format, when read from a file."""
    metadata: dict[str, JSONValue] = field(default_factory=dict)
    """Format-specific facts (model, usage totals...)."""
    warnings: tuple[str, ...] = ()
    """What the importer skipped or repaired while reading the file."""

    @property
    def requests(self) -> int:
        """Assistant messages: one request each."""
        return sum(1 for e in self.events if isinstance(e, AssistantMessage))


def load_inputs(
    specs: Iterable[str], *, store: SessionStore | None = None, format: str | None = None
) -> list[ReplayInput]:
    """Read each spec as a transcript file, or else as a session id of ``store``."""
    from ..importers import load_transcript

    inputs: list[ReplayInput] = []
    for spec in specs:
        if os.path.exists(spec):
            t = load_transcript(spec, format=format)
            inputs.append(
                ReplayInput(
                    name=Path(spec).stem,
                    source=str(spec),
                    events=t.events,
                    format=t.format,
                    metadata=dict(t.metadata),
                    warnings=tuple(t.warnings),
                )
            )
            continue
        if store is None:
            raise UsageError(f"{spec}: no such file (and no session store to look it up in)")
        try:
            events = store.read(spec)
        except SessionNotFound:
            raise UsageError(f"{spec}: neither a file nor a session in the store") from None
        meta = store.get_session(spec).metadata
        inner = meta.get("transcript")
        inputs.append(
            ReplayInput(
                name=spec,
                source=f"session:{spec}",
                events=tuple(events),
                format=str(meta.get("format", "")),
                metadata=dict(inner) if isinstance(inner, dict) else {},
            )
        )
    return inputs


__all__ = ["ReplayInput", "load_inputs"]
