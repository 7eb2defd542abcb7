"""The public names: what each public module exports, pinned, so a removed or renamed export fails here.

A change to this list is a change to the public API: add the new name, and keep an old one (as a
deprecated alias) for a release before it goes.
"""

from __future__ import annotations

import importlib

import pytest

EXPORTS: dict[str, tuple[str, ...]] = {
    "contextwarden": (
        "AssistantMessage",
        "BinaryPart",
        "BudgetExceededError",
        "BudgetExhausted",
        "BudgetPolicy",
        "BuildSettings",
        "CodecError",
        "Compaction",
        "ConflictError",
        "ContextEdit",
        "ContextEditBatch",
        "ContextManager",
        "ContextPolicy",
        "ContextWardenError",
        "Decision",
        "Event",
        "FORMATS",
        "ForkMarker",
        "Instruction",
        "Keep",
        "Message",
        "ModelContext",
        "ModelProfile",
        "Pin",
        "PlannerSettings",
        "ProjectContext",
        "ProviderError",
        "Session",
        "SessionNotFound",
        "SessionStore",
        "SettingChange",
        "Steering",
        "SummaryRejected",
        "TaskPolicy",
        "ThinkingBlock",
        "ToolCall",
        "ToolDefinition",
        "ToolPolicy",
        "ToolResult",
        "ToolSetChange",
        "TreeBudget",
        "TreeBudgetPolicy",
        "UnknownModelError",
        "UsageError",
        "UsageReport",
        "UserMessage",
        "WireFormat",
        "get_profile",
        "get_task_policy",
        "list_profiles",
        "open_store",
        "register_profile",
        "register_task_policy",
        "render",
        "resolve_profile",
        "task_policy_names",
    ),
    "contextwarden.log.store": (
        "CheckpointStore",
        "DEFAULT_SQLITE_PATH",
        "MemoryStore",
        "PostgresStore",
        "SQLiteStore",
        "SessionInfo",
        "SessionStore",
        "StoredCheckpoint",
        "check_new_session_id",
        "check_store_url",
        "count_kinds",
        "export_jsonl",
        "import_jsonl",
        "open_store",
    ),
    "contextwarden.wire": (
        "ABORTED_TEXT",
        "AddressedBody",
        "Codec",
        "FORMATS",
        "ParsedRequest",
        "ParsedResponse",
        "RawSpan",
        "StreamAccumulator",
        "WireFormat",
        "address_body",
        "detect_format",
        "extend_body",
        "get_codec",
        "map_stop_reason",
        "normalize_pairing",
        "render_anthropic",
        "render_gemini",
        "render_openai_chat",
        "render_openai_responses",
    ),
    "contextwarden.models": (
        "CacheStyle",
        "ModelProfile",
        "Provider",
        "Tokenizer",
        "get_profile",
        "list_profiles",
        "load_profiles_toml",
        "register_profile",
    ),
    "contextwarden.plan.compaction": (
        "CompactionHook",
        "CompactionSettings",
        "CutPoint",
        "Entry",
        "Estimate",
        "InvalidSummary",
        "LLMSummarizer",
        "LLMSummarizerSettings",
        "StructuredSummarizer",
        "Summarizer",
        "SummaryCheck",
        "SummaryInput",
        "SummaryOptions",
        "SummaryResult",
        "TriggerDecision",
        "TriggerSettings",
        "Turn",
        "Verification",
        "WindowCompactor",
        "adopt_remote_compaction",
        "anchor_state",
        "compact",
        "entries_from_events",
        "entries_from_items",
        "estimate_request",
        "filter_remote_items",
        "find_cut",
        "fit_transcript",
        "reground_reason",
        "validate_summary",
        "verify_summary",
    ),
    "contextwarden.window.policies": (
        "BROWSER_TOOL_POLICIES",
        "CODING_TOOL_POLICIES",
        "DEFAULT_TOOL_POLICY",
        "NormalizedOutput",
        "RESEARCH_TOOL_POLICIES",
        "Resource",
        "TOOL_POLICY_PRESETS",
        "ToolPolicy",
        "Truncation",
        "affects",
        "apply_policy",
        "classify_command",
        "command_of",
        "covers",
        "extract_sources",
        "line_count",
        "masked_placeholder",
        "normalize_output",
        "normalize_path",
        "normalize_url",
        "opened_file",
        "policy_for",
        "policy_text",
        "render_call",
        "resources_of",
        "sanitize_output",
        "stale_placeholder",
        "superseded_placeholder",
        "tool_policy_preset",
        "truncate_output",
    ),
    "contextwarden.providers": (
        "AnthropicProvider",
        "CallOptions",
        "ChatMessage",
        "ChatRequest",
        "ChatResponse",
        "OVERFLOW_PATTERNS",
        "OpenAICompatProvider",
        "OverflowPattern",
        "Provider",
        "RetryPolicy",
        "Role",
        "Usage",
        "backoff_delay",
        "classify_error",
        "is_context_overflow",
        "is_silent_overflow",
        "match_overflow",
        "parse_retry_after",
    ),
    "contextwarden.importers": (
        "FORMATS",
        "ImportOptions",
        "Importer",
        "SourceDocument",
        "Transcript",
        "detect_format",
        "file_sha256",
        "load_transcript",
        "read_source",
        "text_size",
    ),
    "contextwarden.governance": (
        "BadLine",
        "Finding",
        "LintOptions",
        "LintReport",
        "Linter",
        "RULES",
        "ReplayedTurn",
        "Request",
        "RequestItem",
        "RequestReader",
        "assert_bounded",
        "assert_prefix_stable",
        "lint_file",
        "lint_requests",
        "lint_session",
        "read_requests",
        "replay_session",
    ),
    "contextwarden.report": (
        "CONTENT_SECURITY_POLICY",
        "render_report",
        "write_report",
    ),
    "contextwarden.integrations.langchain": ("ContextWardenMiddleware",),
    "contextwarden.integrations.openai_agents": (
        "ContextWardenFilter",
        "ContextWardenSession",
    ),
    "contextwarden.integrations.pydantic_ai": (
        "ContextWarden",
        "UnsupportedPart",
    ),
    "contextwarden.integrations.google_adk": ("ContextWardenCallbacks",),
}
"""Each public module with an ``__all__``, and exactly the names it holds."""

PRESENT: dict[str, tuple[str, ...]] = {
    "contextwarden.testing": (
        "ScriptedProvider",
        "SessionBuilder",
        "estimate_request_tokens",
        "make_response",
        "seeded_event_ids",
    ),
    "contextwarden.integrations.testing": ("adk_model", "agents_model", "langchain_model", "pydantic_ai_model"),
}
"""Documented names of public modules without an ``__all__`` (the examples import them)."""


@pytest.mark.parametrize("module", sorted(EXPORTS))
def test_each_public_module_exports_exactly_its_pinned_names(module: str) -> None:
    exported = set(importlib.import_module(module).__all__)
    pinned = set(EXPORTS[module])
    assert (sorted(pinned - exported), sorted(exported - pinned)) == ([], []), "(removed, added) public names"


@pytest.mark.parametrize("module", sorted(EXPORTS))
def test_every_exported_name_resolves(module: str) -> None:
    imported = importlib.import_module(module)
    assert [name for name in imported.__all__ if getattr(imported, name, None) is None] == []


@pytest.mark.parametrize("module", sorted(PRESENT))
def test_documented_names_of_modules_without_all_are_there(module: str) -> None:
    imported = importlib.import_module(module)
    assert [name for name in PRESENT[module] if not hasattr(imported, name)] == []


def test_the_top_level_lists_its_names_and_star_import_gets_them() -> None:
    namespace: dict[str, object] = {}
    exec("from contextwarden import *", namespace)  # the star import a user writes
    assert sorted(set(namespace) - {"__builtins__"}) == sorted(EXPORTS["contextwarden"])
    assert set(EXPORTS["contextwarden"]) <= set(dir(importlib.import_module("contextwarden")))
