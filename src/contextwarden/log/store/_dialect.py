"""What one SQL database needs said differently: the parameter of the shared SQL core (:mod:`._sql`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class Dialect:
    """What one SQL database needs said differently."""

    name: str
    """How error messages name the database."""
    param: str
    """The driver's placeholder: ``?`` or ``%s``."""
    sessions: str
    """The sessions table."""
    events: str
    """The events table."""
    checkpoints: str
    """The projection checkpoints table (derived data, see :mod:`contextwarden.window.checkpoint`)."""
    pieces: str
    """The pieces the checkpoints are stored in (see :mod:`._sql_checkpoints`)."""
    migrations_table: str
    """Where applied schema versions are recorded."""
    creation_order: str
    """The column that orders sessions created in the same instant."""
    lock_append: str = ""
    """Appended to the read of a session's ``last_seq`` before an append (a row lock, if needed)."""
    lock_fork: str = ""
    """Appended to the read of a fork's parent (a share lock, if needed)."""
    rows_per_insert: int = 1
    """Event rows per ``INSERT`` statement of an append."""
    statement_commits: bool = False
    """Whether a statement outside a transaction block commits on its own, so a write of one statement
    needs no ``BEGIN`` and ``COMMIT`` (PostgreSQL's autocommit connections)."""
    migration_lock: str | None = None
    """A statement run first by a migration, so concurrent openers migrate one at a time."""
    migrations: tuple[tuple[int, tuple[str, ...]], ...] = ()
    """Schema versions and their statements, applied in order and recorded in ``migrations_table``."""
