from __future__ import annotations

import dataclasses

import pytest

from contextwarden.budget import (
    DEFAULT_RESERVE_TOKENS,
    BudgetPolicy,
    compaction_trigger,
    default_safety_margin,
    should_compact,
    summary_max_tokens,
    usable_input_budget,
)
from contextwarden.errors import UsageError
from contextwarden.models import ModelProfile, get_profile

# --------------------------------------------------------------------------- trigger


@pytest.mark.parametrize(
    ("window", "trigger"),
    [
        (200_000, 167_232),  # window − reserve is smaller
        (1_000_000, 850_000),  # 85% is smaller
        (128_000, 95_232),
        (400_000, 340_000),
    ],
)
def test_trigger_takes_the_smaller_of_ratio_and_reserve(window: int, trigger: int) -> None:
    assert compaction_trigger(window) == trigger


def test_trigger_boundaries_around_the_reserve() -> None:
    reserve = DEFAULT_RESERVE_TOKENS
    assert compaction_trigger(reserve) == 27_852  # window == reserve: floor(0.85 · 32,768)
    assert compaction_trigger(reserve + 1) == 1  # just above: window − reserve = 1 is smaller
    assert compaction_trigger(reserve + 10_000) == 10_000
    assert compaction_trigger(8_192) == 6_963  # a small local model
    assert compaction_trigger(2) == 1  # floor(1.7) = 1
    assert compaction_trigger(1) == 1  # floor(0.85) = 0 → at least 1


def test_trigger_unknown_window_and_invalid_arguments() -> None:
    assert compaction_trigger(None) is None
    for bad in (
        {"window": 0},
        {"window": -1},
        {"window": 10, "reserve": -1},
        {"window": 10, "ratio": 0.0},
        {"window": 10, "ratio": 1.5},
    ):
        window = bad.pop("window")
        with pytest.raises(UsageError):
            compaction_trigger(window, **bad)  # type: ignore[arg-type]


def test_trigger_floor_is_exact_decimal_arithmetic() -> None:
    # 0.29 · 100 is 28.999999999999996 in binary floating point; the trigger must be 29.
    assert compaction_trigger(100, reserve=0, ratio=0.29) == 29
    assert compaction_trigger(1_000, reserve=0, ratio=1.0) == 1_000


def test_should_compact_is_strictly_greater() -> None:
    trigger = compaction_trigger(200_000)
    assert not should_compact(160_000, trigger)  # a 200K session before a 20K test output
    assert should_compact(180_000, trigger)  # the same session after it
    assert not should_compact(167_232, trigger)  # exactly at the trigger: no
    assert should_compact(167_233, trigger)
    assert not should_compact(10**9, None)  # no trigger, no compaction


# --------------------------------------------------------------------------- usable input, summary


def test_usable_input_budget() -> None:
    gpt4o = get_profile("gpt-4o")
    assert (
        usable_input_budget(gpt4o, reserved_output=16_384, tool_schema_tokens=1_000, safety_margin=500)
        == 128_000 - 16_384 - 1_000 - 500
    )
    assert default_safety_margin(128_000) == 2_048 and default_safety_margin(8_192) == 163
    assert usable_input_budget(gpt4o, reserved_output=0) == 128_000 - 2_048
    assert usable_input_budget(gpt4o, reserved_output=100_000, tool_schema_tokens=50_000) == 0
    gpt5 = get_profile("gpt-5")  # a 400K window with a 272K input cap
    assert usable_input_budget(gpt5, reserved_output=8_192, safety_margin=0) == 272_000
    generic = get_profile("some-unknown-model")
    assert usable_input_budget(generic, reserved_output=4_096, safety_margin=0) == 128_000 - 4_096
    assert usable_input_budget(generic, reserved_output=0, safety_margin=0, fallback_window=50_000) == 50_000
    with pytest.raises(UsageError):
        usable_input_budget(gpt4o, reserved_output=-1)


def test_summary_max_tokens() -> None:
    assert summary_max_tokens(get_profile("claude-sonnet-4-5")) == 26_214  # floor(0.8 · 32,768)
    assert summary_max_tokens(get_profile("claude-3-5-haiku")) == 8_192  # the model's max output wins
    assert summary_max_tokens(get_profile("gpt-4o"), reserve=10_000) == 8_000
    assert summary_max_tokens(get_profile("gpt-4o"), reserve=0) == 1


# --------------------------------------------------------------------------- policy


def test_policy_defaults_follow_the_seed() -> None:
    policy = BudgetPolicy()
    assert policy.trigger_for(get_profile("claude-sonnet-4-5")) == 167_232
    assert policy.trigger_for(get_profile("gemini-2.5-pro")) == 891_289  # floor(0.85 · 1,048,576)
    assert policy.trigger_for(get_profile("gpt-5")) == 231_200  # of the 272K input window
    assert policy.trigger_for(get_profile("smollm2-135m")) == 6_963
    assert policy.trigger_for(get_profile("no-such-model")) == 128_000 - 32_768  # fallback − reserve
    assert policy.summary_max_tokens(get_profile("gpt-4o")) == 16_384
    assert policy.should_compact(167_233, get_profile("claude-sonnet-4-5"))
    assert not policy.should_compact(167_232, get_profile("claude-sonnet-4-5"))


def test_policy_output_reserve_and_usable_input() -> None:
    policy = BudgetPolicy()
    sonnet = get_profile("claude-sonnet-4-5")
    assert policy.output_reserve(sonnet) == 8_192
    assert policy.output_reserve(get_profile("smollm2-135m")) == 2_048  # capped by the model's max output
    assert policy.usable_input(sonnet, tool_schema_tokens=3_000) == 200_000 - 8_192 - 3_000 - 2_048
    tight = dataclasses.replace(policy, reserved_output=20_000, safety_margin=0)
    assert tight.usable_input(sonnet) == 180_000
    assert policy.input_window_for(get_profile("gpt-5")) == 272_000
    assert policy.input_window_for(get_profile("generic")) == 128_000


def test_policy_overrides_and_validation() -> None:
    sonnet = get_profile("claude-sonnet-4-5")
    assert BudgetPolicy(trigger_tokens=100_000).trigger_for(sonnet) == 100_000
    assert BudgetPolicy(reserve_tokens=10_000, trigger_ratio=0.5).trigger_for(sonnet) == 100_000
    small = ModelProfile(name="tiny", context_window=1_000, max_output_tokens=100)
    assert BudgetPolicy().trigger_for(small) == 850
    assert BudgetPolicy(fallback_window=10_000).trigger_for(get_profile("unknown-x")) == 1  # max(1, ...)
    for bad in (
        {"reserve_tokens": -1},
        {"trigger_ratio": 0.0},
        {"trigger_ratio": 1.2},
        {"fallback_window": 0},
        {"trigger_tokens": 0},
    ):
        with pytest.raises(UsageError):
            BudgetPolicy(**bad)  # type: ignore[arg-type]
    with pytest.raises(dataclasses.FrozenInstanceError):
        BudgetPolicy().reserve_tokens = 1  # type: ignore[misc]


def test_the_reserve_scales_with_the_models_max_output() -> None:
    policy = BudgetPolicy()
    declared = ModelProfile(name="declared-64k", context_window=65_536, max_output_tokens=4_096)
    assert policy.reserve_for(declared) == 8_192
    assert policy.trigger_for(declared) == 55_705  # floor(0.85 · 65,536), not 65,536 − 32,768
    assert policy.trigger_for(get_profile("gpt-4o")) == 108_800  # 16,384 of output
    assert policy.reserve_for(get_profile("claude-sonnet-4-5")) == DEFAULT_RESERVE_TOKENS  # capped
    assert policy.trigger_for(get_profile("claude-sonnet-4-5")) == 167_232
    fixed = BudgetPolicy(reserve_tokens=DEFAULT_RESERVE_TOKENS)
    assert fixed.trigger_for(declared) == 65_536 - 32_768  # a set reserve is used as is
    assert policy.summary_max_tokens(get_profile("gpt-4o")) == 16_384  # a summary's length does not scale


def test_a_scaled_reserve_never_makes_a_small_window_compact_earlier() -> None:
    # 10K window, 1K output: the scaled reserve (8,192) would leave window - reserve = 1,808
    small = dataclasses.replace(get_profile("gpt-4o"), name="small", context_window=10_000, max_output_tokens=1_000)
    assert BudgetPolicy().trigger_for(small) == 8_500  # 85% of the window, as with the full reserve
    assert BudgetPolicy(reserve_tokens=8_192).trigger_for(small) == 1_808  # an explicit reserve is taken as given
