"""Event ids of an imported transcript, derived from the file's content so every reading gives the same ones.

A fresh random id per event made two replays of the same file differ: placeholders and truncation
markers name the event id (``read_range(artifact_id="...")``), and the token count of a random hex
string varies, so the figures moved between runs of the same code. Here the id of the event at
position ``n`` is a function of the file's SHA-256, a salt and ``n``:

- the same file always reads to the same ids (replay figures are repeatable);
- a different file gets different ids (the stores' ids are unique across sessions);
- a copy stored on purpose (``contextwarden import --as NAME``) passes its session name as the salt,
  so its ids differ from the first import's.

The ids keep the shape of :func:`~contextwarden.log.events.new_event_id` (a UUIDv7 as 32 hex digits): the
48 bits that hold the time there hold a hash of (content, salt) here, so one transcript's ids share a
prefix and sit side by side in the stores' unique-id index, and the other 74 bits are a hash of the
position. The shape matters for the figures too: placeholders render the id, so an id that tokenizes
unlike a live session's random hex (zero-padded counters, say) would skew every replay.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Sequence
from pathlib import Path

from ..log.events import Event, UsageReport


def file_sha256(path: str | Path) -> str:
    """SHA-256 of the file's bytes: what "the same transcript" means for ids and for import-once."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def stable_id(content_sha256: str, position: int, salt: str = "") -> str:
    """The id of the event at ``position`` (0-based) of the transcript with this content hash."""
    prefix = int(_sha256(f"{content_sha256}\0{salt}")[:12], 16)
    rand = int(_sha256(f"{content_sha256}\0{salt}\0{position}")[:20], 16)
    value = prefix << 80 | 0x7 << 76 | (rand >> 64 & 0xFFF) << 64 | 0b10 << 62 | rand & 0x3FFF_FFFF_FFFF_FFFF
    return f"{value:032x}"


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def with_stable_ids(events: Sequence[Event], content_sha256: str, salt: str = "") -> tuple[Event, ...]:
    """``events`` with ids derived from the content hash, the salt and their position.

    References between the events (a usage report's ``response_event_id``, a ``parent_id``) follow
    their targets to the new ids.
    """
    renamed = {event.id: stable_id(content_sha256, n, salt) for n, event in enumerate(events)}
    out: list[Event] = []
    for event in events:
        changes: dict[str, object] = {"id": renamed[event.id]}
        if event.parent_id is not None:
            changes["parent_id"] = renamed.get(event.parent_id, event.parent_id)
        if isinstance(event, UsageReport) and event.response_event_id:
            changes["response_event_id"] = renamed.get(event.response_event_id, event.response_event_id)
        out.append(dataclasses.replace(event, **changes))  # type: ignore[arg-type]
    return tuple(out)
