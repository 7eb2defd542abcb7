"""The framework adapters' benchmark: its scripted models report what a provider would."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from _paths import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))

pytest.importorskip("pydantic_ai")

import _arms_pydantic_ai

from contextwarden.log.events import UsageReport
from contextwarden.log.store import SQLiteStore
from contextwarden.replay.costmodel import BlockMeter
from contextwarden.tokens import best_counter


def test_the_pydantic_ai_model_reports_the_tokens_it_was_sent(tmp_path: Path) -> None:
    # contextwarden anchors its next estimate on the reported usage: a guess that undercounts lets a
    # request pass the compaction trigger unseen (FunctionModel's word count took one over the window)
    ran = _arms_pydantic_ai.run("contextwarden", "claude-sonnet-4-5", tmp_path / "bench.db")
    meter = BlockMeter(best_counter())
    sent = [sum(block.tokens for block in meter.blocks(body)) for body in ran.requests]
    reported = [e.input_tokens for e in SQLiteStore(tmp_path / "bench.db").read("bench") if isinstance(e, UsageReport)]
    assert len(reported) == len(sent) == 48
    assert reported == sent
