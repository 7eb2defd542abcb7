from __future__ import annotations

import dataclasses
import importlib.resources
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import tomllib

from contextwarden import models
from contextwarden.cli import main
from contextwarden.errors import ConfigError
from contextwarden.models import (
    ModelProfile,
    get_profile,
    list_profiles,
    load_profiles_toml,
    register_profile,
)

REQUIRED = {
    "openai": ["gpt-4o", "gpt-4o-mini", "gpt-4.1", "gpt-4.1-mini", "o3", "o4-mini", "gpt-5", "gpt-5-mini"],
    "anthropic": ["claude-sonnet-4-5", "claude-opus-4-1", "claude-haiku-4-5", "claude-3-5-haiku"],
    "google": ["gemini-2.5-pro", "gemini-2.5-flash"],
    "generic": ["generic", "smollm2-135m"],
}


@pytest.fixture
def registry() -> Iterator[None]:
    """Restore the global registry after a test that registers profiles."""
    models._registry()
    profiles, aliases = dict(models._profiles), dict(models._aliases)
    yield
    models._profiles.clear()
    models._profiles.update(profiles)
    models._aliases.clear()
    models._aliases.update(aliases)


def _toml(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "profiles.toml"
    path.write_text(text, encoding="utf-8")
    return path


# --------------------------------------------------------------------------- bundled profiles


@pytest.mark.parametrize(("provider", "name"), [(p, n) for p, names in REQUIRED.items() for n in names])
def test_required_profiles_are_bundled(provider: str, name: str) -> None:
    profile = get_profile(name)
    assert profile.known and profile.name == name and profile.provider == provider


def test_bundled_profiles_are_consistent() -> None:
    bundled = tomllib.loads((importlib.resources.files("contextwarden") / "data" / "models.toml").read_text())["models"]
    profiles = [p for p in list_profiles() if p.name in bundled]  # not the profiles other tests register
    assert len(profiles) == len(bundled)
    assert len({p.name for p in profiles}) == len(profiles)
    for p in profiles:
        if p.provider == "generic":
            continue
        assert p.context_window and p.context_window > p.max_output_tokens, p.name
        assert p.input_price and p.output_price and p.output_price > p.input_price, p.name
        if p.cache_style == "none":  # a legacy model without prompt caching (gpt-4-turbo)
            assert p.cache_read_price is None and p.cache_write_price is None, p.name
            continue
        assert p.cache_read_price is not None and p.cache_read_price < p.input_price, p.name
        if p.provider == "openai":
            assert (p.tokenizer, p.cache_style, p.min_cacheable_tokens, p.cache_granularity) == (
                "o200k_base",
                "openai-auto",
                1_024,
                128,
            )
            assert p.supports_developer_role and p.cache_write_price == p.input_price
        if p.provider == "anthropic":
            # Anthropic's published multipliers: 5-minute write 1.25x, 1-hour write 2x, read 0.1x
            assert p.cache_write_price == pytest.approx(1.25 * p.input_price), p.name
            assert p.cache_write_1h_price == pytest.approx(2 * p.input_price), p.name
            assert p.cache_read_price == pytest.approx(0.1 * p.input_price), p.name
            assert p.cache_style == "anthropic-breakpoints" and not p.supports_developer_role
        if p.thinking_levels and "off" in p.thinking_levels:
            assert p.thinking_levels[0] == "off"  # lowest first
    order = [p.provider for p in profiles]
    assert order == sorted(order, key=["openai", "anthropic", "google", "generic"].index)


def test_generic_and_local_profiles() -> None:
    generic = get_profile("generic")
    assert generic.context_window is None and generic.input_price is None and generic.tokenizer == "heuristic"
    local = get_profile("smollm2-135m")
    assert local.context_window == 8_192 and local.input_price == local.output_price == 0.0
    assert get_profile("SmolLM2").name == "smollm2-135m"


# --------------------------------------------------------------------------- lookup


@pytest.mark.parametrize(
    ("requested", "resolved"),
    [
        ("gpt-4o-2024-08-06", "gpt-4o"),
        ("gpt-4o-mini-2024-07-18", "gpt-4o-mini"),
        ("GPT-4.1", "gpt-4.1"),
        ("openai/gpt-4.1-mini", "gpt-4.1-mini"),
        ("chatgpt-4o-latest", "gpt-4o"),
        ("gpt-5-mini-2025-08-07", "gpt-5-mini"),
        ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),
        ("claude-sonnet-4-5@20250929", "claude-sonnet-4-5"),
        ("anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5"),
        ("us.anthropic.claude-haiku-4-5-20251001-v1:0", "claude-haiku-4-5"),
        ("claude-3-5-haiku-latest", "claude-3-5-haiku"),
        ("models/gemini-2.5-flash", "gemini-2.5-flash"),
        ("gemini-2.5-flash-preview-05-20", "gemini-2.5-flash"),
        (" o3 ", "o3"),
    ],
)
def test_get_profile_resolves_aliases_prefixes_and_snapshots(requested: str, resolved: str) -> None:
    profile = get_profile(requested)
    assert profile.known and profile.name == resolved


@pytest.mark.parametrize("requested", ["gpt-4o-audio-preview-x", "llama-3-70b", "mistral-large-2411", "o3-pro"])
def test_unknown_models_get_a_flagged_generic_profile(requested: str) -> None:
    profile = get_profile(requested)
    assert not profile.known and profile.name == requested
    assert profile.provider == "generic" and profile.context_window is None


# --------------------------------------------------------------------------- registration and TOML


def test_register_profile_overrides_and_moves_aliases(registry: None) -> None:
    register_profile(ModelProfile(name="team-model", context_window=50_000, aliases=("tm",)))
    assert get_profile("tm").context_window == 50_000
    register_profile(ModelProfile(name="team-model", context_window=60_000, aliases=("tm2",)))
    assert get_profile("tm2").context_window == 60_000
    assert not get_profile("tm").known  # the old alias went with the old profile
    register_profile(dataclasses.replace(get_profile("gpt-4o"), input_price=1.0))
    assert get_profile("gpt-4o-2024-08-06").input_price == 1.0


def test_load_profiles_toml_adds_overrides_and_extends(tmp_path: Path, registry: None) -> None:
    path = _toml(
        tmp_path,
        """
[models.my-local]
provider = "generic"
context_window = 32_768
max_output_tokens = 4_096
thinking_levels = ["off", "on"]

[models.gpt-4o]
input_price = 2
cache_read_price = "unknown"

[models.my-gpt]
extends = "gpt-4.1"
aliases = ["team-default"]
""",
    )
    loaded = load_profiles_toml(path)
    assert [p.name for p in loaded] == ["my-local", "gpt-4o", "my-gpt"]
    local = get_profile("my-local")
    assert local.context_window == 32_768 and local.thinking_levels == ("off", "on") and local.known
    gpt4o = get_profile("gpt-4o")
    assert gpt4o.input_price == 2.0 and gpt4o.cache_read_price is None
    assert gpt4o.context_window == 128_000 and gpt4o.aliases  # untouched fields and aliases stay
    team = get_profile("team-default")
    assert team.name == "my-gpt" and team.context_window == get_profile("gpt-4.1").context_window
    assert get_profile("gpt-4.1").known  # the base is unchanged


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[models.x\ncontext_window = 1", "invalid TOML"),
        ("[models.x]\nbogus = 1", "models.x.bogus: unknown key"),
        ("[models.x]\ncontext_window = '128k'", "models.x.context_window: expected an integer"),
        ("[models.x]\ncontext_window = true", "models.x.context_window: expected an integer"),
        ("[models.x]\ninput_price = 'cheap'", "models.x.input_price: expected a number"),
        ("[models.x]\naliases = 'y'", "models.x.aliases: expected a list of strings"),
        ("[models.x]\nsupports_developer_role = 1", "models.x.supports_developer_role: expected true or false"),
        ("[models.x]\nextends = 'nope'", "models.x.extends: unknown profile 'nope'"),
        ("[models.x]\nprovider = 'acme'", "models.x: model profile 'x': provider must be one of"),
        ("[models.x]\ncontext_window = -5", "context_window must be positive"),
        ("[settings]\na = 1", "settings: unknown top-level key"),
        ("models = 3", "models: expected tables"),
    ],
)
def test_invalid_profile_files_name_the_file_and_key(tmp_path: Path, registry: None, text: str, message: str) -> None:
    path = _toml(tmp_path, text)
    with pytest.raises(ConfigError) as exc:
        load_profiles_toml(path)
    assert str(path) in str(exc.value) and message in str(exc.value)


def test_unreadable_profile_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_profiles_toml(tmp_path / "missing.toml")
    binary = tmp_path / "binary.toml"
    binary.write_bytes(b"\xff\xfe[models]")
    with pytest.raises(ConfigError, match="not UTF-8"):
        load_profiles_toml(binary)


# --------------------------------------------------------------------------- the dataclass


def test_profile_validation_and_input_window() -> None:
    with pytest.raises(ConfigError, match="max_output_tokens must be positive"):
        ModelProfile(name="x", max_output_tokens=0)
    with pytest.raises(ConfigError, match="input_price must not be negative"):
        ModelProfile(name="x", input_price=-1.0)
    with pytest.raises(ConfigError, match="tokenizer must be one of"):
        ModelProfile(name="x", tokenizer="sentencepiece")  # type: ignore[arg-type]
    assert get_profile("gpt-5").input_window == 272_000
    assert get_profile("gpt-4o").input_window == 128_000
    assert ModelProfile(name="x", max_input_tokens=1_000).input_window == 1_000
    assert get_profile("generic").input_window is None


def test_cost() -> None:
    sonnet = get_profile("claude-sonnet-4-5")
    # 1M input of which 800K read from cache and 100K written: 100K * 3 + 800K * 0.3 + 100K * 3.75
    cost = sonnet.cost(
        input_tokens=1_000_000, output_tokens=10_000, cache_read_tokens=800_000, cache_write_tokens=100_000
    )
    assert cost == pytest.approx(0.3 + 0.24 + 0.375 + 0.15)
    assert get_profile("gpt-4o").cost(input_tokens=1_000_000) == pytest.approx(2.5)
    assert get_profile("generic").cost(input_tokens=10) is None
    assert get_profile("generic").cost(input_tokens=0) == 0.0
    assert get_profile("smollm2").cost(input_tokens=5_000, output_tokens=100) == 0.0


# --------------------------------------------------------------------------- CLI


def test_cli_models_json_and_extra_profiles(tmp_path: Path, capsys: pytest.CaptureFixture[str], registry: None) -> None:
    main(["models", "--json"])
    rows = {row["name"]: row for row in json.loads(capsys.readouterr().out)}
    assert set(REQUIRED["openai"]) <= set(rows) and rows["gpt-4o"]["aliases"] == ["gpt-4o-latest", "chatgpt-4o-latest"]
    path = _toml(tmp_path, "[models.my-model]\ncontext_window = 9_000\n")
    main(["models", "--json", "--profiles", str(path)])
    rows = {row["name"]: row for row in json.loads(capsys.readouterr().out)}
    assert rows["my-model"]["context_window"] == 9_000


def test_cli_models_table_and_bad_file(tmp_path: Path, capsys: pytest.CaptureFixture[str], registry: None) -> None:
    main(["models"])
    out = capsys.readouterr().out
    assert "claude-sonnet-4-5" in out and "gemini-2.5-pro" in out and "200,000" in out
    bad = _toml(tmp_path, "[models.x]\nwindow = 1\n")
    with pytest.raises(SystemExit) as exc:
        main(["models", "--profiles", str(bad)])
    assert exc.value.code == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(bad) in err and "models.x.window" in err
