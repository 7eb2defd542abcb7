"""Which session a request belongs to.

A client resends its whole history on every call, so the proxy must find the session from the
request itself. In order:

1. an explicit ``x-contextwarden-session`` header;
2. the client's own session id: Claude Code's ``x-claude-code-session-id`` header, then Anthropic
   ``metadata.user_id``; Codex's ``session_id`` / ``conversation_id`` headers, then OpenAI
   ``prompt_cache_key``. One client session can hold several *lanes* (the main conversation, a
   title request, a subagent): a lane is picked by the history it extends, else by its system prompt;
3. else the longest stored history the request extends, matched by a chain of message digests.

Histories are matched only at a point where the assistant spoke: the chain is stored with the
model's reply appended (:meth:`SessionIndex.remember`), so two sessions of one project that open
with the same user message still part at their first, different reply, and a first message is
never an identity. Every scope is namespaced by a salted hash of the caller's credential, so one
key's history is never projected into another key's request.

Each worker also keeps the prefixes it remembered in memory. A request whose history extends one of
them up to its last assistant message cannot extend anything longer in the table, so it is
identified without a query; that is the usual request of a session, and the lookup stays flat in
the session's length.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..log.store import committing_asynchronously
from ..log.store.postgres import asynchronous_statement
from ._db import ProxyDB

EXPLICIT_HEADER = "x-contextwarden-session"
CLIENT_ID_HEADERS = ("x-claude-code-session-id", "session_id", "conversation_id", "session-id")
"""Headers clients put their own session id in (Claude Code, then Codex's spellings)."""

MEMO_ENTRIES = 65536
"""Prefixes each worker keeps in memory (the least recently used is forgotten first)."""


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def namespace(credential: str, salt: str) -> str:
    """The caller's namespace: a salted hash of its credential, never the credential itself."""
    return _digest(f"{salt}\x00{credential}")[:16]


def client_session_id(headers: Mapping[str, str], body: Mapping[str, Any]) -> str:
    """The client's own session id from its headers or body, or empty when it sends none."""
    for name in CLIENT_ID_HEADERS:
        if headers.get(name):
            return f"{name}={headers[name]}"
    metadata = body.get("metadata")
    if isinstance(metadata, Mapping) and isinstance(metadata.get("user_id"), str) and metadata["user_id"]:
        user_id = metadata["user_id"]
        inner = _json_session_id(user_id)
        # Claude Code now writes a JSON object here whose session id is the one its header carries
        return f"{CLIENT_ID_HEADERS[0]}={inner}" if inner else f"user_id={user_id}"
    key = body.get("prompt_cache_key")
    if isinstance(key, str) and key:
        return f"prompt_cache_key={key}"
    return ""


def _json_session_id(text: str) -> str:
    """The ``session_id`` of a JSON object written as a string, or empty."""
    if not text.startswith("{"):
        return ""
    try:
        value = json.loads(text)
    except ValueError:
        return ""
    inner = value.get("session_id") if isinstance(value, dict) else None
    return inner if isinstance(inner, str) else ""


def history_chain(root: str, digests: Sequence[str]) -> list[str]:
    """Chained digests of every prefix of a history: ``chain[k]`` names its first ``k + 1`` messages."""
    chain: list[str] = []
    head = _digest(root)
    for item in digests:
        head = _link(head, item)
        chain.append(head)
    return chain


def continued(root: str, chain: Sequence[str], item: str) -> str:
    """The chain digest of ``chain``'s history followed by one more message digested as ``item``."""
    return _link(chain[-1] if chain else _digest(root), item)


def _link(head: str, item: str) -> str:
    return hashlib.sha256(f"{head}{item}".encode()).hexdigest()


@dataclass(frozen=True, kw_only=True)
class Identity:
    """Where a request belongs."""

    session_id: str
    """The store's session id."""
    scope: str
    """The namespaced scope the session lives in."""
    how: str
    """``explicit``, ``extends``, ``lane`` (a client session's lane by system prompt) or ``new``."""

    @property
    def task(self) -> str:
        """What spending is counted under: the client's own session (all its lanes) when it names one, else this one."""
        client_named = self.how != "explicit" and not self.scope.endswith("/")
        return self.scope if client_named else self.session_id


class SessionIndex:
    """Maps requests to sessions through the proxy's tables (shared by every worker on one database)."""

    def __init__(self, db: ProxyDB, *, salt: str) -> None:
        """Use ``db``; ``salt`` keys the credential hash."""
        self.db = db
        self.salt = salt
        self._memo: OrderedDict[tuple[str, str], str] = OrderedDict()
        self._memo_lock = threading.Lock()

    def identify(
        self,
        *,
        credential: str,
        headers: Mapping[str, str],
        body: Mapping[str, Any],
        root: str,
        chain: Sequence[str],
        reach: int | None = None,
    ) -> Identity:
        """The session of a request whose system prompt digests to ``root`` and history to ``chain``.

        ``reach`` is the length of the history up to its last assistant message: the longest prefix
        a session can be remembered by (``None``: unknown, the table is always asked).
        """
        found = self.find(credential=credential, headers=headers, body=body, root=root, chain=chain, reach=reach)
        if found is not None:
            return found
        scope = self._scope(credential, headers, body)
        session_id = f"px-{namespace(credential, self.salt)}-{uuid.uuid4().hex[:24]}"
        self.db.execute(
            "INSERT INTO contextwarden_proxy_lanes (session_id, scope, root, updated_at) VALUES (?, ?, ?, ?)",
            (session_id, scope, root, time.time()),
        )
        return Identity(session_id=session_id, scope=scope, how="new")

    def find(
        self,
        *,
        credential: str,
        headers: Mapping[str, str],
        body: Mapping[str, Any],
        root: str,
        chain: Sequence[str],
        reach: int | None = None,
    ) -> Identity | None:
        """Like :meth:`identify`, but ``None`` instead of a new session (nothing is written)."""
        ns = namespace(credential, self.salt)
        explicit = headers.get(EXPLICIT_HEADER, "")
        if explicit:
            return Identity(session_id=f"px-{ns}-{_digest(explicit)[:24]}", scope=f"{ns}/x", how="explicit")
        scope = self._scope(credential, headers, body)
        found = self._recalled(scope, chain, reach) or self._longest(scope, chain)
        if found is not None:
            return Identity(session_id=found, scope=scope, how="extends")
        if client_session_id(headers, body):
            rows = self.db.execute(
                "SELECT session_id FROM contextwarden_proxy_lanes WHERE scope = ? AND root = ? "
                "ORDER BY updated_at DESC LIMIT 1",
                (scope, root),
            )
            if rows:
                return Identity(session_id=str(rows[0][0]), scope=scope, how="lane")
        return None

    def _scope(self, credential: str, headers: Mapping[str, str], body: Mapping[str, Any]) -> str:
        ns = namespace(credential, self.salt)
        client = client_session_id(headers, body)
        return f"{ns}/{_digest(client)[:24]}" if client else f"{ns}/"

    def _recalled(self, scope: str, chain: Sequence[str], reach: int | None) -> str | None:
        """The session this worker remembered for ``chain`` up to ``reach``, if it did."""
        if reach is None or not 0 < reach <= len(chain):
            return None
        with self._memo_lock:
            found = self._memo.get((scope, chain[reach - 1]))
            if found is not None:
                self._memo.move_to_end((scope, chain[reach - 1]))
        return found

    def note(self, identity: Identity, digest: str) -> None:
        """Remember in this worker's memory (only) that ``identity``'s session continues from ``digest``."""
        with self._memo_lock:
            self._memo[(identity.scope, digest)] = identity.session_id
            self._memo.move_to_end((identity.scope, digest))
            while len(self._memo) > MEMO_ENTRIES:
                self._memo.popitem(last=False)

    def _longest(self, scope: str, chain: Sequence[str]) -> str | None:
        if not chain:
            return None
        # one indexed lookup per 500 digests, longest first: a 2,000-message history is 4 queries at most
        for end in range(len(chain), 0, -500):
            part = chain[max(0, end - 500) : end]
            marks = ",".join("?" * len(part))
            rows = self.db.execute(
                f"SELECT session_id, length FROM contextwarden_proxy_prefixes WHERE scope = ? AND digest IN ({marks}) "
                "ORDER BY length DESC LIMIT 1",
                (scope, *part),
            )
            if rows:
                return str(rows[0][0])
        return None

    def remember(self, identity: Identity, digest: str, length: int) -> None:
        """Record that ``identity``'s session continues from a ``length``-message history digesting to ``digest``."""
        self.note(identity, digest)
        insert = (
            "INSERT INTO contextwarden_proxy_prefixes (scope, digest, length, session_id) VALUES (?, ?, ?, ?) "
            "ON CONFLICT DO NOTHING"
        )
        update = "UPDATE contextwarden_proxy_lanes SET updated_at = ? WHERE session_id = ?"
        prefix, lane = (identity.scope, digest, length, identity.session_id), (time.time(), identity.session_id)
        if self.db.postgres:  # one statement, one round trip: the answer's last byte waits for it
            statement = f"WITH remembered AS ({insert}) {update}"
            self.db.execute(
                asynchronous_statement(statement) if committing_asynchronously() else statement, (*prefix, *lane)
            )
            return
        self.db.execute(insert, prefix)
        self.db.execute(update, lane)
