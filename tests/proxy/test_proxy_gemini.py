"""The Gemini API through the proxy, with the official google-genai SDK and raw bodies shaped like Gemini CLI's."""

from __future__ import annotations

import dataclasses
import json
import socket
from pathlib import Path
from typing import Any

import httpx
import pytest
from google.genai import types

from _proxy import Rig, rig
from contextwarden.errors import StoreError
from contextwarden.log.events import WINDOW_KINDS, AssistantMessage
from contextwarden.log.store import SQLiteStore
from contextwarden.models import get_profile, register_profile
from contextwarden.proxy.app import Proxy
from contextwarden.proxy.scripted import Reply
from contextwarden.proxy.serve import BackgroundServer
from contextwarden.proxy.settings import ProxySettings

SMALL = "proxy-test-gemini"
"""A Gemini profile with a 60K window, so a test session reaches the planner's trigger quickly."""

SIGNATURE = "c2lnbmF0dXJlLW9mLXRoZS1tb2RlbA=="
UNKNOWN_PART = {"executableCode": {"language": "PYTHON", "code": "print(1)"}, "futureField": [1, 2]}


@pytest.fixture(autouse=True, scope="module")
def _small_profile() -> None:
    base = get_profile("gemini-2.5-flash")
    register_profile(dataclasses.replace(base, name=SMALL, aliases=(), context_window=60_000, max_input_tokens=None))


def _output(n: int) -> str:
    return "\n".join(f"src/module_{n}/file_{i}.py:{i}: def handler_{n}_{i}(request): return {i * n}" for i in range(80))


def _post(
    r: Rig, body: dict[str, Any], *, method: str = "streamGenerateContent", key: str = "gk", alt: bool = True
) -> httpx.Response:
    query = "?alt=sse" if alt and method == "streamGenerateContent" else ""
    url = f"{r.url}/v1beta/models/{SMALL}:{method}{query}"
    return httpx.post(url, content=json.dumps(body, separators=(",", ":")), headers={"x-goog-api-key": key}, timeout=60)


def _cli_session(r: Rig, turns: int, *, key: str = "gk") -> list[dict[str, Any]]:
    """A session shaped like Gemini CLI's: ids on echoed calls, a skip signature where none came, unknown parts."""
    contents: list[dict[str, Any]] = [
        {"role": "user", "parts": [{"text": "find every handler and fix the failing one"}]}
    ]
    system = {"parts": [{"text": "You are Gemini CLI, a coding agent."}]}
    tools = [{"functionDeclarations": [{"name": "run_shell_command", "parametersJsonSchema": {"type": "object"}}]}]
    for n in range(turns):
        thinking = None if n % 2 else (f"thinking about part {n}", SIGNATURE)
        call = (f"call_{n:03d}", "run_shell_command", {"cmd": f"grep {n}"})
        r.upstream.push(Reply(text=f"looking at part {n}", tool_calls=(call,), thinking=thinking))
        body = {
            "contents": contents,
            "systemInstruction": system,
            "tools": tools,
            "generationConfig": {"thinkingConfig": {"includeThoughts": True}},
        }
        answer = _post(r, body, key=key)
        assert answer.status_code == 200, answer.text
        model_parts = [
            {"text": f"looking at part {n}"},
            {
                "functionCall": {"id": f"call_{n:03d}", "name": "run_shell_command", "args": {"cmd": f"grep {n}"}},
                "thoughtSignature": "skip_thought_signature_validator" if n % 2 else SIGNATURE,
            },
        ]
        output = f"<untrusted_context>\n{_output(n)}\n</untrusted_context>"
        contents = [
            *contents,
            {"role": "model", "parts": model_parts},
            {
                "role": "user",
                "parts": [
                    {
                        "functionResponse": {
                            "id": f"call_{n:03d}",
                            "name": "run_shell_command",
                            "response": {"output": output},
                        }
                    },
                    *([UNKNOWN_PART] if n == 1 else []),
                ],
            },
        ]
    return contents


def _gemini_bodies(r: Rig) -> list[dict[str, Any]]:
    return [
        json.loads(x.body)
        for x in r.upstream.received
        if ":streamGenerateContent" in x.path or ":generateContent" in x.path
    ]


def test_google_genai_sdk_calls_pass_through_the_pipeline_and_are_recorded(tmp_path: Path) -> None:
    with rig(str(tmp_path / "s.db")) as r:
        client = r.gemini()
        r.upstream.push(
            Reply(text="reading", thinking=("plan", SIGNATURE), tool_calls=(("c1", "read_file", {"path": "a.py"}),))
        )
        config = types.GenerateContentConfig(system_instruction="You are an agent.")
        first = client.models.generate_content(model=SMALL, contents="read a.py", config=config)
        call = first.candidates[0].content.parts[-1]
        assert call.function_call.name == "read_file" and call.function_call.id is None
        assert call.thought_signature is not None
        r.upstream.push(Reply(text="done"))
        history = [
            types.Content(role="user", parts=[types.Part(text="read a.py")]),
            first.candidates[0].content,
            types.Content(
                role="user", parts=[types.Part.from_function_response(name="read_file", response={"output": "x = 1"})]
            ),
        ]
        chunks = list(client.models.generate_content_stream(model=SMALL, contents=history, config=config))
        assert "".join(c.text or "" for c in chunks) == "done"
        rows = r.rows()
        assert [(row.format, row.model, row.status) for row in rows] == [("gemini", SMALL, 200)] * 2
        assert all(row.outcome in ("projected", "unchanged") for row in rows)
        assert rows[1].input_tokens > 0 and rows[1].output_tokens > 0
        (info,) = r.proxy.store.list_sessions()
        turns = [e for e in r.proxy.store.read(info.id) if isinstance(e, AssistantMessage)]
        assert [t.text for t in turns] == ["reading", "done"]
        assert SIGNATURE in {b.signature for b in turns[0].thinking}
        # the echoed model turn reaches the upstream with its signature as the SDK sent it
        sent = _gemini_bodies(r)[1]["contents"][1]["parts"]
        assert any(p.get("thoughtSignature") == SIGNATURE for p in sent)


def test_a_long_cli_session_is_masked_with_signatures_and_unknown_parts_intact(tmp_path: Path) -> None:
    with rig(str(tmp_path / "s.db")) as r:
        _cli_session(r, 45)
        bodies = _gemini_bodies(r)
        rows = r.rows()
        assert len(bodies) == 45 and not [row for row in rows if row.outcome == "fallback" or row.status != 200]
        (info,) = r.proxy.store.list_sessions()
        windows = sum(e.kind in WINDOW_KINDS for e in r.proxy.store.read(info.id))
        assert windows >= 1, "45 turns of 2K-token outputs on a 60K window must reach the planner"
        breaks = [
            n
            for n in range(1, len(bodies))
            if bodies[n]["contents"][: len(bodies[n - 1]["contents"])] != bodies[n - 1]["contents"]
        ]
        assert 1 <= len(breaks) <= windows
        last = bodies[-1]["contents"]
        outputs = [
            p["functionResponse"]["response"]["output"] for c in last for p in c["parts"] if "functionResponse" in p
        ]
        assert any(o.startswith("<untrusted_context>") for o in outputs)
        masked = [o for o in outputs if not o.startswith("<untrusted_context>")]
        assert masked, "the planner masked some shell outputs in the forwarded body"
        model_turns = [c for c in last if c["role"] == "model"]
        assert last[4]["parts"][-1] == UNKNOWN_PART
        signatures = [p.get("thoughtSignature") for c in model_turns for p in c["parts"] if "functionCall" in p]
        assert signatures == ["skip_thought_signature_validator" if n % 2 else SIGNATURE for n in range(44)]
        assert rows[-1].forwarded_tokens < rows[-1].client_tokens
        # the ledger cuts Gemini bodies into blocks, and the upstream bills Gemini's implicit cache
        assert all(row.client_tokens > 0 for row in rows)
        assert sum(row.cache_read_tokens for row in rows) > 0
        profile = get_profile(SMALL)
        for row in rows:
            billed = profile.cost(
                input_tokens=row.input_tokens,
                output_tokens=row.output_tokens,
                cache_read_tokens=row.cache_read_tokens,
                cache_write_tokens=0,
            )
            assert row.cost_usd == pytest.approx(billed)


def test_a_stream_without_sse_is_one_array_and_is_recorded(tmp_path: Path) -> None:
    with rig(str(tmp_path / "s.db")) as r:
        r.upstream.push(Reply(text="array answer"))
        body = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
        answer = _post(r, body, alt=False)
        assert answer.status_code == 200 and isinstance(answer.json(), list)
        (info,) = r.proxy.store.list_sessions()
        r.proxy.settle()
        assert [e.text for e in r.proxy.store.read(info.id) if isinstance(e, AssistantMessage)] == ["array answer"]


def test_count_tokens_counts_the_projection_in_manage_mode(tmp_path: Path) -> None:
    with rig(str(tmp_path / "s.db")) as r:
        contents = _cli_session(r, 45)
        system = {"parts": [{"text": "You are Gemini CLI, a coding agent."}]}
        tools = [{"functionDeclarations": [{"name": "run_shell_command", "parametersJsonSchema": {"type": "object"}}]}]
        wrapped = {"generateContentRequest": {"contents": contents, "systemInstruction": system, "tools": tools}}
        answer = _post(r, wrapped, method="countTokens")
        assert answer.status_code == 200
        counted = json.loads(r.upstream.received[-1].body)["generateContentRequest"]["contents"]
        assert counted != contents and len(counted) == len(contents)
        assert (
            answer.json()["totalTokens"]
            < r.upstream.meter.cut("gemini", wrapped["generateContentRequest"])[0].__len__() * 10**6
        )


def test_each_api_key_reaches_its_own_sessions_by_header_or_query(tmp_path: Path) -> None:
    with rig(str(tmp_path / "s.db")) as r:
        body = {"contents": [{"role": "user", "parts": [{"text": "same task"}]}]}
        _post(r, body, key="key-one")
        httpx.post(f"{r.url}/v1beta/models/{SMALL}:generateContent?key=key-two", json=body, timeout=60)
        r.proxy.settle()
        assert len(r.proxy.store.list_sessions()) == 2
        assert r.upstream.received[-1].path.endswith(":generateContent")


@pytest.mark.parametrize(
    ("body", "why"),
    [(b"not json", "not JSON"), (b'{"contents": "a string"}', "contents not a list"), (b"[1, 2]", "not an object")],
)
def test_bad_bodies_reach_the_upstream_unchanged_and_change_nothing(tmp_path: Path, body: bytes, why: str) -> None:
    with rig(str(tmp_path / "s.db")) as r:
        answer = httpx.post(
            f"{r.url}/v1beta/models/{SMALL}:generateContent", content=body, headers={"x-goog-api-key": "k"}, timeout=60
        )
        assert answer.status_code == 400, why
        assert answer.json()["error"]["code"] == 400
        assert r.upstream.received[-1].body == body
        assert r.proxy.store.list_sessions() == []


def test_other_methods_and_versions_pass_through(tmp_path: Path) -> None:
    with rig(str(tmp_path / "s.db")) as r:
        answer = httpx.post(f"{r.url}/v1beta/models/{SMALL}:embedContent", json={"content": {}}, timeout=60)
        assert answer.status_code == 404 and "embedContent" in answer.json()["error"]["message"]
        assert r.upstream.received[-1].path == f"/v1beta/models/{SMALL}:embedContent"
        assert r.proxy.store.list_sessions() == []


class _BreakableStore(SQLiteStore):
    """A real SQLite store that can be switched off, as if its disk went away."""

    down = False

    def __getattribute__(self, name: str) -> Any:
        if name in ("append", "read", "read_window", "get_session", "create_session") and object.__getattribute__(
            self, "down"
        ):
            raise StoreError("store is down (test)")
        return object.__getattribute__(self, name)


def test_a_store_that_is_down_forwards_the_clients_bytes(tmp_path: Path) -> None:
    store = _BreakableStore(tmp_path / "s.db")
    with rig(str(tmp_path / "s.db"), store=store) as r:
        store.down = True
        body = {"contents": [{"role": "user", "parts": [{"text": "hello"}]}]}
        r.upstream.push(Reply(text="still answered"))
        answer = _post(r, body)
        assert answer.status_code == 200 and "still answered" in answer.text
        assert json.loads(r.upstream.received[-1].body) == body
        assert [row.outcome for row in r.rows()] == ["fallback"]
        store.down = False
        assert store.list_sessions() == []


@pytest.mark.parametrize(("body", "why"), [(b"not json", "not JSON"), (b"[1, 2]", "not an object")])
def test_bad_count_and_stream_bodies_reach_the_upstream_unchanged_and_change_nothing(
    tmp_path: Path, body: bytes, why: str
) -> None:
    with rig(str(tmp_path / "s.db")) as r:
        for method in ("countTokens", "streamGenerateContent?alt=sse"):
            answer = httpx.post(
                f"{r.url}/v1beta/models/{SMALL}:{method}", content=body, headers={"x-goog-api-key": "k"}, timeout=60
            )
            assert r.upstream.received[-1].body == body, (method, why)
            assert answer.status_code >= 400 and "error" in answer.json(), (method, why)
        assert r.proxy.store.list_sessions() == []


def test_a_count_with_the_store_down_counts_the_clients_own_request(tmp_path: Path) -> None:
    store = _BreakableStore(tmp_path / "s.db")
    with rig(str(tmp_path / "s.db"), store=store) as r:
        body = {"contents": [{"role": "user", "parts": [{"text": "hello"}]}]}
        _post(r, body)
        r.proxy.settle()  # the turn is filed once its answer is out: before the store goes away
        before = [len(store.read(s.id)) for s in store.list_sessions()]
        store.down = True
        answer = httpx.post(
            f"{r.url}/v1beta/models/{SMALL}:countTokens", json=body, headers={"x-goog-api-key": "gk"}, timeout=60
        )
        assert answer.status_code == 200 and answer.json()["totalTokens"] > 0
        assert json.loads(r.upstream.received[-1].body) == body
        store.down = False
        assert [len(store.read(s.id)) for s in store.list_sessions()] == before == [4]  # the turn, nothing more


def test_an_upstream_that_is_down_gets_a_502_in_geminis_shape(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        down = f"http://127.0.0.1:{sock.getsockname()[1]}"
    proxy = Proxy(ProxySettings(gemini_upstream=down, store_url=str(tmp_path / "s.db")))
    try:
        with BackgroundServer(proxy.app) as px:
            body = {"contents": [{"role": "user", "parts": [{"text": "hello"}]}]}
            for path in ("v1beta", "v1"):
                for method in ("generateContent", "streamGenerateContent?alt=sse", "countTokens"):
                    answer = httpx.post(f"{px.url}/{path}/models/{SMALL}:{method}", json=body, timeout=60)
                    assert answer.status_code == 502, method
                    error = answer.json()["error"]
                    assert (error["code"], error["status"]) == (502, "UNAVAILABLE") and down in error["message"], method
    finally:
        proxy.close()
