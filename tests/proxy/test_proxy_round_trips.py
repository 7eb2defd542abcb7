"""How many statements a proxied call sends to a PostgreSQL session store, and that the log still holds every turn.

Each is a round trip the request (or the filing of its answer) waits for, and under load they add
up. A worker that served a session's last call knows its log: the mirror's append and the answer's
append are the only statements, and each one's compare-and-append proves nothing else was written
in between, so nothing is read.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from _proxy import rig
from _statements import Counted
from contextwarden.log.events import AssistantMessage, UsageReport, UserMessage
from contextwarden.log.store import PostgresStore
from contextwarden.log.store.postgres import ASYNCHRONOUS_CTE

pytestmark = pytest.mark.postgres

CALLS = 4
PER_CALL = 2
"""The mirror's append and the answer's append."""


def _ask(url: str, history: list[dict[str, Any]], text: str) -> None:
    history.append({"role": "user", "content": text})
    body = {"model": "claude-haiku-4-5", "max_tokens": 16, "messages": history}
    response = httpx.post(url + "/v1/messages", json=body, headers={"x-api-key": "k"}, timeout=30)
    assert response.status_code == 200, response.text
    history.append({"role": "assistant", "content": response.json()["content"][0]["text"]})


def test_a_proxied_call_sends_two_appends_to_the_session_store_and_one_to_remember_it(pg_schema_dsn: str) -> None:
    store = PostgresStore(pg_schema_dsn)
    counted = Counted(store)
    with rig(pg_schema_dsn, store=store) as r:
        history: list[dict[str, Any]] = []
        for n in range(2):  # the session's creation and the first window
            _ask(r.url, history, f"warm-up {n}")
        r.proxy.settle()
        counted.sent.clear()
        tables = Counted(r.proxy.db)
        for n in range(CALLS):
            _ask(r.url, history, f"question {n}")
            r.proxy.settle()
        sent = list(counted.sent)
        remembered = [s for s in tables.sent if "proxy_prefixes" in s or "proxy_lanes" in s]
        [session] = store.list_sessions()
        events = store.read(session.id)
    assert len(sent) == PER_CALL * CALLS, "\n".join(sent)
    # appends, no reads, and none waits for the disk (test_proxy_commits)
    assert all(s.startswith(f"WITH {ASYNCHRONOUS_CTE}, moved AS (UPDATE") for s in sent), "\n".join(sent)
    # the history the answer extends, remembered for whichever worker gets the next request: one statement
    assert len(remembered) == CALLS, "\n".join(remembered)
    # every turn is in the log once, in order, with its usage
    said = [e.text for e in events if isinstance(e, UserMessage)]
    assert said == ["warm-up 0", "warm-up 1"] + [f"question {n}" for n in range(CALLS)]
    answers = [e for e in events if isinstance(e, AssistantMessage)]
    assert len(answers) == CALLS + 2
    usage = [e for e in events if isinstance(e, UsageReport)]
    assert {u.response_event_id for u in usage} == {a.id for a in answers}


def test_a_new_sessions_first_call_reads_nothing_before_its_answer_is_out(pg_schema_dsn: str) -> None:
    store = PostgresStore(pg_schema_dsn)
    counted = Counted(store)
    with rig(pg_schema_dsn, store=store) as r:
        _ask(r.url, [], "warm-up")  # another session: the proxy's own tables and caches are warm
        r.proxy.settle()
        counted.sent.clear()
        _ask(r.url, [], "a new task")
        r.proxy.settle()
        sent = list(counted.sent)
    # created here, so its log is known to be empty: the creation, the history, the build's settings
    # and the answer, each one statement; once the answer is out, one read of the settings the mirror's
    # chain did not see (so the session's next append does not fail on them)
    assert len(sent) == 5, "\n".join(sent)
    assert sent[0].startswith("INSERT INTO contextwarden_sessions"), sent[0]
    assert [i for i, s in enumerate(sent) if s.startswith("SELECT")] == [4], "\n".join(sent)
