"""Fixtures shared by the test suite: real PostgreSQL when configured, a real headless Chromium."""

from __future__ import annotations

import os
import shutil
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

_TESTS = str(Path(__file__).resolve().parent)
if _TESTS not in sys.path:  # the shared helpers (tests/_*.py) import by name from every folder under tests/
    sys.path.insert(0, _TESTS)

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


# --------------------------------------------------------------------------- a real browser

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync", "--window-size=1400,1000",
)  # fmt: skip


def _binary(path: str, name: str) -> str:
    if Path(path).exists():
        return path
    found = shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed (apt-get install chromium chromium-driver)")
    return found


@pytest.fixture(scope="module")
def driver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed: pip install selenium")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = _binary(CHROMIUM, "chromium")
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    d = webdriver.Chrome(service=Service(_binary(CHROMEDRIVER, "chromedriver")), options=options)
    d.set_page_load_timeout(60)
    try:
        yield d
    finally:
        d.quit()
