"""The one usage reader per format: the response parsers and governance's log reader agree."""

from __future__ import annotations

from contextwarden.governance._formats import response_usage
from contextwarden.wire.usage import anthropic_usage, openai_chat_usage, openai_responses_usage


def test_anthropic_input_counts_cache_reads_and_writes() -> None:
    counts = anthropic_usage({"input_tokens": 10, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 5})
    assert counts == (115, 0, 100, 5)


def test_governance_reads_deepseek_cache_hits_like_the_chat_parser() -> None:
    usage = {"prompt_tokens": 1_000, "completion_tokens": 7, "prompt_cache_hit_tokens": 600}
    assert openai_chat_usage(usage).cache_read == 600
    read = response_usage({"usage": usage})
    assert read is not None
    assert (read.input_tokens, read.cache_read_tokens, read.output_tokens) == (1_000, 600, 7)


def test_governance_reads_responses_cached_tokens() -> None:
    usage = {"input_tokens": 50, "output_tokens": 3, "input_tokens_details": {"cached_tokens": 20}}
    assert openai_responses_usage(usage) == (50, 3, 20, 0)
    read = response_usage({"usage": usage})
    assert read is not None and read.cache_read_tokens == 20
