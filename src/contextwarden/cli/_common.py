"""Helpers every subcommand shares: opening the store, printing JSON."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])

STORE_ENV = "CONTEXTWARDEN_STORE"


def store_option(func: F) -> F:
    """Add ``--store URL`` (a SQLite path or a ``postgresql://`` DSN; default ``.contextwarden/sessions.db``)."""
    return click.option(
        "--store",
        "store_url",
        default=None,
        envvar=STORE_ENV,
        help="Session store: a SQLite file path or a postgresql:// DSN "
        "(default: .contextwarden/sessions.db; env CONTEXTWARDEN_STORE).",
    )(func)


def echo_json(data: Any) -> None:
    """Print ``data`` as indented JSON on stdout."""
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")


def default_store_url() -> str:
    """The store a command uses when none is given."""
    return os.environ.get(STORE_ENV) or os.path.join(".contextwarden", "sessions.db")
