"""Persisted projection checkpoints: how a fresh manager resumes a window instead of re-folding it.

A stateless worker (or a proxy behind a load balancer) builds every request with a new manager,
so without a checkpoint it projects the whole window again on every call. Builds save the
projection (:mod:`contextwarden.window.checkpoint`) to a store that can keep checkpoints
(:class:`~contextwarden.log.store.CheckpointStore`) once it has moved on by
:data:`CHECKPOINT_EVERY` events; a cold build loads it and folds only the events after it.

A checkpoint is used only when all of these hold, else the window is rebuilt from the log:

- its key matches: the policy in force (by value), the token counter, this package's version (with
  a digest of the code that projects, so an edited checkout counts as another version), the
  checkpoint format and the event schema, all hashed into the key;
- its data matches its SHA-256 digest and decodes;
- the event it says it covers last is still in the log, at that seq, with that id;
- no compaction came after it (a compaction opens a new window, which is rebuilt).
"""

from __future__ import annotations

import functools
import hashlib
import json
from importlib import metadata
from pathlib import Path

from ..errors import CodecError
from ..log.codec import EVENT_SCHEMA_VERSION, event_from_dict, event_to_dict
from ..log.events import Compaction, Event, SettingChange
from ..log.store._protocol import CheckpointStore, SessionStore, StoredCheckpoint
from ..plan.policy import ContextPolicy, policy_to_dict
from ..tokens import TokenCounter
from ..window.checkpoint import CHECKPOINT_FORMAT, CheckpointError, FragmentMemo, dumps_pieces, loads_projection
from ..window.ingest import ProjectionConfig
from ..window.projection import Projection

__all__ = ["CHECKPOINT_EVERY", "checkpoint_key", "load_checkpoint", "save_checkpoint"]

CHECKPOINT_EVERY = 64
"""Events a window moves on by before a build saves a new checkpoint: a cold build folds at most
about this many, and a session's builds write a checkpoint once per this many events, not per call."""


_PROJECTING_CODE = ("window", "log", "tokens", "context.py", "fragments.py", "pairing.py")
"""The parts of the package a projection is computed by (relative to the package root)."""


@functools.cache
def _package_version() -> str:
    """The release, and a digest of the code that projects: an edited checkout is another version too."""
    try:
        release = metadata.version("contextwarden")
    except metadata.PackageNotFoundError:
        release = "unknown"
    root = Path(__file__).resolve().parent.parent
    code = hashlib.sha256()
    for name in _PROJECTING_CODE:
        path = root / name
        for source in sorted(path.rglob("*.py")) if path.is_dir() else [path]:
            code.update(str(source.relative_to(root)).encode())
            code.update(source.read_bytes())
    return f"{release}+{code.hexdigest()[:16]}"


def checkpoint_key(policy: ContextPolicy, counter: TokenCounter, *, version: str | None = None) -> str:
    """The key of a checkpoint made under ``policy`` and ``counter`` by this release (``version``: the package's)."""
    material = {
        "policy": policy_to_dict(policy),
        "counter": counter.name,
        "package": _package_version() if version is None else version,
        "format": CHECKPOINT_FORMAT,
        "schema": EVENT_SCHEMA_VERSION,
    }
    # repr for a value JSON cannot hold: an object's repr names its address, so such a key never matches
    text = json.dumps(material, sort_keys=True, separators=(",", ":"), default=repr)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def save_checkpoint(
    store: SessionStore,
    session_id: str,
    key: str,
    projection: Projection,
    settings: SettingChange | None,
    *,
    memo: FragmentMemo | None = None,
) -> bool:
    """Save ``projection`` (and the build settings last recorded, ``settings``); False if there is nothing to save.

    ``projection`` must be caught up with the log: it covers every event up to its ``last_seq``.
    ``memo`` is the window's (see :func:`~contextwarden.window.checkpoint.dumps_projection`).
    """
    if not isinstance(store, CheckpointStore) or projection.last_seq == 0:
        return False
    last = store.read(session_id, since_seq=projection.last_seq - 1)
    if not last or last[0].seq != projection.last_seq:
        return False
    annex = {"settings": None if settings is None else event_to_dict(settings)}
    try:
        data, pieces = dumps_pieces(projection, annex=annex, memo=memo)
    except (CheckpointError, CodecError):
        return False  # a part this release cannot write: builds stay correct, only not faster
    digest = hashlib.sha256(data.encode("utf-8")).hexdigest()
    stored = StoredCheckpoint(key=key, seq=last[0].seq, event_id=last[0].id, digest=digest, data=data, pieces=pieces)
    store.save_checkpoint(session_id, stored)
    return True


def load_checkpoint(
    store: SessionStore, session_id: str, key: str, config: ProjectionConfig
) -> tuple[Projection, SettingChange | None, list[Event]] | None:
    """The session's window resumed from its checkpoint and caught up.

    Also the build settings last recorded up to the checkpoint, and the events folded after it.
    None when there is no usable checkpoint (see the module docstring): the caller rebuilds.
    """
    if not isinstance(store, CheckpointStore):
        return None
    stored = store.load_checkpoint(session_id, key)
    if stored is None or stored.seq < 1:
        return None
    if hashlib.sha256(stored.data.encode("utf-8", "surrogatepass")).hexdigest() != stored.digest:
        return None
    events = store.read(session_id, since_seq=stored.seq - 1)
    if not events or events[0].seq != stored.seq or events[0].id != stored.event_id:
        return None
    newer = events[1:]
    if any(isinstance(e, Compaction) for e in newer):
        return None
    try:
        projection, annex = loads_projection(stored.data, config)
        settings = _settings(annex.get("settings"))
    except (CheckpointError, CodecError):
        return None
    if projection.last_seq != stored.seq:
        return None
    for event in newer:
        projection.add(event)
    return projection, settings, newer


def _settings(raw: object) -> SettingChange | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise CheckpointError("the recorded build settings are not an object")
    event = event_from_dict(raw)
    if not isinstance(event, SettingChange):
        raise CheckpointError("the recorded build settings are not a setting change")
    return event
