"""Session stores: the append-only event log behind every session.

``open_store`` picks one from a URL; the ``SessionStore`` Protocol is what the rest of the library
relies on. PostgreSQL needs the ``postgres`` extra (psycopg 3).
"""

from __future__ import annotations

import os
import re

from ...errors import UsageError
from ._protocol import CheckpointStore, SessionInfo, SessionStore, StoredCheckpoint
from ._shared import check_new_session_id, count_kinds
from ._sql import asynchronous_commits, committing_asynchronously
from .jsonl import export_jsonl, import_jsonl
from .memory import MemoryStore
from .postgres import PostgresStore
from .sqlite import SQLiteStore

DEFAULT_SQLITE_PATH = os.path.join(".contextwarden", "sessions.db")
"""Where the embedded store lives, relative to the working directory."""

STORE_SCHEMES = ("postgresql://", "postgres://", "memory:", "sqlite:///")
"""The URL schemes :func:`open_store` knows; any other string is a SQLite file path."""

_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+-]+:")
"""What reads as a URL scheme: two characters or more, so a Windows drive (``C:``) is a path."""


def check_store_url(url: str) -> str:
    """Return ``url`` unless it starts with a scheme :func:`open_store` does not know (``UsageError``).

    ``memroy:`` is a typo, not a file to create; a file whose name has a colon is spelled ``./name``.
    """
    found = _SCHEME.match(url)
    if found and not url.startswith(STORE_SCHEMES) and url != "memory://":
        raise UsageError(
            f"unknown store URL scheme {found.group(0)!r} in {url!r}: use postgresql://..., memory:, "
            f"sqlite:///PATH or a file path (./{url} for a file whose name has a colon)"
        )
    return url


def open_store(url: str | None = None) -> SessionStore:
    """Open the store ``url`` names.

    - ``None``: SQLite at ``.contextwarden/sessions.db`` under the working directory;
    - ``postgresql://...`` or ``postgres://...``: PostgreSQL (needs ``contextwarden[postgres]``);
    - ``memory:``: a fresh in-memory store;
    - ``sqlite:///path`` (SQLAlchemy's spelling) or a path: a SQLite file at that path;
    - any other ``scheme:``: a ``UsageError`` listing these.
    """
    if url is None:
        return SQLiteStore(os.path.join(os.getcwd(), DEFAULT_SQLITE_PATH))
    if not isinstance(url, str) or not url:
        raise UsageError(f"store URL must be a non-empty string, got {url!r}")
    check_store_url(url)
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
    "asynchronous_commits",
    "check_new_session_id",
    "check_store_url",
    "committing_asynchronously",
    "count_kinds",
    "export_jsonl",
    "import_jsonl",
    "open_store",
]
