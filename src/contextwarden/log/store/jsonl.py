"""Export a session to JSON Lines and import it back, losslessly.

The file is one session: an optional header line ``{"kind": "session", "format": ..., "id": ...,
"created_at": ..., "metadata": ..., "parent_session_id": ...}`` then one event per line, each
as :func:`~contextwarden.log.codec.dumps_event` writes it with ``ascii_only`` (ASCII JSON, so the file
reads the same under any locale and NUL bytes and undecodable text survive as escapes), with seq
1..n. A fork is exported with its shared prefix, so the file stands alone. Files written by older
releases (earlier event schema versions) import as they are.

An import is all or nothing: a bad line, an unknown kind, a missing field or a seq out of order
raises :class:`~contextwarden.errors.CodecError` naming the line, and nothing is stored.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator
from typing import IO, Any

from ...errors import CodecError
from ..codec import dumps_event, event_from_dict, loads_json
from ..events import Event, JSONValue
from ._protocol import SessionInfo, SessionStore
from ._shared import SupportsRestore, check_new_session_id, new_session_id

FORMAT = "contextwarden.session/1"
"""The header's ``format`` value; a file with another one is refused."""

_HEADER_FIELDS = frozenset({"kind", "format", "id", "created_at", "metadata", "parent_session_id", "fork_seq"})


def export_jsonl(store: SessionStore, session_id: str, fp: IO[str]) -> int:
    """Write ``session_id`` to ``fp`` as JSON Lines (header, then every event); return the event count."""
    info = store.get_session(session_id)
    header: dict[str, JSONValue] = {
        "kind": "session",
        "format": FORMAT,
        "id": info.id,
        "created_at": info.created_at,
        "metadata": info.metadata,
        "parent_session_id": info.parent_session_id,
        "fork_seq": info.fork_seq,
    }
    fp.write(json.dumps(header, ensure_ascii=True, separators=(",", ":")) + "\n")
    count = 0
    for event in store.iter_events(session_id):
        fp.write(dumps_event(event, ascii_only=True) + "\n")
        count += 1
    return count


def import_jsonl(store: SessionStore, fp: IO[str] | IO[bytes], *, session_id: str | None = None) -> SessionInfo:
    """Create a session from a file written by :func:`export_jsonl`, in one transaction.

    The session id is ``session_id`` if given, else the header's, else the first event's. Events
    keep their ids, kinds, payloads and seqs; ``SessionExists`` if the id is taken, and a
    ``UsageError`` if an event id is already in the store.
    """
    reader = _Lines(fp)
    first = reader.next_record()
    header = _header(first[1], first[0]) if first is not None and _is_header(first[1]) else None
    pending = None if header is not None else first
    if session_id is None:
        session_id = _default_id(header, pending)
    check_new_session_id(session_id)
    base = header or SessionInfo(id=session_id, created_at=time.time())
    target = SessionInfo(
        id=session_id,
        created_at=base.created_at,
        parent_session_id=base.parent_session_id,
        metadata=base.metadata,
    )
    events = _events(reader, pending)
    if isinstance(store, SupportsRestore):
        return store.restore_session(target, events)
    return _restore_by_protocol(store, target, events)


class _Lines:
    """Numbered, decoded, non-blank JSON records of a text or binary file."""

    def __init__(self, fp: IO[str] | IO[bytes]) -> None:
        self._it: Iterator[str | bytes] = iter(fp)
        self.line = 0

    def next_record(self) -> tuple[int, Any] | None:
        for raw in self._it:
            self.line += 1
            if isinstance(raw, bytes):
                try:
                    raw = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise CodecError(f"line {self.line}: not UTF-8 ({exc.reason} at byte {exc.start})") from None
            if not raw.strip():
                continue
            try:
                return self.line, loads_json(raw)
            except CodecError as exc:
                raise CodecError(f"line {self.line}: {exc}") from None
        return None


def _is_header(record: Any) -> bool:
    return isinstance(record, dict) and record.get("kind") == "session"


def _header(record: dict[str, Any], line: int) -> SessionInfo:
    unknown = set(record) - _HEADER_FIELDS
    if unknown:
        raise CodecError(f"line {line}: session header has unknown field(s) {sorted(unknown)}")
    if record.get("format") != FORMAT:
        raise CodecError(f"line {line}: unsupported format {record.get('format')!r}; expected {FORMAT!r}")
    sid, created_at = record.get("id"), record.get("created_at")
    metadata, parent = record.get("metadata", {}), record.get("parent_session_id")
    if not isinstance(sid, str) or not isinstance(created_at, (int, float)) or isinstance(created_at, bool):
        raise CodecError(f"line {line}: session header needs a string 'id' and a numeric 'created_at'")
    if not isinstance(metadata, dict) or not (parent is None or isinstance(parent, str)):
        raise CodecError(f"line {line}: session header 'metadata' must be an object, 'parent_session_id' a string")
    return SessionInfo(id=sid, created_at=float(created_at), metadata=metadata, parent_session_id=parent)


def _default_id(header: SessionInfo | None, pending: tuple[int, Any] | None) -> str:
    if header is not None:
        return header.id
    if pending is not None and isinstance(pending[1], dict):
        sid = pending[1].get("session_id")
        if isinstance(sid, str) and sid:
            return sid
    return new_session_id()


def _events(reader: _Lines, pending: tuple[int, Any] | None) -> Iterator[Event]:
    """Decode every remaining record, checking what the codec cannot: order and uniqueness."""
    seen: set[str] = set()
    seq = 0
    record = pending if pending is not None else reader.next_record()
    while record is not None:
        line, raw = record
        if _is_header(raw):
            raise CodecError(f"line {line}: a session header may only be the first line")
        try:
            event = event_from_dict(raw)
        except CodecError as exc:
            raise CodecError(f"line {line}: {exc}") from None
        seq += 1
        if event.seq not in (0, seq):
            raise CodecError(f"line {line}: event has seq {event.seq}, expected {seq} (seq must be gapless from 1)")
        if event.id in seen:
            raise CodecError(f"line {line}: event id {event.id!r} appears twice in the file")
        seen.add(event.id)
        yield event
        record = reader.next_record()


def _restore_by_protocol(store: SessionStore, target: SessionInfo, events: Iterable[Event]) -> SessionInfo:
    """For stores without ``restore_session``: decode everything first, then one atomic append."""
    decoded = list(events)
    store.create_session(target.id, metadata=target.metadata, parent_session_id=target.parent_session_id)
    try:
        store.append(target.id, decoded, expected_last_seq=0)
    except BaseException:
        store.delete_session(target.id)
        raise
    return store.get_session(target.id)


__all__ = ["FORMAT", "export_jsonl", "import_jsonl"]
