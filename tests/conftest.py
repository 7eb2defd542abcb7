"""Fixtures shared by the test suite: real PostgreSQL when configured."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

PG_ENV = "CONTEXTWARDEN_PG_DSN"
PG_REQUIRED_ENV = "CONTEXTWARDEN_PG_REQUIRED"
_START_HINT = 'start one with: export CONTEXTWARDEN_PG_DSN="$(bash scripts/pg.sh start)"'


def _unavailable(reason: str) -> None:
    # CI sets CONTEXTWARDEN_PG_REQUIRED after starting a server: there a missing server is a failure
    if os.environ.get(PG_REQUIRED_ENV):
        pytest.fail(f"{reason} (and {PG_REQUIRED_ENV} is set)")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def pg_dsn() -> str:
    """Return the DSN of a reachable PostgreSQL server from CONTEXTWARDEN_PG_DSN, or skip saying why."""
    dsn = os.environ.get(PG_ENV, "")
    if not dsn:
        _unavailable(f"{PG_ENV} is not set; {_START_HINT}")
    try:
        import psycopg
    except ImportError:
        _unavailable("psycopg is not installed: pip install 'contextwarden[postgres]'")
    try:
        psycopg.connect(dsn, connect_timeout=5).close()
    except psycopg.Error as exc:
        _unavailable(f"PostgreSQL at {PG_ENV} is unreachable ({' '.join(str(exc).split())}); {_START_HINT}")
    return dsn


@pytest.fixture
def pg_schema_dsn(pg_dsn: str) -> Iterator[str]:
    """A DSN whose search_path is a fresh schema, dropped after the test: each test gets empty tables."""
    import psycopg
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    schema = f"cwtest_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    if pg_dsn.startswith(("postgresql://", "postgres://")) and "options=" not in pg_dsn:
        # stay a URL, so open_store() still recognizes it
        dsn = f"{pg_dsn}{'&' if '?' in pg_dsn else '?'}options=-csearch_path%3D{schema}"
    else:
        params = conninfo_to_dict(pg_dsn)
        params["options"] = f"{params.get('options', '')} -csearch_path={schema}".strip()
        dsn = make_conninfo("", **params)
    try:
        yield dsn
    finally:
        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")
