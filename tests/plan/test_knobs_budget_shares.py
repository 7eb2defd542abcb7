"""Two shares that size what survives: each changes the output when set."""

from __future__ import annotations

import dataclasses

from contextwarden.log.store.memory import MemoryStore
from contextwarden.models import get_profile
from contextwarden.plan.compaction.compactor import CompactionSettings, WindowCompactor
from contextwarden.tokens import HeuristicCounter
from contextwarden.window.policies.presets import SHELL_POLICY, apply_policy

COUNTER = HeuristicCounter()


def test_error_line_budget_fraction_decides_how_many_middle_errors_are_shown() -> None:
    lines = [f"step {n}: ok" for n in range(3000)]
    for n in range(200, 2800, 40):  # 65 failures spread over the middle
        lines[n] = f"tests/test_mod_{n}.py::test_case_{n} FAILED: AssertionError: expected {n}, got {n + 1}"
    text = "\n".join(lines)

    def shown(fraction: float) -> int:
        policy = dataclasses.replace(SHELL_POLICY, error_line_budget_fraction=fraction, max_tokens=2_000)
        cut = apply_policy(text, policy, counter=COUNTER, artifact_id="a")
        assert cut.truncated
        return cut.text.count("FAILED: AssertionError")

    assert shown(0.0) < shown(0.2) < shown(0.6)


def test_keep_recent_max_share_caps_the_verbatim_tail_of_a_small_window() -> None:
    profile = get_profile("gpt-4o")
    small = dataclasses.replace(profile, name="small-16k", context_window=16_000, max_output_tokens=2_000)

    def kept(share: float) -> int:
        settings = CompactionSettings(keep_recent_tokens=20_000, keep_recent_max_share=share)
        return WindowCompactor(MemoryStore(), counter=COUNTER, settings=settings).keep_recent(small)

    assert kept(0.2) < kept(0.35) < kept(0.6)
    big = dataclasses.replace(profile, name="big", context_window=1_000_000)
    # the share caps small windows only
    assert WindowCompactor(MemoryStore(), counter=COUNTER).keep_recent(big) == 20_000
