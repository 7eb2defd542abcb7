"""Model names the table does not hold: resolved by family and provider, and said so by the proxy."""

from __future__ import annotations

import logging
from pathlib import Path

import httpx
import pytest

from _paths import DATA
from _proxy import rig
from contextwarden.cli import main
from contextwarden.models import get_profile, resolve_profile
from contextwarden.proxy.bodyedit import count_breakpoints
from contextwarden.proxy.scripted import Reply


@pytest.mark.parametrize(
    ("name", "listed"),
    [
        # platform spellings of listed models
        ("global.anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5"),
        ("apac.anthropic.claude-sonnet-4-20250514-v1:0", "claude-sonnet-4"),
        ("eu.anthropic.claude-haiku-4-5-20251001-v1:0", "claude-haiku-4-5"),
        ("claude-opus-4-1@20250805", "claude-opus-4-1"),
        ("anthropic/claude-sonnet-4.5", "claude-sonnet-4-5"),
        ("google/gemini-3-pro-preview", "gemini-3-pro-preview"),
        ("models/gemini-2.5-pro", "gemini-2.5-pro"),
        ("claude-3.5-sonnet", "claude-3-5-sonnet"),
        ("gemini-2.5-flash-lite-preview-09-2025", "gemini-2.5-flash-lite"),
    ],
)
def test_platform_spellings_of_a_listed_model_are_that_model(name: str, listed: str) -> None:
    profile = get_profile(name)
    assert profile.name == listed
    assert profile.family_match is None and profile.known


@pytest.mark.parametrize(
    ("name", "family"),
    [
        ("claude-opus-4-8", "claude-opus-4-6"),
        ("claude-opus-4-10", "claude-opus-4-6"),  # a two-digit minor is not Opus 4.1
        ("claude-opus-4-8-20260101", "claude-opus-4-6"),
        ("us.anthropic.claude-opus-4-8-v1:0", "claude-opus-4-6"),
        ("claude-opus-4-8@20260101", "claude-opus-4-6"),
        ("anthropic/claude-opus-4.8", "claude-opus-4-6"),
        ("claude-sonnet-5", "claude-sonnet-4-6"),
        ("claude-haiku-4-7", "claude-haiku-4-5"),
        ("gpt-5.4", "gpt-5.2"),
        ("gpt-5.4-mini", "gpt-5-mini"),
        ("openai/gpt-5.5-codex", "gpt-5.3-codex"),
        ("o5-mini", "o4-mini"),
        ("o7", "o3"),
        ("gemini-3.5-pro", "gemini-3.1-pro-preview"),
        ("gemini-3.5-flash-preview", "gemini-3-flash-preview"),
    ],
)
def test_a_new_model_of_a_known_family_gets_that_familys_profile(name: str, family: str) -> None:
    profile = get_profile(name)
    listed = get_profile(family)
    assert profile.name == name and profile.family_match == family and profile.known
    assert profile.cache_style == listed.cache_style != "none"
    assert (profile.context_window, profile.input_price, profile.cache_read_price) == (
        listed.context_window,
        listed.input_price,
        listed.cache_read_price,
    )
    assert resolve_profile(name).family_match == family  # the library builds for it too


def test_an_unknown_name_gets_the_endpoints_provider_default_and_nothing_else_does() -> None:
    assert not get_profile("acme-coder").known
    assert get_profile("acme-coder").cache_style == "none"
    on_anthropic = get_profile("acme-coder", provider="anthropic")
    on_openai = get_profile("acme-coder", provider="openai")
    assert (on_anthropic.family_match, on_anthropic.cache_style) == ("claude-sonnet-4-5", "anthropic-breakpoints")
    assert (on_openai.family_match, on_openai.cache_style) == ("gpt-5", "openai-auto")


def _turns(r: object, model: str, turns: int) -> None:
    client = r.anthropic("k")  # type: ignore[attr-defined]
    messages: list[dict[str, object]] = [{"role": "user", "content": "read the module and fix the bug"}]
    for n in range(turns):
        r.upstream.push(Reply(text=f"step {n}", tool_calls=((f"toolu_{n}", "Bash", {"cmd": f"cat f{n}.py"}),)))  # type: ignore[attr-defined]
        reply = client.messages.create(
            model=model, max_tokens=64, system="You are a coding agent. " * 300, messages=messages
        )
        output = "\n".join(f"line {i} of file {n}: value = {i * n}" for i in range(200))
        messages += [
            {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in reply.content]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": output}]},
        ]


@pytest.mark.parametrize(
    ("model", "stand_in"), [("claude-opus-4-8", "claude-opus-4-6"), ("acme-coder", "claude-sonnet-4-5")]
)
def test_the_proxy_plans_a_stand_in_with_cache_rules_and_says_so_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str], model: str, stand_in: str
) -> None:
    caplog.set_level(logging.WARNING, logger="contextwarden.proxy")
    with rig(str(tmp_path / "s.db")) as r:
        _turns(r, model, 3)
        notes = [rec.getMessage() for rec in caplog.records if "not in the model table" in rec.getMessage()]
        assert len(notes) == 1 and repr(model) in notes[0] and repr(stand_in) in notes[0]
        # planned under Anthropic's cache rules: the proxy places breakpoints
        assert all(count_breakpoints(body) >= 1 for body in r.forwarded("/v1/messages"))
        # and the stand-in upstream, simulating Anthropic, caches them
        assert any(rec.usage is not None and rec.usage.cache_read_tokens > 0 for rec in r.upstream.received)
        metrics = httpx.get(r.url + "/metrics").text
        assert f'contextwarden_proxy_model_stand_ins_total{{model="{model}",profile="{stand_in}"}} 3.0' in metrics
        rows = r.rows()
        assert all(row.cost_usd > 0 and row.client_cost_usd > 0 for row in rows)  # priced, not $0
        stats = r.proxy.pipeline.ledger.stats()
        assert len(stats["model_notes"]) == 1 and repr(stand_in) in stats["model_notes"][0]
    capsys.readouterr()
    main(["proxy", "stats", "--store", str(tmp_path / "s.db")])
    printed = " ".join(capsys.readouterr().out.split())
    assert f"warning: model {model!r} is not in the model table: planned and priced as {stand_in!r}" in printed


def test_a_listed_model_gets_no_note(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="contextwarden.proxy")
    with rig(str(tmp_path / "s.db")) as r:
        _turns(r, "claude-sonnet-4-5", 2)
        assert not any("not in the model table" in rec.getMessage() for rec in caplog.records)
        assert r.proxy.pipeline.ledger.stats()["model_notes"] == []
        assert "contextwarden_proxy_model_stand_ins_total{" not in httpx.get(r.url + "/metrics").text


def test_a_frameworks_declared_window_beats_a_family_guess(tmp_path: Path) -> None:
    from contextwarden.integrations._core import Warden
    from contextwarden.log.store import MemoryStore

    warden = Warden(MemoryStore())
    assert warden.profile("gpt-5.4", context_window=64_000).context_window == 64_000
    assert warden.profile("gpt-5.4").context_window == get_profile("gpt-5.2").context_window
    assert warden.profile("gpt-5", context_window=64_000).context_window == 400_000  # a listed model's own


def test_a_command_line_model_of_a_known_family_is_accepted_with_a_note(
    capsys: pytest.CaptureFixture[str],
) -> None:
    transcript = DATA / "transcripts" / "claude-code" / "session.jsonl"
    main(["replay", "-q", "--no-optimum", "--strategy", "raw", "--model", "claude-opus-4-8", str(transcript)])
    printed = capsys.readouterr()
    assert "note: model 'claude-opus-4-8' is not in the model table: using 'claude-opus-4-6'" in printed.err
