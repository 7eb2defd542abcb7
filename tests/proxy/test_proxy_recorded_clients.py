"""The requests real CLIs sent, replayed through the proxy without the CLIs.

The fixtures under ``tests/data/recorded/`` are the bodies Claude Code and Codex sent on the long
conformance task (``tests/proxy/test_conformance_clis.py``), as the strict scripted upstream received them
in the direct arm. Replaying them needs no CLI: the upstream answers each request with the turn the
client echoed back next (:class:`~contextwarden.proxy.agentscript.RecordedAgent`), so the proxy sees
the conversation the client had. Regenerate them with ``python benchmarks/bench_clis.py --record``.
A check that fails only because of a known proxy bug is marked ``xfail(strict=True)`` naming it.
"""

from __future__ import annotations

import json
import lzma
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from _paths import DATA
from _proxy import rig
from contextwarden.log.events import Compaction, Event
from contextwarden.proxy.agentcli import BILL_AS
from contextwarden.proxy.agentscript import RecordedAgent
from contextwarden.proxy.conformance import UNCHANGED_READ, hidden_references, uncovered_supersessions
from contextwarden.proxy.ledger import LedgerRow
from contextwarden.proxy.scripted import ScriptedUpstream

RECORDED = DATA / "recorded"
MODEL_PATHS = ("/v1/messages", "/v1/responses")
_DROP = {"host", "content-length", "x-api-key", "authorization", "accept-encoding", "connection"}


FIXTURES = {
    "claude-code-2.1.332": ("anthropic", "claude-opus-5-5"),
    "claude-code-2.1.197": ("anthropic", "claude-opus-5-5"),
    "codex-0.171.0": ("openai_responses", "gpt-5.5"),
}


@dataclass
class Replay:
    rows: list[LedgerRow]
    stats: dict[str, Any]
    events: list[Event]
    upstream: ScriptedUpstream
    sent: list[dict[str, Any]]
    """The recorded bodies, as the client sent them."""

    def forwarded(self) -> list[dict[str, Any]]:
        """The bodies that reached the upstream, in the same order."""
        return [json.loads(r.body) for r in self.upstream.received if r.path in MODEL_PATHS]


_CACHE: dict[tuple[str, str], Replay] = {}


def _load(name: str) -> list[dict[str, Any]]:
    with lzma.open(RECORDED / f"{name}.jsonl.xz", "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def replay(name: str, mode: str, tmp: Path) -> Replay:
    """The recorded requests of ``name`` sent through a proxy in ``mode`` (once per module)."""
    if (name, mode) in _CACHE:
        return _CACHE[(name, mode)]
    fmt = FIXTURES[name][0]
    records = [r for r in _load(name) if r["path"] in MODEL_PATHS and r["status"] == 200]
    bodies = [json.loads(r["body"]) for r in records]
    upstream = ScriptedUpstream(agent=RecordedAgent(fmt, bodies), strict=True, bill_as=BILL_AS)
    key = {"x-api-key": "key-recorded"} if fmt == "anthropic" else {"authorization": "Bearer sk-recorded"}
    with rig(str(tmp / f"{name}-{mode}.db"), mode=mode, upstream=upstream) as r, httpx.Client(timeout=60) as client:
        for record in records:
            headers = {k: v for k, v in record["headers"].items() if k not in _DROP}
            answer = client.post(r.url + record["path"], content=record["body"].encode(), headers={**headers, **key})
            assert answer.status_code == 200, answer.text[:500]
        rows = r.rows()
        store = r.proxy.store
        events = [e for s in store.list_sessions() for e in store.read(s.id)]
        result = Replay(rows, r.proxy.pipeline.ledger.stats(), events, upstream, bodies)
    _CACHE[(name, mode)] = result
    return result


def _cases(known: dict[str, str]) -> list[Any]:
    out = []
    for name in FIXTURES:
        for mode in ("observe", "manage"):
            reason = known.get(name)
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            out.append(pytest.param(name, mode, marks=marks, id=f"{name}-{mode}"))
    return out


@pytest.mark.parametrize(
    ("name", "mode"),
    _cases({}),
)
def test_recorded_requests_never_fall_back(tmp_path_factory: pytest.TempPathFactory, name: str, mode: str) -> None:
    result = replay(name, mode, tmp_path_factory.getbasetemp())
    assert result.upstream.refusals == []
    assert len(result.rows) == len([r for r in result.upstream.received if r.path in MODEL_PATHS])
    assert sorted({row.note for row in result.rows if row.outcome == "fallback"}) == []
    assert [row.status for row in result.rows if row.outcome == "upstream_error"] == []


@pytest.mark.parametrize(("name", "mode"), _cases({}))
def test_a_client_that_never_edits_its_history_never_restarts_the_window(
    tmp_path_factory: pytest.TempPathFactory, name: str, mode: str
) -> None:
    """Each recorded request extends the one before (the direct arm showed it): no restart from the client's copy."""
    result = replay(name, mode, tmp_path_factory.getbasetemp())
    restarts = [e for e in result.events if isinstance(e, Compaction) and e.details.get("mirror")]
    assert restarts == [], f"{len(restarts)} restarts; first: {restarts[0].summary if restarts else ''}"


@pytest.mark.parametrize(("name", "mode"), _cases({}))
def test_the_ledger_prices_what_the_upstream_billed(
    tmp_path_factory: pytest.TempPathFactory, name: str, mode: str
) -> None:
    result = replay(name, mode, tmp_path_factory.getbasetemp())
    billed = sum(r.usage.cost_usd for r in result.upstream.received if r.usage is not None)
    assert billed > 0
    assert math.isclose(result.stats["total"]["cost_usd"], billed, rel_tol=0.02), (result.stats["total"], billed)


def test_claude_code_2_1_197_points_back_to_earlier_reads() -> None:
    """The fixture holds what the next test needs: Claude Code's answer to an unchanged re-read."""
    last = json.loads([r for r in _load("claude-code-2.1.197") if r["path"] == "/v1/messages"][-1]["body"])
    assert UNCHANGED_READ in json.dumps(last["messages"])


@pytest.mark.parametrize("mode", ["observe", "manage"])
def test_a_result_the_client_points_back_to_is_forwarded_as_sent(
    tmp_path_factory: pytest.TempPathFactory, mode: str
) -> None:
    result = replay("claude-code-2.1.197", mode, tmp_path_factory.getbasetemp())
    forwarded = result.forwarded()
    assert len(forwarded) == len(result.sent)
    assert hidden_references(result.sent, forwarded) == []


def test_hidden_references_finds_a_masked_read_the_client_points_back_to() -> None:
    def body(first_result: str) -> dict[str, Any]:
        read = {"file_path": "/r/engine.py"}
        return {
            "messages": [
                {"role": "user", "content": "go"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Read", "input": read}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": first_result}]},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t2", "name": "Read", "input": read}]},
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": "t2", "content": f"Wasted call — {UNCHANGED_READ}."}
                    ],
                },
            ]
        }

    sent = body("1\tdef total(values):")
    assert hidden_references([sent], [sent]) == []
    masked = body("[output elided; the agent can run it again]")
    assert hidden_references([sent], [masked]) == [
        "request 0: the Read of /r/engine.py that t2 points back to was not forwarded as sent"
    ]


@pytest.mark.parametrize("name", list(FIXTURES))
def test_a_result_is_superseded_only_by_one_that_holds_it(tmp_path_factory: pytest.TempPathFactory, name: str) -> None:
    result = replay(name, "manage", tmp_path_factory.getbasetemp())
    assert uncovered_supersessions(FIXTURES[name][0], result.sent, result.forwarded()) == []


def test_uncovered_supersessions_tells_a_covering_output_from_a_partial_one() -> None:
    def body(first: str, second: str) -> dict[str, Any]:
        return {
            "input": [
                {"type": "function_call_output", "call_id": "a", "output": first},
                {"type": "function_call_output", "call_id": "b", "output": second},
            ]
        }

    head = "Chunk ID: 1\nOutput:\nline 1\nline 2\n"
    whole = "Chunk ID: 2\nOutput:\nline 1\nline 2\nline 3\n"
    placeholder = "[exec_command sed superseded by cat at seq 9: 2 lines.]"
    assert uncovered_supersessions("openai_responses", [body(head, whole)], [body(placeholder, whole)]) == []
    truncated = "Chunk ID: 2\nOutput:\nline 1\n…1 tokens truncated…\nline 3\n"
    found = uncovered_supersessions("openai_responses", [body(head, truncated)], [body(placeholder, truncated)])
    assert len(found) == 1 and "no later result holds it" in found[0]
    numbered = "Chunk ID: 1\nOutput:\n     1\tline 1\n     2\tline 2\n"  # nl -ba: the lines a later cat holds
    assert uncovered_supersessions("openai_responses", [body(numbered, whole)], [body(placeholder, whole)]) == []
