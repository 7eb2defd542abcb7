from __future__ import annotations

import hashlib
import json
import shutil
from collections import Counter
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import _paths
from contextwarden.cli import main
from contextwarden.context import Message, ModelContext
from contextwarden.errors import ImportFormatError, UsageError
from contextwarden.importers import (
    TRANSCRIPT_FORMATS,
    ImportOptions,
    SourceDocument,
    Transcript,
    detect_transcript_format,
    load_transcript,
)
from contextwarden.log.events import (
    AssistantMessage,
    Compaction,
    Event,
    Instruction,
    ToolResult,
    UsageReport,
    UserMessage,
)
from contextwarden.log.store import open_store
from contextwarden.wire import render_openai_responses

DATA = _paths.DATA / "transcripts"
BUNDLED = Path(str(resources.files("contextwarden") / "data" / "trajectories"))
SWE = BUNDLED / "swe-agent"
OPENHANDS = BUNDLED / "openhands"

SAMPLES = [
    *sorted(SWE.glob("*.traj")),
    *sorted(OPENHANDS.glob("*.json")),
    *sorted(p for p in DATA.glob("*/*") if p.parent.name != "malformed" and p.name != "README.md"),
]


def _of(events: tuple[Event, ...], kind: type[Any]) -> list[Any]:
    return [e for e in events if isinstance(e, kind)]


# --------------------------------------------------------------------------- invariants on every sample


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_every_tool_result_follows_its_call_and_usage_follows_its_response(path: Path) -> None:
    transcript = load_transcript(path)
    assert transcript.events, "a sample imports to something"
    calls: dict[str, str] = {}
    for index, event in enumerate(transcript.events):
        assert event.seq == 0 and event.session_id == ""
        if isinstance(event, AssistantMessage):
            for call in event.tool_calls:
                assert call.id not in calls, f"call id {call.id} used twice"
                calls[call.id] = call.name
        elif isinstance(event, ToolResult):
            assert event.call_id in calls, f"orphan result {event.call_id}"
            assert event.tool_name == calls[event.call_id]
        elif isinstance(event, UsageReport) and event.response_event_id:
            previous = transcript.events[index - 1]
            assert isinstance(previous, AssistantMessage) and previous.id == event.response_event_id
            assert event.input_tokens >= event.cache_read_tokens + event.cache_write_tokens
    results = [e.call_id for e in _of(transcript.events, ToolResult)]
    assert len(results) == len(set(results)), "one result per call"


# --------------------------------------------------------------------------- SWE-agent (real)


def test_swe_agent_text_actions_become_tool_calls_with_stable_ids() -> None:
    transcript = load_transcript(SWE / "gpt4__pydicom-1458.traj")
    assert transcript.format == "swe-agent"
    events = transcript.events
    instructions = _of(events, Instruction)
    assert instructions[0].source == "swe-agent system prompt"
    assert instructions[1].source == "swe-agent demonstration"
    assert "Here is a demonstration" in instructions[1].text
    users = _of(events, UserMessage)
    assert len(users) == 1 and "Pixel Representation attribute should be optional" in users[0].text
    assistants = _of(events, AssistantMessage)
    assert [a.tool_calls[0].id for a in assistants] == [f"call-{n}" for n in range(1, 13)]
    first = assistants[0]
    assert first.tool_calls[0].name == "create"
    assert first.tool_calls[0].arguments == {"command": "create reproduce_bug.py"}
    assert first.text.startswith("First, I'll create a new Python script") and "```" not in first.text
    assert assistants[-1].tool_calls[0].name == "submit"
    results = _of(events, ToolResult)
    assert len(results) == 11 and results[0].call_id == "call-1" and results[0].tool_name == "create"
    assert results[0].output.startswith("[File: /pydicom__pydicom/reproduce_bug.py (1 lines total)]")
    assert transcript.metadata["unanswered_calls"] == 1  # the final submit: the model never saw its output
    assert transcript.metadata["usage_totals"] == {
        "input_tokens": 122612,
        "output_tokens": 1369,
        "api_calls": 12,
        "cost_usd": 1.26719,
    }
    assert not _of(events, UsageReport), "run totals are not invented into per-call usage"


def test_swe_agent_function_calling_keeps_call_ids_and_renames_reused_ones() -> None:
    transcript = load_transcript(SWE / "function_calling__marshmallow-1867.traj")
    assistants = _of(transcript.events, AssistantMessage)
    results = _of(transcript.events, ToolResult)
    assert len(assistants) == len(results) == 11
    assert assistants[0].tool_calls[0].id == "call_cyI71DYnRdoLHWwtZgIaW2wr"
    assert assistants[0].tool_calls[0].arguments == {"filename": "reproduce.py"}
    # The trajectory reuses call ids; each call still gets its own result, in order.
    assert [r.call_id for r in results] == [a.tool_calls[0].id for a in assistants]
    assert assistants[3].tool_calls[0].id == "call_5iDdbOYybq7L19vqXmR0DPaU_dup2"  # the pairing rule's renaming
    assert transcript.metadata["renamed_call_ids"] == 5
    assert "unanswered_calls" not in transcript.metadata
    assert transcript.warnings == ()
    assert results[-1].tool_name == "submit"


def test_swe_agent_zero_model_stats_are_not_reported_as_usage() -> None:
    transcript = load_transcript(SWE / "ctf__BabyEncryption.traj")
    assert "usage_totals" not in transcript.metadata
    names = Counter(c.name for a in _of(transcript.events, AssistantMessage) for c in a.tool_calls)
    assert names["edit"] == 6 and names["python"] == 4 and names["submit"] == 1


# --------------------------------------------------------------------------- OpenHands (real)


def test_openhands_maps_model_responses_observations_and_usage() -> None:
    transcript = load_transcript(OPENHANDS / "basic.json")
    assert transcript.format == "openhands"
    kinds = [e.kind for e in transcript.events]
    assert kinds == ["user", "assistant", "usage", "tool_result", "assistant", "usage"]
    user, call_message, usage, result, finish, _ = transcript.events
    assert isinstance(user, UserMessage) and user.text.startswith("Please create a simple 2048 game")
    assert isinstance(call_message, AssistantMessage)
    assert call_message.text.startswith("I'll help you create a simple 2048 game")
    assert call_message.tool_calls[0].id == "toolu_017nBp7UfiGqyrA7j77HgtFP"
    assert call_message.tool_calls[0].arguments["path"] == "/workspace/game_2048.py"
    assert isinstance(usage, UsageReport)
    assert (usage.input_tokens, usage.output_tokens, usage.cache_write_tokens) == (3486, 1135, 3482)
    assert usage.model == "claude-3-5-sonnet-20241022"
    assert isinstance(result, ToolResult) and result.tool_name == "str_replace_editor"
    assert result.output == "File created successfully at: /workspace/game_2048.py"
    assert isinstance(finish, AssistantMessage) and not finish.tool_calls
    assert finish.text.startswith("I've created a simple implementation of the 2048 game")


def test_openhands_command_observations_carry_exit_codes() -> None:
    transcript = load_transcript(OPENHANDS / "basic_gui_mode.json")
    results = _of(transcript.events, ToolResult)
    first_run, server = results[0], results[-1]
    assert first_run.exit_code == 0 and not first_run.is_error
    assert "[Command finished with exit code 0]" in first_run.output
    assert server.exit_code == -1 and server.is_error  # timed out, still running
    assert server.output.startswith("Serving HTTP on 0.0.0.0 port 8000")
    assert transcript.metadata["skipped"] == {
        "action:change_agent_state": 1,
        "observation:agent_state_changed": 4,
        "observation:null": 3,
    }
    usage = _of(transcript.events, UsageReport)
    assert [u.cache_read_tokens for u in usage] == [0, 3435, 3595, 4763]


# --------------------------------------------------------------------------- Claude Code


def test_claude_code_session_merges_blocks_and_reads_usage() -> None:
    transcript = load_transcript(DATA / "claude-code" / "session.jsonl")
    assert transcript.format == "claude-code"
    kinds = [e.kind for e in transcript.events]
    assert kinds == [
        "user", "assistant", "usage", "tool_result", "assistant", "usage", "tool_result", "tool_result",
        "compaction", "user", "assistant", "usage",
    ]  # fmt: skip
    first = transcript.events[1]
    assert isinstance(first, AssistantMessage)
    assert first.text == "Let me run the failing test first."
    assert first.thinking[0].text.startswith("Start by running") and first.thinking[0].signature
    assert [c.name for c in first.tool_calls] == ["Bash"]
    assert first.model == "claude-sonnet-4-20250514" and first.stop_reason == "tool_use"
    usage = transcript.events[2]
    assert isinstance(usage, UsageReport)
    assert (usage.input_tokens, usage.cache_read_tokens, usage.cache_write_tokens) == (
        4 + 2210 + 14877,
        14877,
        2210,
    )
    assert usage.output_tokens == 187 and usage.request_id == "req_011CS7pXb2"
    failed = transcript.events[3]
    assert isinstance(failed, ToolResult) and failed.is_error and failed.exit_code == 1
    parallel = transcript.events[4]
    assert isinstance(parallel, AssistantMessage) and [c.name for c in parallel.tool_calls] == [
        "Read",
        "Grep",
    ]
    grep = transcript.events[7]
    assert isinstance(grep, ToolResult) and grep.output.startswith("cart.py:9:") and grep.exit_code is None
    later = transcript.events[9]
    assert isinstance(later, UserMessage) and later.text == "Also keep the rounding to two decimals."
    assert later.parts[0].media_type == "image/png" and later.parts[0].data.startswith(b"\x89PNG")
    assert transcript.metadata["title"] == "Fix failing discount test in cart module"
    assert transcript.metadata["skipped"] == {"file-history-snapshot": 1, "summary": 1}
    assert any("sidechain" in w for w in transcript.warnings)


def test_claude_code_compaction_becomes_a_compaction_event() -> None:
    transcript = load_transcript(DATA / "claude-code" / "session.jsonl")
    compaction = _of(transcript.events, Compaction)[0]
    assert compaction.summary.startswith("This session is being continued from a previous conversation")
    assert compaction.details == {"provider_side": True, "trigger": "auto", "pre_tokens": 167342}
    position = transcript.events.index(compaction) + 1
    assert compaction.covered_to_seq == position - 1 and compaction.first_kept_seq == position + 1


def test_claude_code_rewound_branch_is_left_out() -> None:
    transcript = load_transcript(DATA / "claude-code" / "rewound.jsonl")
    texts = [e.text for e in transcript.events if isinstance(e, (UserMessage, AssistantMessage))]
    assert texts == [
        "Add a health endpoint.",
        "Which database should the health check ping?",
        "PostgreSQL.",
        "OK, pinging PostgreSQL.",
    ]
    assert any("abandoned branches" in w for w in transcript.warnings)


def test_claude_code_parallel_results_beside_the_chain_are_kept() -> None:
    transcript = load_transcript(DATA / "claude-code" / "parallel-siblings.jsonl")
    assert [e.kind for e in transcript.events] == [
        "user",
        "assistant",
        "usage",
        "tool_result",
        "tool_result",
        "assistant",
        "usage",
    ]
    merged = transcript.events[1]
    assert isinstance(merged, AssistantMessage) and merged.text == "Reading both files."
    assert [c.id for c in merged.tool_calls] == ["toolu_A", "toolu_B"]
    assert transcript.warnings == ()


def test_claude_code_stream_json() -> None:
    transcript = load_transcript(DATA / "claude-code" / "stream.jsonl")
    assert transcript.format == "claude-code"
    assert transcript.metadata["variant"] == "stream-json"
    assert transcript.metadata["usage_totals"]["cost_usd"] == 0.0123
    assert transcript.metadata["tools"][:2] == ["Task", "Bash"]
    assistants = _of(transcript.events, AssistantMessage)
    assert assistants[0].text == "I'll count the Python files." and assistants[0].tool_calls[0].name == "Bash"
    assert assistants[-1].text == "There are 7 Python files."
    assert "(subagent work)" not in [a.text for a in assistants]
    usage = _of(transcript.events, UsageReport)
    assert [u.output_tokens for u in usage] == [75, 11]


# --------------------------------------------------------------------------- Codex


def test_codex_rollout_maps_items_usage_and_compaction() -> None:
    transcript = load_transcript(DATA / "codex" / "rollout.jsonl")
    assert transcript.format == "codex"
    events = transcript.events
    instructions = _of(events, Instruction)
    assert instructions[0].role == "system" and instructions[0].text.startswith("You are Codex")
    assert [i.role for i in instructions[1:]] == ["developer", "developer"]
    assert instructions[1].text.startswith("<user_instructions>")
    users = _of(events, UserMessage)
    assert [u.text for u in users] == [
        "parse_date fails on ISO week dates like 2024-W05-2. Fix it.",
        "Keep the old behaviour for plain dates, and do not touch vendor/.",
    ]
    assistants = _of(events, AssistantMessage)
    assert len(assistants) == 5
    assert assistants[0].thinking[0].text.startswith("**Locating parse_date**")
    # the reasoning item is kept whole, as the Responses codec keeps it: summary text unsigned, the
    # encrypted_content in the item's raw JSON, first in its turn
    assert assistants[0].thinking[0].signature == ""
    (reasoning,) = assistants[0].opaque
    assert (reasoning.format, reasoning.kind, reasoning.position) == ("openai_responses", "reasoning", 0)
    assert json.loads(reasoning.raw_json)["encrypted_content"] == "gAAAAABoy8Zq1xS1-reasoning-opaque-1"
    first = assistants[0]
    turn = Message(role="assistant", text=first.text, tool_calls=first.tool_calls, opaque=first.opaque)
    body = render_openai_responses(ModelContext(model="gpt-5", system="", messages=(turn,)))
    assert body["input"][0] == json.loads(reasoning.raw_json)
    assert assistants[0].tool_calls[0].arguments["command"] == ["bash", "-lc", 'rg -n "def parse_date"']
    patch = assistants[2].tool_calls[0]
    assert patch.name == "apply_patch" and patch.arguments["input"].startswith("*** Begin Patch")
    assert all(a.model == "gpt-5-codex" for a in assistants)
    usage = _of(events, UsageReport)
    assert [(u.input_tokens, u.cache_read_tokens, u.output_tokens) for u in usage] == [
        (5120, 3072, 210),
        (5410, 5120, 64),
        (5703, 5376, 301),
        (6050, 5632, 40),  # its repeat with an unchanged running total is dropped
        (2310, 0, 122),
    ]
    assert [u.reasoning_tokens for u in usage] == [128, 0, 96, 0, 64]  # last_token_usage.reasoning_output_tokens
    results = _of(events, ToolResult)
    assert [(r.exit_code, r.is_error) for r in results] == [(0, False), (0, False), (0, False), (2, True)]
    compaction = _of(events, Compaction)[0]
    assert compaction.summary.startswith("Task: make parse_date accept ISO week dates")
    assert compaction.details == {"provider_side": True}
    assert transcript.warnings == ("skipped 1 record(s) of unknown type 'future_record_kind'",)
    assert transcript.metadata["usage_totals"]["input_tokens"] == 5120 + 5410 + 5703 + 6050 + 2310


def test_codex_legacy_rollout() -> None:
    transcript = load_transcript(DATA / "codex" / "legacy.jsonl")
    assert transcript.format == "codex"
    assert [e.kind for e in transcript.events] == ["user", "assistant", "tool_result", "assistant"]
    result = transcript.events[2]
    assert isinstance(result, ToolResult) and result.tool_name == "shell" and result.exit_code == 0


# --------------------------------------------------------------------------- mini-swe-agent and chat logs


def test_mini_swe_agent_commands_and_observations() -> None:
    transcript = load_transcript(DATA / "mini-swe-agent" / "slugify.traj.json")
    assert transcript.format == "mini-swe-agent"
    assistants = _of(transcript.events, AssistantMessage)
    assert assistants[0].text == "THOUGHT: Let me find the slugify implementation."
    assert assistants[0].tool_calls[0].id == "call-1" and assistants[0].tool_calls[0].name == "bash"
    assert assistants[0].tool_calls[0].arguments == {"command": 'grep -rn "def slugify" .'}
    results = _of(transcript.events, ToolResult)
    assert [(r.call_id, r.exit_code, r.is_error) for r in results] == [
        ("call-1", 0, False),
        ("call-2", 1, True),
    ]
    usage = _of(transcript.events, UsageReport)
    assert [(u.input_tokens, u.cache_read_tokens, u.cache_write_tokens) for u in usage] == [
        (1843, 0, 1843),
        (1960, 1843, 117),
        (2102, 1960, 142),
    ]
    assert transcript.metadata["usage_totals"] == {"api_calls": 3, "cost_usd": 0.0154}
    assert transcript.metadata["skipped"] == {"exit": 1}


def test_openai_chat_with_extra_keys_parallel_calls_and_an_orphan() -> None:
    transcript = load_transcript(DATA / "chat" / "openai.json")
    assert transcript.format == "openai-chat"
    assert transcript.metadata["model"] == "gpt-4.1-mini"
    assert transcript.metadata["tools"][0]["function"]["name"] == "get_weather"
    calls = _of(transcript.events, AssistantMessage)[0].tool_calls
    assert calls[0].arguments == {"city": "Lyon"}
    assert calls[1].arguments == {"_raw": '{"city": "Porto"'}  # unparseable arguments are kept verbatim
    assert [r.call_id for r in _of(transcript.events, ToolResult)] == ["call_lyon01", "call_porto02"]
    assert transcript.warnings == ("dropped a tool result for unknown call id 'call_unknown' at $.messages[5]",)
    last = _of(transcript.events, UsageReport)[-1]
    assert (last.input_tokens, last.cache_read_tokens, last.output_tokens) == (1180, 1024, 19)


def test_openai_bare_list_and_legacy_function_calls() -> None:
    bare = load_transcript(DATA / "chat" / "bare-list.json")
    assert bare.format == "openai-chat"
    assert [e.kind for e in bare.events] == ["user", "assistant", "user", "assistant"]
    legacy = load_transcript(DATA / "chat" / "openai-functions.json")
    call = _of(legacy.events, AssistantMessage)[0].tool_calls[0]
    assert call.id == "function-call-1" and call.arguments == {"value": 3, "from": "mi", "to": "km"}
    result = _of(legacy.events, ToolResult)[0]
    assert result.call_id == "function-call-1" and result.output == "4.828"


def test_anthropic_messages() -> None:
    transcript = load_transcript(DATA / "chat" / "anthropic.json")
    assert transcript.format == "anthropic-messages"
    kinds = [e.kind for e in transcript.events]
    assert kinds == [
        "instruction", "user", "assistant", "usage", "tool_result", "user", "assistant", "tool_result",
        "assistant",
    ]  # fmt: skip
    system = transcript.events[0]
    assert isinstance(system, Instruction) and system.text == "You are a careful SRE assistant."
    first = transcript.events[2]
    assert isinstance(first, AssistantMessage) and first.thinking[0].signature == "ErUBCkYIBBgCIkB-sig"
    usage = transcript.events[3]
    assert isinstance(usage, UsageReport) and usage.input_tokens == 312 + 1450
    steering = transcript.events[5]
    assert isinstance(steering, UserMessage) and steering.text == "Don't delete anything without asking."
    redacted = transcript.events[6]
    assert isinstance(redacted, AssistantMessage) and redacted.thinking[0].text == ""
    denied = transcript.events[7]
    assert isinstance(denied, ToolResult) and denied.is_error and "Permission denied" in denied.output


# --------------------------------------------------------------------------- detection


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (SWE / "humanevalfix-python-0.traj", "swe-agent"),
        (OPENHANDS / "basic.json", "openhands"),
        (DATA / "claude-code" / "session.jsonl", "claude-code"),
        (DATA / "claude-code" / "stream.jsonl", "claude-code"),
        (DATA / "claude-code" / "parallel-siblings.jsonl", "claude-code"),
        (DATA / "codex" / "rollout.jsonl", "codex"),
        (DATA / "codex" / "legacy.jsonl", "codex"),
        (DATA / "mini-swe-agent" / "slugify.traj.json", "mini-swe-agent"),
        (DATA / "chat" / "openai.json", "openai-chat"),
        (DATA / "chat" / "bare-list.json", "openai-chat"),
        (DATA / "chat" / "anthropic.json", "anthropic-messages"),
    ],
    ids=lambda v: v.name if isinstance(v, Path) else v,
)
def test_detect_transcript_format(path: Path, expected: str) -> None:
    assert detect_transcript_format(path) == expected


def test_detection_reads_content_not_the_file_name(tmp_path: Path) -> None:
    disguised = tmp_path / "notes.txt"
    shutil.copy(DATA / "codex" / "rollout.jsonl", disguised)
    assert detect_transcript_format(disguised) == "codex"
    one_line = tmp_path / "one.json"
    one_line.write_text((DATA / "claude-code" / "rewound.jsonl").read_text().splitlines()[0])
    assert load_transcript(one_line).format == "claude-code"


def test_messages_per_line_and_events_wrapper(tmp_path: Path) -> None:
    lines = tmp_path / "chat.jsonl"
    lines.write_text('{"role": "user", "content": "hi"}\n{"role": "assistant", "content": "hello"}\n')
    assert [e.kind for e in load_transcript(lines).events] == ["user", "assistant"]
    wrapped = tmp_path / "wrapped.json"
    wrapped.write_text(json.dumps({"events": json.loads((OPENHANDS / "basic.json").read_text())}))
    assert load_transcript(wrapped).format == "openhands"


def test_format_can_be_forced(tmp_path: Path) -> None:
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"}]}))
    assert detect_transcript_format(plain) == "openai-chat"
    assert load_transcript(plain, format="anthropic-messages").format == "anthropic-messages"
    with pytest.raises(ImportFormatError, match=r"rollout\.jsonl: \$: expected an object"):
        load_transcript(DATA / "codex" / "rollout.jsonl", format="swe-agent")
    with pytest.raises(UsageError, match="unknown transcript format 'claude'"):
        load_transcript(plain, format="claude")


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("bad-middle-line.jsonl", r"bad-middle-line\.jsonl: line 5 column 41: invalid JSON"),
        ("bad-structure.json", r"bad-structure\.json: \$\.messages\[2\]: expected an object, got a string"),
        ("truncated.traj.json", r"truncated\.traj\.json: line \d+ column \d+: invalid JSON"),
        ("binary.bin", r"binary\.bin: binary data \(a NUL byte at offset 8\)"),
        ("latin1.jsonl", r"latin1\.jsonl: not UTF-8 text \(invalid byte at offset 60\)"),
        ("notes.txt", r"notes\.txt: not a JSON or JSON Lines transcript"),
        ("empty.jsonl", r"empty\.jsonl: the file is empty"),
        ("unknown.json", r"unknown\.json: not a transcript format contextwarden recognizes"),
    ],
)
def test_malformed_files_name_the_file_and_the_place(name: str, message: str) -> None:
    with pytest.raises(ImportFormatError, match=message):
        load_transcript(DATA / "malformed" / name)


def test_truncated_jsonl_keeps_what_is_complete() -> None:
    whole = load_transcript(DATA / "claude-code" / "session.jsonl")
    cut = load_transcript(DATA / "malformed" / "truncated.jsonl")
    assert cut.warnings[0].startswith("dropped truncated last line 16 (")
    assert [e.kind for e in cut.events] == [e.kind for e in whole.events][:-2]


def test_a_cut_inside_a_utf8_character_is_a_truncation() -> None:
    cut = load_transcript(DATA / "malformed" / "truncated-utf8.jsonl")
    assert cut.warnings[0].startswith("dropped truncated last line 17 (")
    assert len(cut.events) == len(load_transcript(DATA / "claude-code" / "session.jsonl").events)


def test_deep_nesting_is_a_format_error(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 200_000 + "]" * 200_000)
    with pytest.raises(ImportFormatError, match="nested too deeply"):
        load_transcript(deep)


def test_transcript_text_is_data(tmp_path: Path) -> None:
    hostile = "__import__('os').system('touch pwned') <script>alert(1)</script> \x00 \ud800"
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps([{"role": "user", "content": hostile}]))
    transcript = load_transcript(path)
    event = transcript.events[0]
    # A lone surrogate is no valid text: replaced once at the boundary, and said so.
    assert isinstance(event, UserMessage) and event.text == hostile.replace("\ud800", "\ufffd")
    assert any("1 lone UTF-16 surrogate" in w for w in transcript.warnings)
    assert not (tmp_path / "pwned").exists()


# Keys and words the importers look for, so random documents reach deep into every code path.
# fmt: off
_KEYS = [
    "type", "role", "content", "message", "payload", "id", "call_id", "tool_calls", "function",
    "arguments", "name", "usage", "history", "messages", "action", "observation", "args", "extras",
    "tool_call_metadata", "tool_use_id", "text", "info", "extra", "output", "summary", "source",
    "timestamp", "subtype", "isCompactSummary", "isSidechain", "parentUuid", "uuid", "model_response",
    "choices", "last_token_usage", "total_token_usage", "input_tokens", "metadata", "exit_code",
    "image_urls", "is_demo", "thought", "tool_call_ids", "tool_call_id", "replacement_history",
    "base_instructions", "actions", "command", "encrypted_content", "input", "thinking", "signature",
    "data", "image_url", "url", "events", "system", "model", "success",
]
_WORDS = [
    "user", "assistant", "tool", "system", "developer", "text", "tool_use", "tool_result", "thinking",
    "image", "base64", "message", "reasoning", "function_call", "function_call_output",
    "custom_tool_call", "local_shell_call", "response_item", "event_msg", "token_count", "compacted",
    "session_meta", "turn_context", "run", "edit", "error", "finish", "condensation", "agent",
    "compact_boundary", "init", "result", "summary", "data:image/png;base64,iVBORw0KGgo=", "Exit",
    "code", "1",
]
# fmt: on
_json = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.sampled_from(["", *_WORDS]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(_KEYS), inner, max_size=6),
    max_leaves=30,
)


@pytest.mark.parametrize("format_name", list(TRANSCRIPT_FORMATS))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(document=_json)
def test_foreign_shapes_give_a_transcript_or_a_format_error(format_name: str, document: Any) -> None:
    # The importer itself, without load_transcript's safety net, so a crash here is a real bug.
    docs = [SourceDocument(path="fuzz.json", document=document)]
    if isinstance(document, dict):
        docs.append(SourceDocument(path="fuzz.jsonl", lines=((1, document), (2, document)), is_jsonl=True))
    for doc in docs:
        try:
            transcript = TRANSCRIPT_FORMATS[format_name](doc, ImportOptions(format=format_name))
        except ImportFormatError as exc:
            assert str(exc).startswith("fuzz.json")
        else:
            assert isinstance(transcript, Transcript)


@settings(max_examples=300, deadline=None)
@given(document=_json)
def test_detection_of_foreign_shapes_never_crashes(document: Any) -> None:
    from contextwarden.importers import _detect

    docs = [SourceDocument(path="fuzz.json", document=document)]
    if isinstance(document, dict):
        docs.append(SourceDocument(path="fuzz.jsonl", lines=((1, document),), is_jsonl=True))
    for doc in docs:
        try:
            name = _detect(doc)
            TRANSCRIPT_FORMATS[name](doc, ImportOptions(format=name))
        except ImportFormatError as exc:
            assert str(exc).startswith("fuzz.json")


# --------------------------------------------------------------------------- CLI


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        main(argv)
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_cli_import_stores_sessions_with_unique_names(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store_path = str(tmp_path / "sessions.db")
    files = [str(SWE / "gpt4__test-repo-i1.traj"), str(DATA / "claude-code" / "session.jsonl")]
    other = tmp_path / "elsewhere"
    other.mkdir()
    same_stem = other / "session.jsonl"
    same_stem.write_text((DATA / "claude-code" / "rewound.jsonl").read_text())
    code, out, _ = _run(["import", "--store", store_path, *files, str(same_stem)], capsys)
    assert code == 0
    assert "session gpt4__test-repo-i1 (swe-agent), 12 events" in out
    assert "session session-2 (claude-code)" in out and "warning: skipped 1 sidechain" in out
    store = open_store(store_path)
    try:
        assert sorted(s.id for s in store.list_sessions()) == ["gpt4__test-repo-i1", "session", "session-2"]
        stored = store.read("session")
        expected = load_transcript(files[1]).events
        assert [e.kind for e in stored] == [e.kind for e in expected]
        assert [e.seq for e in stored] == list(range(1, len(expected) + 1))
        compaction = next(e for e in stored if isinstance(e, Compaction))
        assert compaction.first_kept_seq == compaction.seq + 1
        window = store.read_window("session")
        assert [e.seq for e in window] == list(range(compaction.seq, len(expected) + 1))
        info = store.get_session("session")
        assert info.metadata["format"] == "claude-code"
        assert info.metadata["transcript"]["title"] == "Fix failing discount test in cart module"
    finally:
        store.close()


def test_cli_import_json_and_explicit_names(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store_path = str(tmp_path / "sessions.db")
    files = [str(DATA / "codex" / "rollout.jsonl"), str(DATA / "chat" / "anthropic.json")]
    code, out, _ = _run(["import", "--store", store_path, "--session", "run", "--json", *files], capsys)
    assert code == 0
    sessions = json.loads(out)["sessions"]
    assert [(s["session_id"], s["format"]) for s in sessions] == [
        ("run", "codex"),
        ("run-2", "anthropic-messages"),
    ]
    assert sessions[0]["counts"]["usage"] == 5 and sessions[0]["events"] == 20
    assert sessions[0]["warnings"] == ["skipped 1 record(s) of unknown type 'future_record_kind'"]
    other = str(DATA / "chat" / "openai.json")
    code, _, err = _run(["import", "--store", store_path, "--session", "run", other], capsys)
    assert code == 1 and "session 'run' already exists; choose another --session name" in err


def test_cli_import_once_by_content_and_copies_on_purpose(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store_path = str(tmp_path / "sessions.db")
    source = DATA / "codex" / "rollout.jsonl"
    renamed = tmp_path / "renamed.jsonl"
    renamed.write_bytes(source.read_bytes())
    assert _run(["import", "--store", store_path, str(source)], capsys)[0] == 0
    code, out, _ = _run(["import", "--store", store_path, str(source), str(renamed)], capsys)
    assert code == 0
    assert out.count("already imported as session rollout; nothing changed") == 2
    code, out, _ = _run(["import", "--store", store_path, "--json", str(renamed)], capsys)
    assert json.loads(out)["sessions"] == [
        {"file": str(renamed), "session_id": "rollout", "format": "codex", "already_imported": True}
    ]
    code, out, _ = _run(["import", "--store", store_path, "--as", "copy", str(source)], capsys)
    assert code == 0 and "session copy (codex)" in out
    store = open_store(store_path)
    try:
        assert sorted(s.id for s in store.list_sessions()) == ["copy", "rollout"]
        first, copy = store.read("rollout"), store.read("copy")
        assert len(copy) == len(first)
        # The first import keeps the ids a replay of the file gives; the copy has ids of its own.
        assert [e.id for e in first] == [e.id for e in load_transcript(source).events]
        assert not {e.id for e in copy} & {e.id for e in first}
    finally:
        store.close()
    code, _, err = _run(["import", "--store", store_path, "--as", "x", str(source), str(renamed)], capsys)
    assert code != 0 and "--as NAME copies one file" in err
    code, _, err = _run(["import", "--store", store_path, "--as", "copy", str(source)], capsys)
    assert code == 1 and "session 'copy' already exists; choose another --as name" in err


def test_claude_code_without_a_user_prompt_warns() -> None:
    # stream-json output does not echo the prompt it was given: nothing but tool results as user lines.
    transcript = load_transcript(DATA / "claude-code" / "stream.jsonl")
    assert not any(isinstance(e, UserMessage) for e in transcript.events)
    assert any(w.startswith("no user prompt in this file") for w in transcript.warnings)
    assert not any("no user prompt" in w for w in load_transcript(DATA / "claude-code" / "session.jsonl").warnings)


def test_openhands_sdk_events_map_like_the_sdk_sends_them() -> None:
    transcript = load_transcript(DATA / "openhands-sdk" / "conversation.jsonl")
    assert transcript.format == "openhands" and transcript.metadata["variant"] == "sdk"
    assert transcript.metadata["tools"] == ["terminal", "file_editor"]
    assert transcript.metadata["skipped"] == {"sdk:ConversationStateUpdateEvent": 1}
    assert transcript.warnings == ("skipped 1 record(s) of unknown type 'sdk:FutureEventKind'",)
    kinds = [e.kind for e in transcript.events]
    assert kinds == [
        "instruction",
        "user",
        "assistant",
        "tool_result",
        "tool_result",
        "assistant",
        "tool_result",
        "assistant",
        "tool_result",
        "compaction",
        "assistant",
    ]
    events = transcript.events
    user = events[1]
    assert isinstance(user, UserMessage) and "<REPOSITORY_INFO>" in user.text  # extended content is sent too
    parallel = events[2]
    assert isinstance(parallel, AssistantMessage)
    assert [c.name for c in parallel.tool_calls] == ["file_editor", "terminal"]  # one response, two calls
    assert parallel.thinking[0].signature == "sig-abc"
    assert parallel.tool_calls[1].arguments == {"command": "cd /workspace/slug && python -m pytest -q"}
    run = events[4]
    assert isinstance(run, ToolResult) and run.exit_code == 1 and run.is_error and "FAILED" in run.output
    error, rejected = events[6], events[8]
    assert isinstance(error, ToolResult) and error.is_error and "modified concurrently" in error.output
    assert isinstance(rejected, ToolResult) and rejected.output == "Action rejected: Do not delete anything."
    compaction = events[9]
    assert isinstance(compaction, Compaction) and compaction.details["forgotten_event_ids"] == ["e4", "e5"]
    final = events[10]
    assert isinstance(final, AssistantMessage) and final.thinking[0].text == "The edit failed; ask the user."


def test_openhands_sdk_json_list_is_detected() -> None:
    transcript = load_transcript(DATA / "openhands-sdk" / "events.json")
    assert transcript.format == "openhands" and transcript.metadata["variant"] == "sdk"
    assert [e.kind for e in transcript.events][:3] == ["instruction", "user", "assistant"]


def test_imported_ids_derive_from_the_content_and_the_position(tmp_path: Path) -> None:
    """Replays of one file must see the same ids: placeholders render them, and their token count varies."""
    source = DATA / "codex" / "rollout.jsonl"
    once, again = load_transcript(source), load_transcript(source)
    ids = [e.id for e in once.events]
    assert ids == [e.id for e in again.events] and len(set(ids)) == len(ids)
    assert all(len(i) == 32 and int(i, 16) >= 0 and i[12] == "7" for i in ids)  # the shape of new_event_id
    assert once.content_sha256 == hashlib.sha256(source.read_bytes()).hexdigest()
    # Usage still points at its response after the renaming.
    by_id = {e.id: e for e in once.events}
    reports = [e for e in once.events if isinstance(e, UsageReport)]
    assert reports and all(isinstance(by_id[r.response_event_id], AssistantMessage) for r in reports)
    # One changed byte, or a salt, gives other ids; the same bytes under another name do not.
    changed = tmp_path / "changed.jsonl"
    changed.write_bytes(source.read_bytes() + b"\n")
    assert not set(ids) & {e.id for e in load_transcript(changed).events}
    assert not set(ids) & {e.id for e in load_transcript(source, id_salt="copy").events}
    renamed = tmp_path / "renamed.jsonl"
    shutil.copy(source, renamed)
    assert [e.id for e in load_transcript(renamed).events] == ids


# --------------------------------------------------------------------------- current format variants


def test_codex_current_rollout_items() -> None:
    """codex-rs/protocol as of rust-v0.128: tool search, server tools, agent messages, rollback, new compaction."""
    transcript = load_transcript(DATA / "codex" / "rollout-current.jsonl")
    events = transcript.events
    calls = [c for e in events if isinstance(e, AssistantMessage) for c in e.tool_calls]
    assert [c.name for c in calls] == ["tool_search", "lookup_ticket", "local_shell", "apply_patch"]
    assert calls[0].arguments == {"query": "read a ticket"}
    results = [e for e in events if isinstance(e, ToolResult)]
    assert [r.call_id for r in results] == ["ts_01", "call_a1", "call_b2", "call_c3"]
    assert '"name":"lookup_ticket"' in results[0].output  # tool_search_output: the tools it found
    assert results[1].parts and results[1].output.startswith("T-42")  # array output: text and an image
    assert results[2].exit_code == 0 and results[3].output.startswith("Success.")
    # Server-side tools (and reasoning) are kept verbatim on their response, for the Responses renderer.
    opaque = [p.kind for e in events if isinstance(e, AssistantMessage) for p in e.opaque]
    assert opaque == ["reasoning", "web_search_call", "image_generation_call"]  # reasoning: encrypted_content
    reasoning = next(e for e in events if isinstance(e, AssistantMessage) and e.thinking)
    assert reasoning.thinking[0].text.startswith("I need the ticket")  # raw reasoning_text content
    # The context_compaction item and the compacted line after it are one compaction.
    compactions = [e for e in events if isinstance(e, Compaction)]
    assert len(compactions) == 1 and compactions[0].details["compaction_item"] == "context_compaction"
    assert compactions[0].details["encrypted"] is True
    # The rolled-back turn (npm version patch) is gone; the agent message is input to the model.
    texts = [e.text for e in events if isinstance(e, UserMessage)]
    assert not any("package.json" in t for t in texts)
    assert texts[-1].startswith("[message from agent reviewer to main]\nReview: the patch is correct")
    assert "a rollback undid the last 1 user turn(s): 4 event(s) left out" in transcript.warnings
    assert "skipped 1 record(s) of unknown type 'response_item:future_item_kind'" in transcript.warnings
    skipped = transcript.metadata["skipped"]
    assert isinstance(skipped, dict)
    assert {"world_state", "additional_tools", "configuration_update", "compaction_trigger"} <= skipped.keys()
    assert transcript.metadata["dynamic_tools"] == ["lookup_ticket"]
    assert sum(isinstance(e, UsageReport) for e in events) == 6  # the rolled-back call's report went with it


def test_claude_code_current_session_variants() -> None:
    """Claude Code 2.1: meta lines, server tools, extra block fields, synthetic errors, microcompaction."""
    transcript = load_transcript(DATA / "claude-code" / "session-current.jsonl")
    events = transcript.events
    responses = [e for e in events if isinstance(e, AssistantMessage)]
    assert len(responses) == 5  # the <synthetic> API-error message is no model call
    first = responses[0]
    assert first.thinking[0].signature == "EpQCCkYIBxgCKkD-signature-1"
    assert [c.id for c in first.tool_calls] == ["toolu_01Read"]  # a tool_use with a field the codec lacks
    web = responses[1]
    assert [p.kind for p in web.opaque] == ["server_tool_use", "web_search_tool_result"]
    assert all(p.format == "anthropic" for p in web.opaque)
    assert responses[3].thinking[0].signature.startswith("redacted:")
    usage = [e for e in events if isinstance(e, UsageReport)]
    assert (usage[0].input_tokens, usage[0].cache_read_tokens, usage[0].cache_write_tokens) == (19336, 14210, 5120)
    compaction = next(e for e in events if isinstance(e, Compaction))
    assert compaction.details == {"provider_side": True, "trigger": "manual", "pre_tokens": 20522}
    assert transcript.metadata["microcompactions"] == [
        {"trigger": "auto", "pre_tokens": 20410, "tokens_saved": 1830, "tool_ids": ["toolu_01Read"]}
    ]
    skipped = transcript.metadata["skipped"]
    assert isinstance(skipped, dict) and skipped["synthetic-assistant"] == 1 and skipped["queue-operation"] == 1
    assert transcript.warnings == ("skipped 1 record(s) of unknown type 'future-record'",)
    assert transcript.metadata["timestamps"] == "transcript"


def test_claude_code_current_stream_json() -> None:
    transcript = load_transcript(DATA / "claude-code" / "stream-current.jsonl")
    assert transcript.metadata["variant"] == "stream-json"
    assert transcript.metadata["skipped"] == {"result": 1, "stream_event": 2, "system:status": 1}
    compaction = next(e for e in transcript.events if isinstance(e, Compaction))
    assert compaction.details == {"provider_side": True, "trigger": "auto", "pre_tokens": 16100}  # snake_case keys
    totals = transcript.metadata["usage_totals"]
    assert isinstance(totals, dict) and totals["cost_usd"] == 0.0123
