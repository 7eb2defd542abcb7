"""Projection checkpoints in a SQL store, kept as pieces so a save writes only what changed.

A checkpoint of a long window is megabytes of JSON, and a session saves one every 64 events
(:mod:`contextwarden.assemble.checkpoints`); rewriting it whole made the database write the
largest part of a save. So a checkpoint is stored cut where its writer says
(:attr:`StoredCheckpoint.pieces`: the window's items, calls and tool records in runs that
seldom change), each piece once under its SHA-256, and the checkpoint row lists its pieces in
order. A save inserts the pieces the session's checkpoint of that key does not hold yet and
drops those it no longer uses. Reading joins them back: the text is exactly the one saved, and
a missing piece makes the checkpoint absent (the window is rebuilt), never wrong.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any

from ._protocol import SessionInfo, StoredCheckpoint

__all__ = ["CheckpointSQL", "cut", "pieces_migration"]

Cursor = Any


def pieces_migration(checkpoints: str, pieces: str) -> tuple[str, ...]:
    """The schema change that keeps checkpoints in pieces (the same SQL in both dialects)."""
    return (
        f"""CREATE TABLE {pieces} (
            session_id TEXT NOT NULL,
            key TEXT NOT NULL,
            digest TEXT NOT NULL,
            data TEXT NOT NULL,
            PRIMARY KEY (session_id, key, digest)
        )""",
        f"ALTER TABLE {checkpoints} ADD COLUMN pieces TEXT NOT NULL DEFAULT '[]'",
    )


def cut(data: str, offsets: Sequence[int]) -> list[str]:
    """``data`` cut at ``offsets`` (out of range or unordered ones are skipped); the pieces join to ``data``."""
    pieces: list[str] = []
    start = 0
    for offset in offsets:
        if start < offset < len(data):
            pieces.append(data[start:offset])
            start = offset
    pieces.append(data[start:])
    return pieces


def _digest(piece: str) -> str:
    return hashlib.sha256(piece.encode("utf-8", "surrogatepass")).hexdigest()


class CheckpointSQL:
    """The checkpoint methods of :class:`~contextwarden.log.store._sql.SQLStore` (a mixin)."""

    dialect: Any  # the store's Dialect

    def _transaction(self, *, write: bool, asynchronous: bool = False) -> AbstractContextManager[Cursor]:
        raise NotImplementedError

    def _get_info(self, cur: Cursor, session_id: str, *, lock: str = "") -> SessionInfo:
        raise NotImplementedError

    def save_checkpoint(self, session_id: str, checkpoint: StoredCheckpoint) -> None:
        """Store ``checkpoint``, replacing the session's one of the same key; ``SessionNotFound`` if absent."""
        d, p = self.dialect, self.dialect.param
        c = checkpoint
        pieces = cut(c.data, c.pieces)
        order = [_digest(piece) for piece in pieces]
        with self._transaction(write=True) as cur:
            self._get_info(cur, session_id, lock=d.lock_fork)  # a deleted session keeps no checkpoint
            where = f"session_id = {p} AND key = {p}"
            held = {row[0] for row in cur.execute(f"SELECT digest FROM {d.pieces} WHERE {where}", (session_id, c.key))}
            new = {digest: piece for digest, piece in zip(order, pieces, strict=True) if digest not in held}
            if new:
                cur.executemany(
                    f"INSERT INTO {d.pieces} (session_id, key, digest, data) VALUES ({p}, {p}, {p}, {p})",
                    [(session_id, c.key, digest, piece) for digest, piece in new.items()],
                )
            unused = held.difference(order)
            if unused:
                cur.executemany(
                    f"DELETE FROM {d.pieces} WHERE {where} AND digest = {p}",
                    [(session_id, c.key, digest) for digest in unused],
                )
            cur.execute(
                f"INSERT INTO {d.checkpoints} (session_id, key, seq, event_id, digest, data, pieces) "
                f"VALUES ({p}, {p}, {p}, {p}, {p}, '', {p}) ON CONFLICT (session_id, key) DO UPDATE SET "
                "seq = excluded.seq, event_id = excluded.event_id, digest = excluded.digest, data = excluded.data, "
                "pieces = excluded.pieces",
                (session_id, c.key, c.seq, c.event_id, c.digest, json.dumps(order)),
            )

    def load_checkpoint(self, session_id: str, key: str) -> StoredCheckpoint | None:
        """The session's checkpoint of ``key``, if one is stored (None if a piece of it is missing)."""
        d, p = self.dialect, self.dialect.param
        with self._transaction(write=False) as cur:
            row = cur.execute(
                f"SELECT seq, event_id, digest, data, pieces FROM {d.checkpoints} WHERE session_id = {p} AND key = {p}",
                (session_id, key),
            ).fetchone()
            if row is None:
                return None
            seq, event_id, digest, data, listed = row
            order = json.loads(listed)
            if order:
                held = dict(
                    cur.execute(
                        f"SELECT digest, data FROM {d.pieces} WHERE session_id = {p} AND key = {p}", (session_id, key)
                    ).fetchall()
                )
                if not all(piece in held for piece in order):
                    return None
                data = "".join(held[piece] for piece in order)
        return StoredCheckpoint(key=key, seq=int(seq), event_id=str(event_id), digest=str(digest), data=str(data))

    def delete_checkpoints(self, session_id: str) -> None:
        """Drop every checkpoint of the session (builds get slower, never different)."""
        with self._transaction(write=True) as cur:
            self._delete_checkpoints(cur, session_id)

    def _delete_checkpoints(self, cur: Cursor, session_id: str) -> None:
        d, p = self.dialect, self.dialect.param
        cur.execute(f"DELETE FROM {d.pieces} WHERE session_id = {p}", (session_id,))
        cur.execute(f"DELETE FROM {d.checkpoints} WHERE session_id = {p}", (session_id,))
