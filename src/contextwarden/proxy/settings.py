"""The proxy's configuration: one frozen dataclass, varied with ``dataclasses.replace``."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Literal

from ._db import DB_CONNECTIONS, LOCK_WAIT_SECONDS

Mode = Literal["manage", "observe"]

ANTHROPIC_UPSTREAM_ENV = "CONTEXTWARDEN_ANTHROPIC_UPSTREAM"
OPENAI_UPSTREAM_ENV = "CONTEXTWARDEN_OPENAI_UPSTREAM"
GEMINI_UPSTREAM_ENV = "CONTEXTWARDEN_GEMINI_UPSTREAM"
SALT_ENV = "CONTEXTWARDEN_PROXY_SALT"
ADMIN_TOKEN_ENV = "CONTEXTWARDEN_PROXY_ADMIN_TOKEN"


@dataclass(frozen=True, kw_only=True)
class ProxySettings:
    """How the proxy listens, where it forwards and what it does to requests."""

    mode: Mode = "manage"
    """``manage`` forwards the projection; ``observe`` forwards the client's bytes and records what it would send."""
    anthropic_upstream: str = "https://api.anthropic.com"
    """Base URL Anthropic-protocol requests (``/v1/messages...``) go to."""
    openai_upstream: str = "https://api.openai.com"
    """Base URL OpenAI-protocol requests (``/v1/chat/completions``, ``/v1/responses``, the rest) go to."""
    gemini_upstream: str = "https://generativelanguage.googleapis.com"
    """Base URL Gemini-protocol requests (``/v1beta/...``, ``/v1/models/{model}:...``) go to."""
    store_url: str | None = None
    """The session store (``None``: ``.contextwarden/sessions.db``; a ``postgresql://`` DSN for many workers)."""
    salt: str | None = None
    """Mixed into the hash of each caller's credential that namespaces its sessions (``None``: the
    random salt kept in the store, shared by every worker on it; :mod:`.access`)."""
    admin_token: str | None = None
    """An operator token: sent as a credential to the stats and the live page, it reads every
    session (``None``: each caller reads its own credential's sessions only)."""
    timeout: float = 600.0
    """Seconds to wait for the upstream (model calls can be long)."""
    policy: str | None = None
    """A task preset (``coding``, ``research``, ``browser`` or one registered) to plan under; ``None``:
    the ``proxy`` preset. Either way with the proxy's own settings (:func:`.policy.proxy_policy`)."""
    spend_limit: int | None = None
    """Weighted tokens (output plus uncached input at a quarter) one task may spend before the proxy
    refuses its requests (:mod:`.spend`); ``None``: no limit."""
    lock_wait: float = LOCK_WAIT_SECONDS
    """Seconds a SQLite statement waits for another process's write lock before the request falls
    back (the ledger's rows wait and are written once the lock is gone)."""
    db_connections: int = DB_CONNECTIONS
    """On a PostgreSQL store: connections the proxy opens for the session log, and as many for its
    own tables, so that concurrent requests' statements do not queue for one; with ``--workers N``
    each worker opens its share (:func:`.serve.worker_settings`)."""

    def upstream_for(self, path: str) -> str:
        """The base URL a request path is forwarded to (Anthropic's paths start ``/v1/messages``).

        Gemini's paths start with ``/v1beta/`` or ``/v1alpha/``, or name a model's method (``/v1/models/{model}:...``).
        """
        if path.startswith("/v1/messages"):
            base = self.anthropic_upstream
        elif path.startswith(("/v1beta/", "/v1alpha/", "/upload/v1beta/")) or (
            path.startswith("/v1/models/") and ":" in path
        ):
            base = self.gemini_upstream
        else:
            base = self.openai_upstream
        return base.rstrip("/")


def settings_from_env(**overrides: object) -> ProxySettings:
    """Settings from the environment (the ``*_ENV`` variables above), then ``overrides``."""
    values: dict[str, object] = {}
    if os.environ.get(ANTHROPIC_UPSTREAM_ENV):
        values["anthropic_upstream"] = os.environ[ANTHROPIC_UPSTREAM_ENV]
    if os.environ.get(OPENAI_UPSTREAM_ENV):
        values["openai_upstream"] = os.environ[OPENAI_UPSTREAM_ENV]
    if os.environ.get(GEMINI_UPSTREAM_ENV):
        values["gemini_upstream"] = os.environ[GEMINI_UPSTREAM_ENV]
    if os.environ.get(SALT_ENV):
        values["salt"] = os.environ[SALT_ENV]
    if os.environ.get(ADMIN_TOKEN_ENV):
        values["admin_token"] = os.environ[ADMIN_TOKEN_ENV]
    values.update({k: v for k, v in overrides.items() if v is not None})
    return ProxySettings(**values)  # type: ignore[arg-type]
