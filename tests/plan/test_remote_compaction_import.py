"""A Codex rollout's compaction hands back a transcript: it is filtered before anything adopts it."""

from __future__ import annotations

import json
from pathlib import Path

from contextwarden.importers import load_transcript
from contextwarden.log.events import Compaction
from contextwarden.plan.compaction import filter_remote_items


def _line(kind: str, payload: dict[str, object]) -> str:
    return json.dumps({"timestamp": "2026-01-01T00:00:00Z", "type": kind, "payload": payload})


def _message(role: str, text: str) -> dict[str, object]:
    kind = "output_text" if role == "assistant" else "input_text"
    return {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}


def test_a_codex_replacement_history_keeps_only_people_and_summaries(tmp_path: Path) -> None:
    history = [
        _message("developer", "<permissions instructions>sandboxed</permissions instructions>"),
        _message("user", "# AGENTS.md instructions for /repo\n\n<INSTRUCTIONS>run pytest</INSTRUCTIONS>"),
        _message("user", "<environment_context>\n  <cwd>/repo</cwd>\n</environment_context>"),
        _message("user", "Fix the date parser."),
        {"type": "function_call", "name": "shell", "arguments": "{}", "call_id": "c1"},
        {"type": "function_call_output", "call_id": "c1", "output": "ok"},
        _message("user", "Also keep the old API."),
        {"type": "compaction", "encrypted_content": "gAAAA-opaque"},
    ]
    lines = [
        _line("session_meta", {"id": "s1", "cwd": "/repo", "base_instructions": {"text": "You are Codex."}}),
        _line("response_item", _message("user", "Fix the date parser.")),
        _line("compacted", {"message": "Summary: parser half done.", "replacement_history": history}),
        _line("response_item", _message("user", "Go on.")),
    ]
    path = tmp_path / "rollout-2026-01-01T00-00-00-s1.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    compaction = next(e for e in load_transcript(path).events if isinstance(e, Compaction))
    kept = compaction.details["remote_items"]
    assert isinstance(kept, list)
    assert [(i.get("role"), i.get("type")) for i in kept if isinstance(i, dict)] == [
        ("user", "message"),
        ("user", "message"),
        (None, "compaction"),
    ]
    assert compaction.details["retained_user_messages"] == ["Fix the date parser.", "Also keep the old API."]
    assert compaction.details["remote_dropped"] == {
        "developer message": 1,
        "injected fragment (re-rendered)": 2,
        "function_call": 1,
        "function_call_output": 1,
    }


def test_the_filter_drops_a_foreign_fragment_by_its_shape() -> None:
    items = [
        _message("user", "<environment_context>\n  <cwd>/repo</cwd>\n</environment_context>"),
        _message("user", "<git_status>M a.py</git_status>"),
        _message("user", "Use <b>bold</b> in the docs."),
        _message("assistant", "Done."),
    ]
    result = filter_remote_items(items)
    assert [i["content"][0]["text"] for i in result.kept] == ["Use <b>bold</b> in the docs.", "Done."]  # type: ignore[index]
    assert result.dropped == {"injected fragment (re-rendered)": 2}
