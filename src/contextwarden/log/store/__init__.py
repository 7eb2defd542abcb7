"""Session stores: the append-only event log behind every session.

``open_store`` picks one from a URL; the ``SessionStore`` Protocol is what the rest of the library
relies on. PostgreSQL needs the ``postgres`` extra (psycopg 3).
"""

from __future__ import annotations

import os

from ...errors import UsageError
from ._protocol import CheckpointStore, SessionInfo, SessionStore, StoredCheckpoint
from ._shared import count_kinds
from .jsonl import export_jsonl, import_jsonl
from .memory import MemoryStore
from .postgres import PostgresStore
from .sqlite import SQLiteStore

DEFAULT_SQLITE_PATH = os.path.join(".contextwarden", "sessions.db")
"""Where the embedded store lives, relative to the working directory."""


def open_store(url: str | None = None) -> SessionStore:
    """Open the store ``url`` names.

    - ``None``: SQLite at ``.contextwarden/sessions.db`` under the working directory;
    - ``postgresql://...`` or ``postgres://...``: PostgreSQL (needs ``contextwarden[postgres]``);
    - ``memory:``: a fresh in-memory store;
    - ``sqlite:///path`` (SQLAlchemy's spelling) or any other string: a SQLite file at that path.
    """
    if url is None:
        return SQLiteStore(os.path.join(os.getcwd(), DEFAULT_SQLITE_PATH))
    if not isinstance(url, str) or not url:
        raise UsageError(f"store URL must be a non-empty string, got {url!r}")
    if url.startswith(("postgresql://", "postgres://")):
        return PostgresStore(url)
    if url in ("memory:", "memory://"):
        return MemoryStore()
    if url.startswith("sqlite:///"):
        # SQLAlchemy's spelling: sqlite:///relative.db, sqlite:////absolute.db
        return SQLiteStore(url[len("sqlite:///") :])
    return SQLiteStore(url)


__all__ = [
    "DEFAULT_SQLITE_PATH",
    "CheckpointStore",
    "MemoryStore",
    "PostgresStore",
    "SQLiteStore",
    "SessionInfo",
    "SessionStore",
    "StoredCheckpoint",
    "count_kinds",
    "export_jsonl",
    "import_jsonl",
    "open_store",
]
