"""Write the fixture store of the release before event schema versioning (run once, not by the tests).

It was run with contextwarden at commit 647eb5b (the code before events carried a schema
version), from a checkout of that commit:

    PYTHONPATH=src python tests/data/stores/make_v1_fixture.py tests/data/stores/

It writes ``v1.db`` (SQLite, store schema 1) and ``v1.jsonl`` (the "s" session exported), with
every event kind, every field away from its default, binary parts, NUL bytes and lone
surrogates, a compaction that moves the window and a fork. ``tests/log/test_store_versions.py``
compares what the new code reads with :func:`events`, built from the dataclasses directly, so
no codec change can move both sides.
"""

from __future__ import annotations

import sys
from pathlib import Path

from contextwarden.log.events import (
    AssistantMessage,
    BinaryPart,
    Compaction,
    ContextEdit,
    ContextEditBatch,
    Event,
    ForkMarker,
    Instruction,
    Pin,
    SettingChange,
    Steering,
    ThinkingBlock,
    ToolCall,
    ToolResult,
    ToolSetChange,
    UsageReport,
    UserMessage,
)
from contextwarden.log.store import SQLiteStore, export_jsonl


def events() -> list[Event]:
    png = BinaryPart(media_type="image/png", data=bytes(range(256)), name="shot.png")
    t = 1_700_000_000.0
    return [
        Instruction(id="e01", created_at=t + 1, text="be brief", role="developer", source="AGENTS.md", parent_id="p0"),
        UserMessage(id="e02", created_at=t + 2, text="fix the bug \u2713 \u4fee\u590d", parts=(png,)),
        AssistantMessage(
            id="e03",
            created_at=t + 3,
            text="looking",
            thinking=(ThinkingBlock(text="hmm", signature="sig=="),),
            tool_calls=(ToolCall(id="c1", name="read", arguments={"path": "a.py", "n": [1, 2.5, None, True]}),),
            model="m-1",
            stop_reason="tool_use",
        ),
        ToolResult(
            id="e04",
            created_at=t + 4,
            call_id="c1",
            tool_name="read",
            output="nul\x00 lone \udcff surrogate \ud800 end",
            is_error=True,
            exit_code=2,
            parts=(png,),
        ),
        Steering(id="e05", created_at=t + 5, text="do not touch tests"),
        Pin(id="e06", created_at=t + 6, text="goal: green CI", label="goal"),
        SettingChange(
            id="e07", created_at=t + 7, model="m-2", settings={"temperature": 0.2, "thinking": {"level": "high"}}
        ),
        UsageReport(
            id="e08",
            created_at=t + 8,
            input_tokens=1000,
            output_tokens=20,
            cache_read_tokens=900,
            cache_write_tokens=50,
            request_id="r1",
            response_event_id="e03",
            model="m-1",
        ),
        ContextEditBatch(
            id="e09",
            created_at=t + 9,
            edits=(ContextEdit(target_id="e04", action="mask", replacement="[masked]", reason="old"),),
            reason="budget",
            tokens_before=10,
            tokens_after=5,
        ),
        ToolSetChange(id="e10", created_at=t + 10, exposed=("read", "write"), reason="phase"),
        Compaction(
            id="e11",
            created_at=t + 11,
            summary="did things",
            first_kept_seq=3,
            covered_from_seq=1,
            covered_to_seq=2,
            tokens_before=100,
            tokens_after=10,
            summarizer="fake",
            summarizer_input_tokens=90,
            summarizer_output_tokens=9,
            verification={"ok": True},
            state={"goal": "x"},
            details={"trigger": "auto"},
        ),
        ForkMarker(id="e12", created_at=t + 12, source_session_id="elsewhere", at_seq=4),
        UserMessage(id="e13", created_at=t + 13, text="after the compaction"),
    ]


def main(out: Path) -> None:
    db = out / "v1.db"
    for leftover in (db, out / "v1.db-wal", out / "v1.db-shm"):
        leftover.unlink(missing_ok=True)
    with SQLiteStore(db) as store:
        store.create_session("s", metadata={"title": "fixture", "source": "make_v1_fixture.py"})
        store.append("s", events(), expected_last_seq=0)
        store.fork("s", at_seq=5, new_session_id="f")
        store.append(
            "f", [UserMessage(id="f01", created_at=1_700_000_100.0, text="on the branch")], expected_last_seq=6
        )
        with (out / "v1.jsonl").open("w", encoding="utf-8") as fp:
            export_jsonl(store, "s", fp)
    # fold the WAL into the file, so the fixture is one self-contained file
    import sqlite3

    conn = sqlite3.connect(db)
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.close()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
