"""Real agent transcripts in: Claude Code, Codex, SWE-agent, mini-swe-agent, OpenHands, plain chat logs.

:func:`load_transcript` reads a file, detects its format from its content (not its name) unless
``format=`` forces one, and returns a :class:`Transcript`: unstored events in order, ready to append to
a new session, plus warnings about anything dropped and format-specific metadata. Each format's module
docstring documents exactly how its records map to events.

Transcripts are untrusted input: they are parsed with :func:`json.loads` only. A malformed file raises
:class:`~contextwarden.errors.ImportFormatError` naming the file and the line (JSON Lines) or the JSON
path; a JSON Lines file cut off in its last line imports what is complete and says what it dropped;
unknown fields are ignored and unknown record types are skipped and counted in the warnings.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .._deprecated import renamed
from ..errors import ImportFormatError, UsageError
from ..log.codec import event_to_dict
from ..log.events import Event
from . import chat_messages, claude_code, codex, openhands, openhands_sdk, swe_agent
from ._common import Transcript
from ._ids import file_sha256, with_stable_ids
from ._source import Importer, ImportOptions, SourceDocument, read_source

__all__ = [
    "TRANSCRIPT_FORMATS",
    "ImportOptions",
    "Importer",
    "SourceDocument",
    "Transcript",
    "detect_transcript_format",
    "file_sha256",
    "load_transcript",
    "read_source",
    "text_size",
]

TRANSCRIPT_FORMATS: Mapping[str, Importer] = {
    "claude-code": claude_code.load,
    "codex": codex.load,
    "swe-agent": swe_agent.load,
    "mini-swe-agent": swe_agent.load,
    "openhands": openhands.load,
    "openai-chat": chat_messages.load,
    "anthropic-messages": chat_messages.load,
}
"""Every format name and the importer that reads it."""

_CODEX_ENVELOPES = frozenset({"session_meta", "response_item", "turn_context", "event_msg", "compacted"})
_SAMPLE = 50


_RENAMED = {
    "FORMATS": "TRANSCRIPT_FORMATS",  # deprecated
    "detect_format": "detect_transcript_format",  # deprecated
}


def __getattr__(name: str) -> object:
    """The old names of the transcript formats, for one release (each use warns)."""
    return renamed(__name__, name, _RENAMED, globals().__getitem__)


def detect_transcript_format(path: str | Path) -> str:
    """Return the format name of the transcript at ``path``, judged by its content."""
    return _detect(read_source(path))


def load_transcript(path: str | Path, *, format: str | None = None, id_salt: str = "") -> Transcript:
    """Read the transcript at ``path`` (format detected unless ``format`` is a key of :data:`TRANSCRIPT_FORMATS`).

    Event ids derive from the file's SHA-256 and each event's position (``_ids``), so reading the same
    file twice gives the same ids; ``id_salt`` (a session name) gives a copy of its own ids.
    """
    if format is not None and format not in TRANSCRIPT_FORMATS:
        raise UsageError(f"unknown transcript format {format!r}; known formats: {', '.join(TRANSCRIPT_FORMATS)}")
    doc = read_source(path)
    detected = _detect_or_none(doc)
    name = format or detected
    if name is None:
        raise _unrecognized(doc)
    transcript = _read_as(doc, name)
    if format is not None and detected not in (None, format):
        _check_fit(transcript, _read_as(doc, detected))
    if not transcript.events:
        hint = f"; it looks like {detected}: drop --format" if detected not in (None, name) else ""
        raise ImportFormatError(f"{doc.path}: read as {name}, it holds no events to import{hint}")
    digest = file_sha256(path)
    return dataclasses.replace(
        transcript,
        events=with_stable_ids(transcript.events, digest, id_salt),
        warnings=doc.warnings + transcript.warnings,
        content_sha256=digest,
    )


def _read_as(doc: SourceDocument, name: str) -> Transcript:
    try:
        return TRANSCRIPT_FORMATS[name](doc, ImportOptions(format=name))
    except (TypeError, ValueError, AttributeError, KeyError, IndexError) as exc:
        # A foreign file shaped in a way no check anticipated is still a format error, not a crash.
        raise ImportFormatError(f"{doc.path}: cannot be read as {name}: {type(exc).__name__}: {exc}") from exc


def _check_fit(forced: Transcript, detected: Transcript) -> None:
    """Refuse a forced format that keeps less of the file (text, or events of a kind) than the detected one.

    Forcing a format is for a file detection gets wrong; when the forced reading loses text that the
    detected one keeps, the force is the mistake, and importing it would drop content silently.
    """
    kept, could = text_size(forced.events), text_size(detected.events)
    have, want = Counter(e.kind for e in forced.events), Counter(e.kind for e in detected.events)
    if kept >= could and all(have[kind] >= n for kind, n in want.items()):
        return
    raise ImportFormatError(
        f"{forced.source}: --format {forced.format} does not fit: it reads {_summary(forced)} and "
        f"{kept:,} characters of text, but the file looks like {detected.format}, which reads "
        f"{_summary(detected)} and {could:,} characters; nothing was imported. Drop --format, or use "
        f"--format {detected.format}"
    )


def _summary(transcript: Transcript) -> str:
    counts = Counter(e.kind for e in transcript.events)
    listed = ", ".join(f"{kind} {n}" for kind, n in sorted(counts.items()))
    return f"{len(transcript.events)} events ({listed})" if listed else "0 events"


def text_size(events: Sequence[Event]) -> int:
    """Characters of text the events hold (messages, tool arguments and output, thinking, summaries).

    Ids, kinds and timestamps are not text; comparing two readings of one file by this size shows
    which of them keeps more of it.
    """
    total = 0
    for event in events:
        stack: list[Any] = [
            v for k, v in event_to_dict(event).items() if k not in _NOT_TEXT and isinstance(v, (str, list, dict))
        ]
        while stack:
            value = stack.pop()
            if isinstance(value, str):
                total += len(value)
            elif isinstance(value, dict):
                stack += [v for k, v in value.items() if k not in _NOT_TEXT]
            elif isinstance(value, list):
                stack += value
    return total


_NOT_TEXT = frozenset({"id", "kind", "session_id", "parent_id", "call_id", "response_event_id", "signature"})


def _detect(doc: SourceDocument) -> str:
    found = _detect_or_none(doc)
    if found is None:
        raise _unrecognized(doc)
    return found


def _detect_or_none(doc: SourceDocument) -> str | None:
    if doc.is_jsonl:
        return _sniff_records([record for _, record in doc.lines[:_SAMPLE]])
    return _sniff_document(doc.document)


def _unrecognized(doc: SourceDocument) -> ImportFormatError:
    return ImportFormatError(
        f"{doc.path}: not a transcript format contextwarden recognizes; "
        f"force one with --format (one of: {', '.join(TRANSCRIPT_FORMATS)})"
    )


def _sniff_records(records: Sequence[dict[str, Any]]) -> str | None:
    for record in records:
        kind = record.get("type")
        kind = kind if isinstance(kind, str) else None
        if kind in _CODEX_ENVELOPES and "payload" in record:
            return "codex"
        if kind in ("user", "assistant") and isinstance(record.get("message"), dict):
            return "claude-code"
        if kind == "system" and record.get("subtype") in ("init", "compact_boundary"):
            return "claude-code"
        if kind in ("summary", "file-history-snapshot"):
            return "claude-code"
        if "record_type" in record:
            return "codex"
        if kind in codex.ITEM_TYPES and ("role" in record or "call_id" in record or kind == "reasoning"):
            return "codex"
    if records and all(isinstance(r.get("role"), str) for r in records):
        return _sniff_messages(records, {})
    if any(_is_openhands_event(r) for r in records):
        return "openhands"
    return None


def _sniff_document(document: Any) -> str | None:
    if isinstance(document, dict):
        if isinstance(document.get("history"), list) and any(
            k in document for k in ("trajectory", "info", "environment")
        ):
            return "swe-agent"
        messages = document.get("messages")
        if isinstance(messages, list):
            return "mini-swe-agent" if _is_mini(document) else _sniff_messages(messages, document)
        events = document.get("events")
        if isinstance(events, list) and any(_is_openhands_event(e) for e in events[:_SAMPLE]):
            return "openhands"
        # A JSON Lines transcript with a single line parses as one object.
        return _sniff_records([document])
    if isinstance(document, list):
        items = [item for item in document[:_SAMPLE] if isinstance(item, dict)]
        if any(_is_openhands_event(item) for item in items):
            return "openhands"
        if items and all(isinstance(item.get("role"), str) for item in items):
            return _sniff_messages(document, {})
    return None


def _is_openhands_event(item: Any) -> bool:
    return openhands_sdk.is_sdk_event(item) or (
        isinstance(item, dict)
        and (isinstance(item.get("action"), str) or isinstance(item.get("observation"), str))
        and ("source" in item or "tool_call_metadata" in item or "cause" in item)
    )


def _is_mini(document: dict[str, Any]) -> bool:
    trajectory_format = document.get("trajectory_format")
    if isinstance(trajectory_format, str) and trajectory_format.startswith("mini-swe-agent"):
        return True
    info = document.get("info")
    if isinstance(info, dict) and ("mini_version" in info or {"model_stats", "exit_status"} <= info.keys()):
        return True
    return any(isinstance(m, dict) and isinstance(m.get("extra"), dict) for m in document["messages"][:_SAMPLE])


def _sniff_messages(messages: Sequence[Any], root: Mapping[str, Any]) -> str:
    """Tell OpenAI Chat from Anthropic Messages by what only one of them has."""
    if "system" in root:
        return "anthropic-messages"
    items = [m for m in messages[:_SAMPLE] if isinstance(m, dict)]
    roles = {m["role"] for m in items if isinstance(m.get("role"), str)}
    if roles & {"system", "developer", "tool", "function"}:
        return "openai-chat"
    if any(m.get("tool_calls") or m.get("function_call") for m in items):
        return "openai-chat"
    block_types = {
        block["type"]
        for m in items
        if isinstance(m.get("content"), list)
        for block in m["content"]
        if isinstance(block, dict) and isinstance(block.get("type"), str)
    }
    if block_types & {"tool_use", "tool_result", "thinking", "redacted_thinking", "image", "document"}:
        return "anthropic-messages"
    return "openai-chat"
