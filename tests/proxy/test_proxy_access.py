"""Who may read the proxy's records: each caller its own credential's sessions, the operator all.

And the salt that keys those namespaces: random per store, shared by every worker on it, and what
happens to a store written under the old public default salt.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from _proxy import Rig, rig
from contextwarden.proxy._db import ProxyDB
from contextwarden.proxy.access import LEGACY_SALT, deployment_salts
from contextwarden.proxy.identity import namespace

ADMIN = "operator-secret-token"


def _ask(r: Rig, key: str, text: str = "hello") -> None:
    r.anthropic(key).messages.create(
        model="claude-sonnet-4-5", max_tokens=64, messages=[{"role": "user", "content": text}]
    )


def _stats(r: Rig, path: str = "/contextwarden/stats", **headers: str) -> Any:
    response = httpx.get(r.url + path, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


def _ids(stats: dict[str, Any]) -> set[str]:
    return {s["session_id"] for s in stats["sessions"]}


def test_each_caller_reads_only_its_own_sessions_and_the_operator_reads_all(tmp_path: Path) -> None:
    with rig(str(tmp_path / "s.db"), admin_token=ADMIN) as r:
        _ask(r, "key-a", "task of a")
        _ask(r, "key-b", "task of b")
        r.openai("sk-c").chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "task of c"}])
        everything = _stats(r, **{"x-api-key": ADMIN})
        assert len(everything["sessions"]) == 3 and everything["total"]["requests"] == 3
        mine = _stats(r, **{"x-api-key": "key-a"})
        (only,) = mine["sessions"]
        assert mine["total"]["requests"] == 1  # the total counts the caller's rows only
        theirs = _stats(r, **{"authorization": "Bearer key-b"})  # any credential header, any spelling
        assert len(theirs["sessions"]) == 1 and _ids(theirs) != _ids(mine)
        # the OpenAI client sent "Authorization: Bearer sk-c"; the bare key in x-api-key finds it too
        assert len(_stats(r, **{"x-api-key": "sk-c"})["sessions"]) == 1
        assert _stats(r)["sessions"] == []  # no credential: only sessions made without one (none here)
        assert _stats(r, **{"x-api-key": "key-z"})["total"]["requests"] == 0
        tagged = _stats(r, "/contextwarden/stats?taxonomy=1", **{"x-api-key": "key-a"})
        assert _ids(tagged) == _ids(mine)
        live = _stats(r, "/contextwarden/live/sessions", **{"x-api-key": "key-a"})
        assert live["stats"] == mine and not live["operator"]
        assert set(live["notes"]) == _ids(mine)
        # one session's detail: its owner and the operator read it; another key gets "no session"
        url = r.url + "/contextwarden/live/session"
        assert httpx.get(url, params={"id": only["session_id"]}, headers={"x-api-key": "key-a"}).status_code == 200
        assert httpx.get(url, params={"id": only["session_id"]}, headers={"x-api-key": ADMIN}).status_code == 200
        assert httpx.get(url, params={"id": only["session_id"]}, headers={"x-api-key": "key-b"}).status_code == 404
        assert httpx.get(url, params={"id": only["session_id"]}).status_code == 404


def test_without_an_operator_token_nobody_reads_every_session(tmp_path: Path) -> None:
    with rig(str(tmp_path / "s.db")) as r:
        _ask(r, "key-a")
        _ask(r, "key-b", "other")
        assert len(_stats(r, **{"x-api-key": "key-a"})["sessions"]) == 1
        assert _stats(r, **{"x-api-key": ""})["sessions"] == []


def test_the_salt_is_random_per_store_and_shared_by_every_worker_on_it(tmp_path: Path) -> None:
    one, two = str(tmp_path / "one.db"), str(tmp_path / "two.db")
    with rig(one) as r:
        _ask(r, "key-a")
        (first,) = _ids(_stats(r, **{"x-api-key": "key-a"}))
    with rig(one) as r:  # a second process on the same store
        _ask(r, "key-a", "another task")
        assert first in _ids(_stats(r, **{"x-api-key": "key-a"}))
        assert r.proxy.pipeline.salt == _salt(one)
    with rig(two) as r:
        _ask(r, "key-a")
    salt_one, salt_two = _salt(one), _salt(two)
    assert salt_one != salt_two and LEGACY_SALT not in (salt_one, salt_two) and len(salt_one) == 32
    # the session id carries the hash under the store's salt, not under the public default
    assert _under(first, "key-a", salt_one)
    assert not _under(first, "key-a", LEGACY_SALT)


def test_a_configured_salt_wins_over_the_stores(tmp_path: Path) -> None:
    store = str(tmp_path / "s.db")
    with rig(store, salt="configured-salt") as r:
        _ask(r, "key-a")
        (session,) = _ids(_stats(r, **{"x-api-key": "key-a"}))
    assert _under(session, "key-a", "configured-salt")


def test_a_store_written_under_the_old_default_salt_gets_a_new_one_and_keeps_its_ledger(tmp_path: Path) -> None:
    store = str(tmp_path / "old.db")
    with rig(store, salt=LEGACY_SALT) as r:  # what every store was before the salt was kept
        _ask(r, "key-a", "old task")
        _ask(r, "key-b", "old task of b")
        (old,) = _ids(_stats(r, **{"x-api-key": "key-a"}))
    with rig(store, admin_token=ADMIN) as r:
        salt = r.proxy.pipeline.salt
        assert salt != LEGACY_SALT
        _ask(r, "key-a", "new task")
        mine = _ids(_stats(r, **{"x-api-key": "key-a"}))
        assert old in mine and len(mine) == 2  # the old session stays readable by its own key...
        new = (mine - {old}).pop()
        assert _under(new, "key-a", salt)  # ...and new ones use the new salt
        assert len(_stats(r, **{"x-api-key": "key-b"})["sessions"]) == 1
        assert len(_stats(r, **{"x-api-key": ADMIN})["sessions"]) == 3
    assert _salt(store) == salt  # kept: the next start uses it again


def _under(session_id: str, key: str, salt: str) -> bool:
    """Whether ``session_id`` is in ``key``'s namespace under ``salt`` (SDKs send it bare or as a Bearer token)."""
    return session_id.startswith(tuple(f"px-{namespace(c, salt)}-" for c in (key, f"Bearer {key}")))


def _salt(url: str) -> str:
    db = ProxyDB(url)
    try:
        return deployment_salts(db)[0]
    finally:
        db.close()


@pytest.mark.postgres
def test_workers_on_one_postgresql_store_agree_on_its_salt(pg_schema_dsn: str) -> None:
    with rig(pg_schema_dsn) as one, rig(pg_schema_dsn) as two:  # two proxies, one database
        assert one.proxy.pipeline.salt == two.proxy.pipeline.salt == _salt(pg_schema_dsn)
        _ask(one, "key-a", "task on worker one")
        one.proxy.settle()  # its ledger row is written (a worker's stats settle only its own rows)
        (session,) = _ids(_stats(two, **{"x-api-key": "key-a"}))  # the other worker reads it as the key's
        assert _under(session, "key-a", _salt(pg_schema_dsn))


def test_sessions_made_without_a_key_are_read_without_one(tmp_path: Path) -> None:
    with rig(str(tmp_path / "s.db")) as r:
        body = {"model": "claude-sonnet-4-5", "max_tokens": 8, "messages": [{"role": "user", "content": "local"}]}
        assert httpx.post(r.url + "/v1/messages", json=body).status_code == 200  # a local model needs no key
        _ask(r, "key-a")
        (keyless,) = _stats(r)["sessions"]
        assert keyless["session_id"] not in _ids(_stats(r, **{"x-api-key": "key-a"}))
