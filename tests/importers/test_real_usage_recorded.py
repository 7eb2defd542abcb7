"""Sessions recorded from real clients against the local model (see tests/data/recorded/README.md)."""

from __future__ import annotations

from _paths import DATA
from contextwarden.importers import load_transcript
from contextwarden.log.events import AssistantMessage, UsageReport, UserMessage

RECORDED = DATA / "recorded"


def test_a_real_codex_chat_rollout_imports_with_its_own_times_and_no_usage() -> None:
    """Codex over the chat wire API writes token_count with null info: nothing to check a bill against."""
    transcript = load_transcript(RECORDED / "codex-0.58-chat-local.jsonl")
    assert transcript.metadata["cli_version"] == "0.58.0"
    assert transcript.metadata["timestamps"] == "transcript"
    users = [e for e in transcript.events if isinstance(e, UserMessage)]
    replies = [e for e in transcript.events if isinstance(e, AssistantMessage)]
    assert [u.text for u in users] == ["Say hi."] and len(replies) == 1
    # The reply came 66 s after the prompt on 2 shared cores: the rollout's own clock, not a spacing.
    assert replies[0].created_at - users[0].created_at > 60
    assert not any(isinstance(e, UsageReport) for e in transcript.events)
    assert not transcript.metadata.get("usage_totals")
