"""Who may read what the proxy recorded, and the salt that keys each caller's namespace.

A caller reads the stats and the live page with the credential it uses for the provider, in the
header it uses for it (``x-api-key``, ``Authorization: Bearer``, ``x-goog-api-key``). It sees the
sessions of that credential only: every proxy session id starts ``px-<namespace>-``, and the
namespace is a salted hash of the credential (:func:`.identity.namespace`). An operator token
(:attr:`.settings.ProxySettings.admin_token`) sees every session, and the rows of requests that
never reached a session (a fall-back before identification).

The salt is random per deployment: the first proxy to open a store writes one into the store's
``contextwarden_proxy_meta`` table, and every later worker on that store reads the same one. A
configured salt (``CONTEXTWARDEN_PROXY_SALT``) takes precedence. A store that already holds proxy
sessions when its salt is first chosen was written under the old public default salt
(``contextwarden``): it gets a random salt too (so nothing new is hashed with a public salt), and the
old salt is kept beside it as ``legacy_salt`` only so that each caller still sees its own earlier
sessions. Those earlier sessions are not continued: the client's next request starts a new session,
ingested from the history it resends.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Iterable
from dataclasses import dataclass

from . import forward
from ._db import ProxyDB
from .identity import namespace

LEGACY_SALT = "contextwarden"
"""The salt every store used before each deployment got its own."""

_META = "CREATE TABLE IF NOT EXISTS contextwarden_proxy_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"


def _meta(db: ProxyDB, key: str) -> str | None:
    rows = db.execute("SELECT value FROM contextwarden_proxy_meta WHERE key = ?", (key,))
    return str(rows[0][0]) if rows else None


def _put(db: ProxyDB, key: str, value: str) -> None:
    db.execute("INSERT INTO contextwarden_proxy_meta (key, value) VALUES (?, ?) ON CONFLICT DO NOTHING", (key, value))


def deployment_salts(db: ProxyDB) -> tuple[str, tuple[str, ...]]:
    """The store's salt (written now when it has none) and the older salts its sessions may carry.

    Several workers opening one store at once agree: the first insert wins and all read it back.
    """
    db.execute(_META)
    salt = _meta(db, "salt")
    if salt is None:
        used = db.execute("SELECT 1 FROM contextwarden_proxy_lanes LIMIT 1") or db.execute(
            "SELECT 1 FROM contextwarden_proxy_ledger LIMIT 1"
        )
        if used:  # written before the store kept a salt: under the public default
            _put(db, "legacy_salt", LEGACY_SALT)
        _put(db, "salt", secrets.token_hex(16))
        salt = _meta(db, "salt")
    assert salt is not None
    legacy = _meta(db, "legacy_salt")
    return salt, (legacy,) if legacy else ()


@dataclass(frozen=True)
class Viewer:
    """One reader of the proxy's records."""

    everyone: bool
    """The operator: every session, and rows without one."""
    prefixes: tuple[str, ...] = ()
    """Session id prefixes of the reader's own namespaces (one per salt its sessions may carry)."""

    def sees(self, session_id: str) -> bool:
        """Whether this reader may see ``session_id``."""
        return self.everyone or (bool(session_id) and session_id.startswith(self.prefixes))


class Access:
    """Decides which sessions a request's credential may read."""

    def __init__(self, *, salt: str, legacy_salts: tuple[str, ...] = (), admin_token: str | None = None) -> None:
        """Callers' namespaces are hashed with ``salt`` (and, for older sessions, ``legacy_salts``)."""
        self.salts = (salt, *legacy_salts)
        self.admin_token = admin_token or None

    def viewer(self, headers: Iterable[tuple[str, str]]) -> Viewer:
        """The reader a request's headers name.

        The credential counts whichever way it is spelled (``Bearer`` or bare), so a key typed
        into the live page finds the sessions its client made through any header. A request
        without a credential reads the sessions made without one.
        """
        credential = forward.credential(headers)
        bare = credential[7:].strip() if credential.lower().startswith("bearer ") else credential.strip()
        if self.admin_token and hmac.compare_digest(bare.encode(), self.admin_token.encode()):
            return Viewer(everyone=True)
        spellings = {bare, f"Bearer {bare}"} if bare else {""}
        return Viewer(
            everyone=False,
            prefixes=tuple(sorted(f"px-{namespace(c, s)}-" for c in spellings for s in self.salts)),
        )
