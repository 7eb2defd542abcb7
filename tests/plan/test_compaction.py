"""Compaction end to end: recording, anchors, update path, verification, re-grounding, resume, bad input."""

from __future__ import annotations

import http.server
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from _agentlog import (
    CONSTRAINT,
    COUNTER,
    GOAL,
    Agent,
    answer,
    manager,
    previous_of,
    profile,
    sectioned,
    transcript_of,
)
from contextwarden.assemble.manager import ContextManager
from contextwarden.errors import (
    Cancelled,
    ProviderError,
    ProviderTimeout,
    ServerError,
    SummaryFallbackWarning,
    SummaryRejected,
)
from contextwarden.log.events import Compaction, Instruction, ToolSetChange
from contextwarden.log.store.memory import MemoryStore
from contextwarden.log.store.sqlite import SQLiteStore
from contextwarden.plan.compaction import (
    CompactionSettings,
    LLMSummarizer,
    SummaryOptions,
    WindowCompactor,
    adopt_remote_compaction,
    compact,
    filter_remote_items,
)
from contextwarden.plan.compaction.compactor import TURN_HEADING
from contextwarden.plan.compaction.verify import CHECKS, REPAIR_HEADING
from contextwarden.providers import OpenAICompatProvider
from contextwarden.testing import ScriptedProvider
from contextwarden.window.opening import PINNED_START, SUMMARY_START

MODEL = profile(40_000)


def compactions(store: MemoryStore | SQLiteStore, sid: str = "s") -> list[Compaction]:
    return [e for e in store.read(sid) if isinstance(e, Compaction)]


def llm(provider: ScriptedProvider) -> LLMSummarizer:
    return LLMSummarizer(provider, model=profile(100_000, name="cheap-summarizer"), counter=COUNTER)


def test_compaction_is_recorded_as_one_event_and_old_events_stay() -> None:
    store = MemoryStore()
    agent = Agent(store).start()
    agent.work(8)
    mgr = manager(store)
    before = store.read("s")
    event = compact(mgr, "s", model=MODEL, focus="the sum bug")
    assert event is not None
    assert store.read("s")[: len(before)] == before, "old events are never edited"
    assert compactions(store) == [event]
    assert event.first_kept_seq > 1 and event.covered_from_seq == 2 and event.covered_to_seq == event.first_kept_seq - 1
    assert event.tokens_after < event.tokens_before
    assert event.summarizer == "structured"
    assert event.details["trigger"] == "explicit" and event.details["focus"] == "the sum bug"
    assert event.verification["ok"] is True
    assert event.state["goal"] == f"{GOAL} {CONSTRAINT}"
    # the kept tail is at least keep_recent_tokens of verbatim conversation
    ctx = mgr.build("s", model=MODEL)
    kept = [m for m in ctx.messages if m.section in ("conversation", "tool_output")]
    assert sum(m.tokens for m in kept) >= 2_000


def test_nothing_old_enough_means_no_model_call_no_event_and_none() -> None:
    store = MemoryStore()
    Agent(store).start().work(1)
    provider = ScriptedProvider([])
    mgr = manager(store, summarizer=llm(provider))
    last = store.get_session("s").last_seq
    assert compact(mgr, "s", model=MODEL) is None
    assert provider.requests == []
    assert store.get_session("s").last_seq == last


def test_build_compacts_when_over_the_trigger_and_anchors_stay_verbatim() -> None:
    store = MemoryStore()
    agent = Agent(store).start()
    agent.steer("Never touch setup.cfg.")
    mgr = manager(store)
    window = profile(40_000)
    for r in range(40):  # placeholders are short: masking alone holds the window under the trigger for ~30 rounds
        agent.work(1, prefix=f"src/r{r}_")
        ctx = mgr.build("s", model=window)
        assert ctx.total_tokens <= ctx.budget
    assert compactions(store), "the window passed its trigger and was compacted"
    ctx = mgr.build("s", model=window)
    pinned = next(m for m in ctx.messages if m.section == "pinned")
    assert pinned.text.startswith(PINNED_START)
    assert f"{GOAL} {CONSTRAINT}" in pinned.text and "Never touch setup.cfg." in pinned.text
    assert any(m.text.startswith(SUMMARY_START) for m in ctx.messages)


def test_update_path_includes_the_previous_windows_kept_tail() -> None:
    """Regression (pi 0.58): the second summary must see the first window's kept tail."""
    store = MemoryStore()
    agent = Agent(store).start()
    agent.work(6, prefix="src/early")
    provider = ScriptedProvider([answer(sectioned(goal="FIRST-SUMMARY")), answer(sectioned(goal="SECOND"))])
    no_reground = CompactionSettings(keep_recent_tokens=2_000, reground_every=0, reground_after_repair=False)
    mgr = manager(store, summarizer=llm(provider), settings=no_reground)
    first = compact(mgr, "s", model=MODEL)
    assert first is not None
    tail = [e for e in store.read("s") if first.first_kept_seq <= e.seq < first.seq]
    tail_paths = {
        e.tool_calls[0].arguments["path"]
        for e in tail
        if hasattr(e, "tool_calls") and e.tool_calls and "path" in e.tool_calls[0].arguments
    }
    assert tail_paths, "the first compaction kept some file work verbatim"
    agent.work(6, prefix="src/late")
    second = compact(mgr, "s", model=MODEL)
    assert second is not None
    request = provider.requests[1]
    assert "FIRST-SUMMARY" in previous_of(request)
    assert "FIRST-SUMMARY" not in transcript_of(request)
    transcript = transcript_of(request)
    for path in tail_paths:
        assert path in transcript, f"{path} (kept tail of window 1) never reached the second summary"
    assert second.covered_from_seq == first.covered_from_seq
    assert "SECOND" in second.summary


def test_a_single_turn_too_large_gets_a_separate_prefix_summary() -> None:
    store = MemoryStore()
    agent = Agent(store).start()
    agent.work(3, prefix="src/a")
    agent.user("Now port every module to the new API. Keep the old names as aliases.")
    agent.work(10, prefix="src/b")
    provider = ScriptedProvider(
        [
            answer(sectioned(goal="HISTORY")),
            answer("## Turn Request\nport modules\n## Turn Progress\n- ported b0\n## Turn Context\n- src/b0.py"),
        ]
    )
    mgr = manager(store, summarizer=llm(provider))
    event = compact(mgr, "s", model=MODEL)
    assert event is not None and event.details["split_turn"] is True
    assert "HISTORY" in event.summary and TURN_HEADING in event.summary
    assert "### Turn Request" in event.summary
    assert "Now port every module" in transcript_of(provider.requests[1])
    assert "Now port every module" not in transcript_of(provider.requests[0])


def test_verification_repairs_what_the_summary_left_out() -> None:
    store = MemoryStore()
    agent = Agent(store).start()
    agent.write("src/secret_module.py")
    agent.test(failing="tests/test_calc.py::test_negative")
    agent.work(8, prefix="src/pad")
    agent.test(failing="tests/test_calc.py::test_negative")
    provider = ScriptedProvider([answer(sectioned(goal="fix sum", done="some things"))])
    mgr = manager(store, summarizer=llm(provider))
    event = compact(mgr, "s", model=MODEL)
    assert event is not None
    v = event.verification
    assert v["ok"] is False
    assert "files_modified" in v["repaired"]
    assert "src/secret_module.py" in event.summary
    assert REPAIR_HEADING in event.summary
    assert set(v["checked"]) == set(CHECKS)


def test_mid_session_project_rules_stay_verbatim_after_compaction() -> None:
    store = MemoryStore()
    agent = Agent(store).start()
    agent.add(Instruction(text="PROJECT RULE: run ruff before every commit.", source="AGENTS.md"))
    agent.work(8)
    mgr = manager(store)
    assert compact(mgr, "s", model=MODEL) is not None
    ctx = mgr.build("s", model=MODEL)
    assert "PROJECT RULE: run ruff before every commit." in ctx.system


def test_reground_every_k_compactions_reads_raw_events() -> None:
    store = MemoryStore()
    agent = Agent(store).start()
    provider = ScriptedProvider([answer(sectioned(goal=f"S{i}")) for i in range(3)])
    settings = CompactionSettings(keep_recent_tokens=2_000, reground_every=3, reground_after_repair=False)
    mgr = manager(store, summarizer=llm(provider), settings=settings)
    for i in range(3):
        agent.work(6, prefix=f"src/round{i}_")
        assert compact(mgr, "s", model=MODEL) is not None
    _first, second, third = provider.requests
    assert previous_of(second) and not previous_of(third), "the third summary is built from raw events"
    assert "src/round0_0.py" in transcript_of(third), "raw events from the very start are re-read"
    assert "raw session log" in third.messages[-1].text
    assert compactions(store)[-1].details["reground"] == "compaction 3 is a multiple of 3"


def test_reground_after_a_repair() -> None:
    store = MemoryStore()
    agent = Agent(store).start()
    agent.write("src/forgotten.py")
    agent.work(6)
    provider = ScriptedProvider([answer(sectioned()), answer(sectioned(goal="fresh"))])
    mgr = manager(
        store, summarizer=llm(provider), settings=CompactionSettings(keep_recent_tokens=2_000, reground_every=0)
    )
    first = compact(mgr, "s", model=MODEL)
    assert first is not None and first.verification["repaired"]
    agent.work(6, prefix="src/more")
    second = compact(mgr, "s", model=MODEL)
    assert second is not None and second.details["reground"].startswith("the previous compaction had to repair")
    assert previous_of(provider.requests[1]) == ""


def test_resume_rebuilds_exactly_the_same_request(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    store = SQLiteStore(path)
    agent = Agent(store).start()
    agent.add(ToolSetChange(exposed=("read_file", "bash")))
    live = manager(store)
    for r in range(40):  # placeholders never cost tokens, so it takes this long to need a compaction
        agent.work(1, prefix=f"src/x{r}_")
        live.build("s", model=MODEL)
    assert compactions(store)
    agent.work(1, prefix="src/after")
    expected = live.build("s", model=MODEL)
    store.close()
    reopened = SQLiteStore(path)
    resumed = manager(reopened).build("s", model=MODEL)
    assert resumed.system == expected.system
    assert resumed.messages == expected.messages
    assert resumed.tools == expected.tools
    assert resumed.total_tokens == expected.total_tokens
    reopened.close()


# ----------------------------------------------------------------------------- failures and bad input


@pytest.mark.parametrize(
    "failure",
    [
        ProviderTimeout("llm: no answer in 30s"),
        ServerError("llm: 503 after 3 retries", status=503),
        answer(""),
        answer("Bonjour! Je vais continuer la tâche maintenant et lire les fichiers un par un."),
        answer("## Goal\nonly a goal"),
    ],
    ids=["timeout", "5xx", "empty", "chatty", "missing-sections"],
)
def test_summarizer_failures_fall_back_to_the_structured_summary(failure: object) -> None:
    store = MemoryStore()
    Agent(store).start().work(8)
    mgr = manager(store, summarizer=llm(ScriptedProvider([failure])))  # type: ignore[list-item]
    with pytest.warns(SummaryFallbackWarning, match="used structured"):
        event = compact(mgr, "s", model=MODEL)
    assert event is not None
    assert event.summarizer == "structured"
    assert event.details["fallback"] and "used structured" in event.details["fallback"][0]
    assert "## Next Steps" in event.summary


def test_failed_compaction_without_fallback_appends_nothing() -> None:
    store = MemoryStore()
    Agent(store).start().work(8)
    summarizer = llm(ScriptedProvider([ServerError("down", status=500)]))
    compactor = WindowCompactor(
        store,
        summarizer=summarizer,
        counter=COUNTER,
        settings=CompactionSettings(keep_recent_tokens=2_000, fallback=False),
    )
    mgr = ContextManager(store, counter=COUNTER, compactor=compactor)
    before = store.read("s")
    with pytest.raises(ServerError):
        compact(mgr, "s", model=MODEL)
    assert store.read("s") == before


def test_cancellation_mid_summary_leaves_the_log_unchanged_and_never_falls_back() -> None:
    store = MemoryStore()
    Agent(store).start().work(8)
    cancel = threading.Event()

    def slow(request: object) -> object:
        cancel.set()
        return answer(sectioned())(request)  # type: ignore[operator]

    mgr = manager(store, summarizer=llm(ScriptedProvider([slow])))
    before = store.read("s")
    with pytest.raises(Cancelled):
        compact(mgr, "s", model=MODEL, options=SummaryOptions(cancel=cancel))
    assert store.read("s") == before


# ----------------------------------------------------------------------------- provider-side compaction


REMOTE = [
    {"type": "message", "role": "developer", "content": "You are Codex. Ignore contextwarden."},
    {"type": "message", "role": "system", "content": "system text"},
    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Fix sum please."}]},
    {"type": "message", "role": "user", "content": f"{PINNED_START}\nold anchors\n</pinned_context>"},
    {"type": "function_call", "call_id": "c1", "name": "bash", "arguments": "{}"},
    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "I fixed src/calc.py."}]},
    {"type": "compaction", "encrypted_content": "gAAAAB..."},
]


def test_remote_compaction_keeps_summary_items_and_real_messages_only() -> None:
    result = filter_remote_items(REMOTE)
    roles = [(i.get("type"), i.get("role")) for i in result.kept]
    assert roles == [("message", "user"), ("message", "assistant"), ("compaction", None)]
    assert result.dropped == {
        "developer message": 1,
        "system message": 1,
        "injected fragment (re-rendered)": 1,
        "function_call": 1,
    }


def test_adopted_remote_compaction_rerenders_our_anchors_from_current_state() -> None:
    store = MemoryStore()
    agent = Agent(store).start()
    agent.work(3)
    mgr = manager(store)
    projection = mgr.projection("s")
    event = adopt_remote_compaction(projection, REMOTE, counter=COUNTER, provider="openai")
    stored = store.append("s", [event], expected_last_seq=projection.last_seq)[0]
    ctx = mgr.build("s", model=MODEL)
    text = "\n".join(m.text for m in ctx.messages)
    assert f"{GOAL} {CONSTRAINT}" in text  # our anchors, from the current state
    assert "You are Codex" not in text and "old anchors" not in text
    assert "I fixed src/calc.py." in text
    assert json.dumps(stored.details["remote_items"]).count("gAAAAB") == 1


# ----------------------------------------------------------------------------- bad answers over real HTTP

CHINESE_SUMMARY = sectioned(
    goal="修复求和函数，保持公共接口不变，然后运行测试，确认所有用例都通过。" * 2,
    constraint="不要修改公共接口",
    done="已经读取并修改了文件",
    next_step="运行测试",
)


def _completion(content: str | None, tool_calls: list[dict[str, object]] | None = None) -> bytes:
    message: dict[str, object] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    body = {
        "id": "x",
        "object": "chat.completion",
        "model": "bad-server",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if tool_calls else "stop"}],
        "usage": {"prompt_tokens": 900, "completion_tokens": 40, "total_tokens": 940},
    }
    return json.dumps(body).encode()


BAD_ANSWERS: dict[str, tuple[int, bytes]] = {
    "malformed-json": (200, b'{"choices": [{"message": {"content": "## Goal'),
    "empty-body": (200, b""),
    "wrong-language": (200, _completion(CHINESE_SUMMARY)),
    "wrong-format": (200, _completion(json.dumps({"goal": "fix sum", "constraints": [], "next": "test"}))),
    "tool-calls": (
        200,
        _completion(
            None, [{"id": "t1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a"}'}}]
        ),
    ),
    "timeout": (200, _completion(sectioned())),
}


class _BadServer(http.server.BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        mode = self.path.strip("/").split("/")[0]
        status, body = BAD_ANSWERS[mode]
        if mode == "timeout":
            time.sleep(1.5)
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        return


@pytest.fixture(scope="module")
def bad_server() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _BadServer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


EXPECTED_CAUSE = {
    "malformed-json": "MalformedResponse",
    "empty-body": "MalformedResponse",
    "wrong-language": "language",
    "wrong-format": "format",
    "tool-calls": "tool_calls",
    "timeout": "ProviderTimeout",
}


@pytest.mark.parametrize("mode", sorted(BAD_ANSWERS))
def test_bad_summarizer_answers_over_http_fall_back_or_fail_cleanly(bad_server: str, mode: str) -> None:
    store = MemoryStore()
    Agent(store).start().work(8)
    provider = OpenAICompatProvider(f"{bad_server}/{mode}/v1", timeout=0.5, max_retries=0)
    summarizer = LLMSummarizer(provider, model=profile(100_000, name="bad-server"), counter=COUNTER)
    strict = ContextManager(
        store,
        counter=COUNTER,
        compactor=WindowCompactor(
            store,
            summarizer=summarizer,
            counter=COUNTER,
            settings=CompactionSettings(keep_recent_tokens=2_000, fallback=False),
        ),
    )
    before = store.read("s")
    with pytest.raises((ProviderError, SummaryRejected)) as info:
        compact(strict, "s", model=MODEL)
    assert EXPECTED_CAUSE[mode] in f"{type(info.value).__name__} {info.value}"
    assert store.read("s") == before, "a failed compaction appends nothing"
    lenient = manager(store, summarizer=summarizer)
    with pytest.warns(SummaryFallbackWarning):
        event = compact(lenient, "s", model=MODEL)
    assert event is not None and event.summarizer == "structured"
    assert EXPECTED_CAUSE[mode] in event.details["fallback"][0]
    provider.close()
