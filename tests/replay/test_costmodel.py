from __future__ import annotations

import dataclasses

import pytest

from contextwarden.models import ModelProfile, get_profile
from contextwarden.replay.costmodel import (
    LOOKBACK_BLOCKS,
    Block,
    BlockMeter,
    CacheSimulator,
    CostSettings,
    mechanics_of,
)
from contextwarden.tokens import HeuristicCounter

OPENAI = ModelProfile(
    name="test-openai",
    provider="openai",
    input_price=2.0,
    output_price=8.0,
    cache_read_price=0.5,
    cache_style="openai-auto",
    min_cacheable_tokens=1024,
    cache_granularity=128,
    cache_ttl_seconds=300,
)
ANTHROPIC = ModelProfile(
    name="test-anthropic",
    provider="anthropic",
    input_price=3.0,
    output_price=15.0,
    cache_write_price=3.75,
    cache_write_1h_price=6.0,
    cache_read_price=0.3,
    cache_style="anthropic-breakpoints",
    min_cacheable_tokens=1024,
)


def blocks(*sizes: int, tag: str = "") -> list[Block]:
    return [Block(key=f"{tag}{n}:{size}", tokens=size) for n, size in enumerate(sizes)]


def usd(tokens: float, price: float) -> float:
    return tokens * price / 1_000_000


def test_mechanics_follow_the_profile_cache_style() -> None:
    assert mechanics_of(get_profile("gpt-4o")) == "automatic"
    assert mechanics_of(get_profile("claude-sonnet-4-5")) == "breakpoints"
    assert mechanics_of(dataclasses.replace(OPENAI, cache_style="none")) == "none"


def test_automatic_cache_reads_the_shared_prefix_in_128_token_steps() -> None:
    sim = CacheSimulator(OPENAI)
    first = sim.observe(blocks(1000, 500), at=0)
    assert first.cache_read_tokens == 0
    assert first.cost_usd == pytest.approx(usd(1500, 2.0))
    second = sim.observe(blocks(1000, 500, 300), at=30, output_tokens=100)
    assert second.shared_prefix_tokens == 1500
    assert second.cache_read_tokens == 1408  # 11 steps of 128
    expected = usd(1800 - 1408, 2.0) + usd(1408, 0.5) + usd(100, 8.0)
    assert second.cost_usd == pytest.approx(expected)


def test_automatic_cache_needs_1024_shared_tokens() -> None:
    sim = CacheSimulator(OPENAI)
    sim.observe(blocks(1000, 30), at=0)
    again = sim.observe(blocks(1000, 30, 5000), at=1)
    assert again.shared_prefix_tokens == 1030
    assert again.cache_read_tokens == 1024
    fresh = CacheSimulator(OPENAI)
    fresh.observe(blocks(900, 100), at=0)
    below = fresh.observe(blocks(900, 100, 4000), at=1)
    assert below.shared_prefix_tokens == 1000
    assert below.cache_read_tokens == 0


def test_automatic_cache_stops_at_the_first_differing_message() -> None:
    sim = CacheSimulator(OPENAI)
    sim.observe(blocks(2000, 3000, 4000), at=0)
    changed = [*blocks(2000, 3000), Block(key="other", tokens=4000)]
    cost = sim.observe(changed, at=10)
    assert cost.shared_prefix_tokens == 5000
    assert cost.cache_read_tokens == 4992


def test_automatic_cache_entries_expire_unless_used() -> None:
    sim = CacheSimulator(OPENAI)
    sim.observe(blocks(4096), at=0)
    assert sim.observe(blocks(4096, 10), at=290).cache_read_tokens == 4096
    # used at 290, so still alive at 580; unused for 301 seconds after that, gone
    assert sim.observe(blocks(4096, 10, 10), at=580).cache_read_tokens == 4096
    assert sim.observe(blocks(4096, 10, 10, 10), at=881).cache_read_tokens == 0


def test_explicit_breakpoints_write_then_read() -> None:
    sim = CacheSimulator(ANTHROPIC)
    first = sim.observe(blocks(2000, 1000), at=0, breakpoints=[0, 1])
    assert (first.cache_read_tokens, first.cache_write_tokens) == (0, 3000)
    assert first.cost_usd == pytest.approx(usd(3000, 3.75))
    second = sim.observe(blocks(2000, 1000, 500), at=30, breakpoints=[0, 2])
    assert (second.cache_read_tokens, second.cache_write_tokens) == (3000, 500)
    assert second.cost_usd == pytest.approx(usd(3000, 0.3) + usd(500, 3.75))


def test_explicit_cache_without_breakpoints_caches_nothing() -> None:
    sim = CacheSimulator(ANTHROPIC)
    sim.observe(blocks(5000), at=0)
    assert sim.observe(blocks(5000, 10), at=1).cache_read_tokens == 0


def test_explicit_cache_one_hour_writes_cost_twice_the_input() -> None:
    sim = CacheSimulator(ANTHROPIC, CostSettings(ttl="1h"))
    first = sim.observe(blocks(2000), at=0, breakpoints=[0])
    assert first.cost_usd == pytest.approx(usd(2000, 6.0))
    assert sim.observe(blocks(2000, 5), at=3000, breakpoints=[1]).cache_read_tokens == 2000


def test_explicit_cache_lookback_is_limited_to_20_blocks() -> None:
    prefix = blocks(1500, *([10] * 30))
    sim = CacheSimulator(ANTHROPIC)
    sim.observe(prefix[:1], at=0, breakpoints=[0])
    near = prefix[: LOOKBACK_BLOCKS + 1]
    assert sim.peek(near, at=1, breakpoints=[len(near) - 1]).cache_read_tokens == 1500
    far = prefix[: LOOKBACK_BLOCKS + 2]
    assert sim.peek(far, at=1, breakpoints=[len(far) - 1]).cache_read_tokens == 0
    assert sim.peek(far, at=1, breakpoints=[0, len(far) - 1]).cache_read_tokens == 1500


def test_explicit_cache_hits_refresh_the_entries_they_read() -> None:
    sim = CacheSimulator(ANTHROPIC)
    sim.observe(blocks(2000, 500), at=0, breakpoints=[0, 1])
    for t in range(30, 601, 30):
        grown = blocks(2000, 500, *([100] * (t // 30)))
        assert sim.observe(grown, at=t, breakpoints=[0, len(grown) - 1]).cache_read_tokens > 0
    # the system entry was read inside every longer hit, so it is still alive at 600 s
    assert sim.peek(blocks(2000, 7), at=630, breakpoints=[0, 1]).cache_read_tokens == 2000
    assert sim.peek(blocks(2000, 7), at=901, breakpoints=[0, 1]).cache_read_tokens == 0


def test_explicit_cache_skips_prefixes_below_the_minimum() -> None:
    sim = CacheSimulator(ANTHROPIC)
    first = sim.observe(blocks(500, 400), at=0, breakpoints=[0, 1])
    assert first.cache_write_tokens == 0
    assert sim.observe(blocks(500, 400, 1), at=1, breakpoints=[2]).cache_read_tokens == 0


def test_at_most_four_breakpoints_count() -> None:
    sim = CacheSimulator(ANTHROPIC)
    sim.observe(blocks(1100, 1100, 1100, 1100, 1100, 1100), at=0, breakpoints=[0, 1, 2, 3, 4, 5])
    # only the last four (2..5) were written; a request ending after block 1 finds no entry there
    assert sim.peek(blocks(1100, 1100), at=1, breakpoints=[1]).cache_read_tokens == 0
    assert sim.peek(blocks(1100, 1100, 1100), at=1, breakpoints=[2]).cache_read_tokens == 3300


def test_peek_leaves_the_cache_unchanged() -> None:
    sim = CacheSimulator(OPENAI)
    sim.peek(blocks(4096), at=0)
    assert sim.observe(blocks(4096), at=1).cache_read_tokens == 0


def test_no_cache_style_bills_every_token_as_input() -> None:
    sim = CacheSimulator(dataclasses.replace(OPENAI, cache_style="none"))
    sim.observe(blocks(4096), at=0)
    cost = sim.observe(blocks(4096), at=1)
    assert cost.cache_read_tokens == 0
    assert cost.cost_usd == pytest.approx(usd(4096, 2.0))


def test_block_meter_keys_messages_by_content_and_counts_tool_calls() -> None:
    meter = BlockMeter(HeuristicCounter())
    call = {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": '{"command": "ls -la"}'}}
    body = {
        "tools": [{"type": "function", "function": {"name": "bash", "description": "run", "parameters": {}}}],
        "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": "a.py\nb.py"},
        ],
    }
    out = meter.blocks(body)
    assert len(out) == 4
    again = meter.blocks({"messages": [{"role": "system", "content": "be brief"}]})
    assert again[0] == out[1]
    assert out[2].tokens > 4  # the call's name and arguments are counted
    edited = meter.blocks({"messages": [{"role": "system", "content": "be briefer"}]})
    assert edited[0].key != out[1].key


@pytest.mark.parametrize("profile", [OPENAI, ANTHROPIC], ids=["automatic", "breakpoints"])
def test_a_seeded_prefix_is_read_by_the_first_request_until_it_expires(profile: ModelProfile) -> None:
    """A warm start: the agent's system prompt and tools, cached by an earlier session."""
    warm = blocks(4096, tag="w")
    request = [*warm, *blocks(900, 300, tag="r")]
    seeded = CacheSimulator(profile)
    seeded.seed(warm, at=0)
    first = seeded.observe(request, at=10, breakpoints=[0, 2])
    assert first.cache_read_tokens == 4096
    cold = CacheSimulator(profile).observe(request, at=10, breakpoints=[0, 2])
    assert cold.cache_read_tokens == 0 and cold.cost_usd > first.cost_usd
    late = CacheSimulator(profile)
    late.seed(warm, at=0)
    assert late.observe(request, at=301, breakpoints=[0, 2]).cache_read_tokens == 0  # 5 minutes passed


def test_the_meter_leaves_out_reasoning_items_of_earlier_turns_as_the_responses_api_strips_them() -> None:
    meter = BlockMeter(HeuristicCounter())
    reasoning = {"type": "reasoning", "summary": [], "encrypted_content": "gAAAA" + "x" * 4000}
    call = {"type": "function_call", "call_id": "c1", "name": "bash", "arguments": '{"command": "ls"}'}
    turn = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "List the files."}]},
        reasoning,
        call,
        {"type": "function_call_output", "call_id": "c1", "output": "a.py"},
    ]
    within, _ = meter.cut("openai_responses", {"input": turn})
    later = [*turn, {"type": "message", "role": "assistant", "content": "Done."}, {"role": "user", "content": "Next."}]
    after, _ = meter.cut("openai_responses", {"input": later})
    # Within its turn the item is read (and billed); after the next user message it is gone, so the
    # prompt shares the cache only up to where it sat.
    assert len(within) == 4 and len(after) == 5
    assert after[:1] == within[:1] and after[1] == within[2]
    assert sum(b.tokens for b in after) < sum(b.tokens for b in within)
    kept, _ = meter.cut("openai_responses", {"input": later, "reasoning": {"context": "all_turns"}})
    assert len(kept) == 6 and kept[1] == within[1]  # a request that keeps every turn's reasoning
