"""The one usage reader per format: the response parsers and governance's log reader agree."""

from __future__ import annotations

from contextwarden.governance._formats import response_usage
from contextwarden.wire import get_codec
from contextwarden.wire.anthropic import parse_anthropic_response
from contextwarden.wire.usage import anthropic_usage, gemini_usage, openai_chat_usage, openai_responses_usage


def test_anthropic_input_counts_cache_reads_and_writes() -> None:
    counts = anthropic_usage({"input_tokens": 10, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 5})
    assert counts == (115, 0, 100, 5, 0, 0)


def test_anthropic_one_hour_writes_are_kept_apart() -> None:
    usage = {"input_tokens": 1, "cache_creation_input_tokens": 30, "cache_creation": {"ephemeral_1h_input_tokens": 20}}
    counts = anthropic_usage(usage)
    assert counts is not None and (counts.cache_write, counts.cache_write_1h) == (30, 20)
    _, report = parse_anthropic_response({"content": [], "usage": usage})
    assert report is not None and report.cache_write_1h_tokens == 20


def test_litellm_cache_parts_are_added_when_the_prompt_count_leaves_them_out() -> None:
    usage = {
        "prompt_tokens": 10,
        "completion_tokens": 2,
        "cache_read_input_tokens": 100,
        "cache_creation_input_tokens": 5,
    }
    assert openai_chat_usage(usage) == (115, 2, 100, 5, 0, 0)
    counted = {**usage, "prompt_tokens": 115}
    assert openai_chat_usage(counted) == (115, 2, 100, 5, 0, 0)


def test_codex_token_counts_read_as_responses_usage() -> None:
    assert openai_responses_usage({"input_tokens": 9, "cached_input_tokens": 4, "output_tokens": 1}) == (
        9,
        1,
        4,
        0,
        0,
        0,
    )
    codex = {"input_tokens": 9, "output_tokens": 7, "reasoning_output_tokens": 5}
    assert openai_responses_usage(codex) == (9, 7, 0, 0, 0, 5)


def test_responses_reasoning_tokens_reach_the_usage_report() -> None:
    usage = {"input_tokens": 20, "output_tokens": 12, "output_tokens_details": {"reasoning_tokens": 8}}
    counts = openai_responses_usage(usage)
    assert counts is not None and counts.reasoning == 8
    _, report = get_codec("openai_responses").parse_response({"output": [], "usage": usage})
    assert report is not None and report.reasoning_tokens == 8


def test_readers_take_what_they_find() -> None:
    for reader in (anthropic_usage, openai_chat_usage, openai_responses_usage, gemini_usage):
        assert reader(None) is None
        assert reader([1]) is None
    assert gemini_usage({"promptTokenCount": 5.0, "candidatesTokenCount": -3, "thoughtsTokenCount": 2}) == (
        5,
        2,
        0,
        0,
        0,
        0,
    )


def test_governance_reads_deepseek_cache_hits_like_the_chat_parser() -> None:
    usage = {"prompt_tokens": 1_000, "completion_tokens": 7, "prompt_cache_hit_tokens": 600}
    assert openai_chat_usage(usage).cache_read == 600
    read = response_usage({"usage": usage})
    assert read is not None
    assert (read.input_tokens, read.cache_read_tokens, read.output_tokens) == (1_000, 600, 7)


def test_governance_reads_responses_cached_tokens() -> None:
    usage = {"input_tokens": 50, "output_tokens": 3, "input_tokens_details": {"cached_tokens": 20}}
    assert openai_responses_usage(usage) == (50, 3, 20, 0, 0, 0)
    read = response_usage({"usage": usage})
    assert read is not None and read.cache_read_tokens == 20
