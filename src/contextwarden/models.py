"""Model profiles: what a model can take (window, output, tokenizer) and what it costs.

The bundled profiles live in ``contextwarden/data/models.toml`` (with where each figure comes
from and when it was checked) and are loaded on first use. Users add or override profiles from
code with :func:`register_profile` or from their own TOML with :func:`load_profiles_toml`::

    [models.my-local-model]            # a new profile
    provider = "generic"
    context_window = 32_768
    max_output_tokens = 4_096

    [models.gpt-4o]                    # an override: unspecified fields keep their values
    input_price = 2.0

    [models.my-gpt]                    # a variant of an existing profile
    extends = "gpt-4.1"
    aliases = ["team-default"]

:func:`get_profile` accepts names, aliases, provider-prefixed names (``openai/gpt-4o``) and dated
or versioned snapshots (``gpt-4o-2024-08-06``, ``claude-sonnet-4-5-20250929``); any other name
gets a generic fallback profile with ``known=False``, so callers can warn instead of guessing.
"""

from __future__ import annotations

import dataclasses
import importlib.resources
import os
import re
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal, get_args

from ._families import bare_name, stand_in_name
from .errors import ConfigError, UnknownModelError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib  # type: ignore[import-not-found,no-redef,unused-ignore]

__all__ = [
    "CacheStyle",
    "ModelProfile",
    "Provider",
    "Tokenizer",
    "get_profile",
    "list_profiles",
    "load_profiles_toml",
    "register_profile",
]

Provider = Literal["openai", "anthropic", "google", "generic"]
Tokenizer = Literal["o200k_base", "cl100k_base", "claude", "gemini", "heuristic"]
CacheStyle = Literal["openai-auto", "anthropic-breakpoints", "gemini-implicit", "none"]


@dataclass(frozen=True, kw_only=True)
class ModelProfile:
    """What one model accepts and costs. Prices are USD per million tokens; ``None`` is unknown."""

    name: str
    """The canonical model name, as the provider's API spells it."""
    provider: Provider = "generic"
    """Who serves it, which decides the request format and the cache mechanics."""
    context_window: int | None = None
    """Input plus output tokens the model can attend to; ``None`` when unknown."""
    max_output_tokens: int = 4_096
    """The most tokens one response may have."""
    max_input_tokens: int | None = None
    """An input cap below the window, where the provider sets one (GPT-5: 272K of a 400K window)."""
    tokenizer: Tokenizer = "heuristic"
    """Tokenizer family; ``o200k_base`` and ``cl100k_base`` can be counted exactly offline."""
    input_price: float | None = None
    """Uncached input tokens."""
    output_price: float | None = None
    """Output tokens, reasoning included."""
    cache_write_price: float | None = None
    """Input tokens written to the prompt cache (Anthropic: the 5-minute cache, 1.25x input)."""
    cache_write_1h_price: float | None = None
    """Input tokens written to the 1-hour cache (Anthropic: 2x input)."""
    cache_read_price: float | None = None
    """Input tokens served from the prompt cache."""
    cache_style: CacheStyle = "none"
    """How prefix caching works: automatic (OpenAI, Gemini implicit), explicit breakpoints
    (Anthropic ``cache_control``), or not at all."""
    min_cacheable_tokens: int = 0
    """The shortest prefix the provider caches (OpenAI 1,024; Anthropic 1,024-4,096 by model)."""
    cache_granularity: int = 1
    """Cached prefixes grow in steps of this many tokens (OpenAI: 128)."""
    cache_ttl_seconds: int = 0
    """How long an unused cache entry lives (a conservative figure where it varies)."""
    supports_developer_role: bool = False
    """Whether instructions may use the ``developer`` role (OpenAI) instead of ``system``."""
    thinking_levels: tuple[str, ...] = ()
    """Supported reasoning levels, lowest first (``off`` first where thinking can be disabled)."""
    aliases: tuple[str, ...] = ()
    """Other names :func:`get_profile` resolves to this profile."""
    known: bool = True
    """``False`` for the generic fallback made up for a name the registry does not know."""
    family_match: str | None = None
    """Set when the registry does not hold this name and the profile is the registered
    ``family_match``'s figures under it (a newer model of a known family, a platform spelling);
    callers say so rather than pass it off as a listed model."""

    def __post_init__(self) -> None:
        problems = _validate(self)
        if problems:
            raise ConfigError(f"model profile {self.name!r}: " + "; ".join(problems))

    @property
    def input_window(self) -> int | None:
        """The most input tokens a request may carry: the window, or the input cap when lower."""
        if self.max_input_tokens is None:
            return self.context_window
        if self.context_window is None:
            return self.max_input_tokens
        return min(self.context_window, self.max_input_tokens)

    def cost(
        self,
        *,
        input_tokens: int,
        output_tokens: int = 0,
        cache_read_tokens: int = 0,
        cache_write_tokens: int = 0,
        cache_write_1h_tokens: int = 0,
    ) -> float | None:
        """USD for one call; ``input_tokens`` is the total input, cached and cache-written included.

        ``None`` when a price the call needs is unknown.
        """
        uncached = input_tokens - cache_read_tokens - cache_write_tokens - cache_write_1h_tokens
        parts = [
            (max(uncached, 0), self.input_price),
            (output_tokens, self.output_price),
            (cache_read_tokens, self.cache_read_price),
            (cache_write_tokens, self.cache_write_price),
            (cache_write_1h_tokens, self.cache_write_1h_price),
        ]
        total = 0.0
        for tokens, price in parts:
            if tokens:
                if price is None:
                    return None
                total += tokens * price / 1_000_000
        return total


_PRICES: Final = (
    "input_price",
    "output_price",
    "cache_write_price",
    "cache_write_1h_price",
    "cache_read_price",
)


def _validate(p: ModelProfile) -> list[str]:
    """Everything wrong with a profile, as messages naming the field."""
    problems = []
    if not p.name or p.name != p.name.strip():
        problems.append("name must be non-empty without surrounding spaces")
    for field, allowed in (("provider", Provider), ("tokenizer", Tokenizer), ("cache_style", CacheStyle)):
        if getattr(p, field) not in get_args(allowed):
            problems.append(f"{field} must be one of {', '.join(get_args(allowed))}")
    for field in ("context_window", "max_input_tokens"):
        value = getattr(p, field)
        if value is not None and value < 1:
            problems.append(f"{field} must be positive or unset")
    if p.max_output_tokens < 1:
        problems.append("max_output_tokens must be positive")
    if p.cache_granularity < 1:
        problems.append("cache_granularity must be at least 1")
    if p.min_cacheable_tokens < 0 or p.cache_ttl_seconds < 0:
        problems.append("min_cacheable_tokens and cache_ttl_seconds must not be negative")
    problems += [f"{f} must not be negative" for f in _PRICES if (getattr(p, f) or 0) < 0]
    return problems


# --------------------------------------------------------------------------- TOML


_FIELDS: Final = {
    f.name: f for f in dataclasses.fields(ModelProfile) if f.name not in ("name", "known", "family_match")
}
_INT_FIELDS: Final = {
    "context_window",
    "max_output_tokens",
    "max_input_tokens",
    "min_cacheable_tokens",
    "cache_granularity",
    "cache_ttl_seconds",
}
_OPTIONAL: Final = {"context_window", "max_input_tokens", *_PRICES}
_GENERIC_DEFAULTS: Final = ModelProfile(name="generic")


def _convert(key: str, value: Any) -> Any:
    """Check one TOML value against the field's type; return it in the field's Python form."""
    if key in _INT_FIELDS:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise TypeError("expected an integer")
    if key in _PRICES:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        raise TypeError("expected a number (USD per million tokens)")
    if key == "supports_developer_role":
        if isinstance(value, bool):
            return value
        raise TypeError("expected true or false")
    if key in ("thinking_levels", "aliases"):
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return tuple(value)
        raise TypeError("expected a list of strings")
    if isinstance(value, str):
        return value
    raise TypeError("expected a string")


def _profile_from_table(name: str, table: Mapping[str, Any], where: str) -> ModelProfile:
    """Build one profile from a ``[models.NAME]`` table; errors name the file and the key."""
    base_name = table.get("extends")
    if base_name is not None and not isinstance(base_name, str):
        raise ConfigError(f"{where}: models.{name}.extends: expected a profile name")
    if base_name is not None:
        base = get_profile(base_name)
        if not base.known:
            raise ConfigError(f"{where}: models.{name}.extends: unknown profile {base_name!r}")
    else:
        base = _registry().get(name.lower()) or _GENERIC_DEFAULTS
    values: dict[str, Any] = {}
    for key, value in table.items():
        if key == "extends":
            continue
        if key not in _FIELDS:
            raise ConfigError(f"{where}: models.{name}.{key}: unknown key; known keys: {', '.join(_FIELDS)}")
        if key in _OPTIONAL and value == "unknown":
            values[key] = None  # TOML has no null: "unknown" clears a figure
            continue
        try:
            values[key] = _convert(key, value)
        except TypeError as exc:
            raise ConfigError(f"{where}: models.{name}.{key}: {exc}, got {value!r}") from None
    # A variant does not inherit its base's aliases: they would point two profiles at one name.
    inherited_aliases = base.aliases if base_name is None else ()
    try:
        return dataclasses.replace(base, name=name, known=True, **{"aliases": inherited_aliases, **values})
    except ConfigError as exc:
        raise ConfigError(f"{where}: models.{name}: {exc}") from None


def _parse_toml(text: str, where: str) -> list[ModelProfile]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{where}: invalid TOML: {exc}") from None
    unknown = sorted(set(data) - {"models"})
    if unknown:
        raise ConfigError(f"{where}: {unknown[0]}: unknown top-level key (profiles go under [models.NAME])")
    models = data.get("models", {})
    if not isinstance(models, dict):
        raise ConfigError(f"{where}: models: expected tables [models.NAME]")
    profiles = []
    for name, table in models.items():
        if not isinstance(table, dict):
            raise ConfigError(f"{where}: models.{name}: expected a table")
        profile = _profile_from_table(name, table, where)
        register_profile(profile)  # later tables may extend earlier ones
        profiles.append(profile)
    return profiles


def load_profiles_toml(path: str | os.PathLike[str]) -> list[ModelProfile]:
    """Load and register the profiles in a TOML file (``[models.NAME]`` tables); return them.

    A table named after an existing profile overrides only the fields it sets; ``extends = "x"``
    starts from profile ``x``. Invalid TOML, unknown keys and wrong types raise
    :class:`~contextwarden.errors.ConfigError` naming the file and the key.
    """
    where = os.fspath(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{where}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{where}: not UTF-8 text") from None
    return _parse_toml(text, where)


# --------------------------------------------------------------------------- registry

_lock = threading.RLock()
_profiles: dict[str, ModelProfile] = {}
_aliases: dict[str, str] = {}
_loaded = False
_stand_ins: dict[str, ModelProfile] = {}

# Snapshot suffixes of a registered name: dates, latest, preview, exp, v1:0, OpenAI's 0613-style.
_SUFFIX: Final = re.compile(
    r"(?:[-@:](?:\d{4}-\d{2}-\d{2}|\d{8}|\d{2}-\d{2}|\d{3,4}|latest|preview|exp|v\d+(?::\d+)?))+"
)


def _registry() -> dict[str, ModelProfile]:
    """Return the registry, loading the bundled profiles on first use."""
    global _loaded
    with _lock:
        if not _loaded:
            _loaded = True
            data = importlib.resources.files("contextwarden") / "data" / "models.toml"
            _parse_toml(data.read_text(encoding="utf-8"), "contextwarden/data/models.toml")
        return _profiles


def register_profile(profile: ModelProfile) -> None:
    """Add ``profile`` to the registry, replacing any profile or alias of the same name."""
    with _lock:
        _registry()  # load the bundled profiles first, so they never overwrite this one
        key = profile.name.lower()
        old = _profiles.get(key)
        if old is not None:
            for alias in old.aliases:
                if _aliases.get(alias.lower()) == key:
                    del _aliases[alias.lower()]
        _profiles[key] = profile
        _aliases.pop(key, None)
        _stand_ins.clear()
        for alias in profile.aliases:
            _aliases[alias.lower()] = key


def _lookup(name: str) -> ModelProfile | None:
    profiles = _registry()
    key = name.lower()
    found = profiles.get(key) or profiles.get(_aliases.get(key, ""))
    if found is not None:
        return found
    # A snapshot of a registered model: the longest registered name that leaves only a suffix.
    for candidate in sorted({*profiles, *_aliases}, key=len, reverse=True):
        if key.startswith(candidate) and _SUFFIX.fullmatch(key[len(candidate) :]):
            return profiles.get(candidate) or profiles[_aliases[candidate]]
    return None


def get_profile(name: str, *, provider: Provider | None = None) -> ModelProfile:
    """Return the profile for a model name, alias, prefixed name or dated snapshot.

    A name of a known family (``claude-opus-4-8``, ``us.anthropic.claude-opus-4-8-v1:0``) gets the
    nearest registered version's figures under its own name, ``family_match`` naming it; with
    ``provider`` (who serves the endpoint) any other name gets that provider's default so. Anything
    else gets the ``generic`` profile renamed after the request, with ``known=False``.
    """
    requested = name.strip()
    found = _lookup(requested) or _lookup(bare_name(requested))  # without platform prefixes and tails
    if found is not None:
        return found
    key = f"{provider or ''}:{requested.lower()}"
    with _lock:
        cached = _stand_ins.get(key)
        if cached is None:
            profiles = _registry()
            listed = [p.name for p in profiles.values() if p.provider != "generic"]
            base = profiles.get(stand_in_name(requested, provider, listed) or "")
            if base is not None and requested:
                cached = dataclasses.replace(base, name=requested, aliases=(), family_match=base.name)
            else:
                cached = dataclasses.replace(profiles["generic"], name=requested or "generic", aliases=(), known=False)
            _stand_ins[key] = cached
    return cached


def list_profiles() -> list[ModelProfile]:
    """Every registered profile, by provider then name."""
    order = {p: i for i, p in enumerate(get_args(Provider))}
    return sorted(_registry().values(), key=lambda p: (order[p.provider], p.name))


def resolve_profile(model: str | ModelProfile) -> ModelProfile:
    """The profile to build for: a profile as given, or the registered one a name resolves to.

    Unlike :func:`get_profile`, which flags an unknown name and falls back to a generic window (what
    replaying a foreign transcript needs), this refuses it: building for a window nobody chose is
    how a 16K session gets inspected as a 200K one. Register a custom model with
    :func:`register_profile` or pass a :class:`ModelProfile`.
    """
    if isinstance(model, ModelProfile):
        return model
    profile = get_profile(model) if isinstance(model, str) else None
    if profile is None or not profile.known:
        names = ", ".join(p.name for p in list_profiles() if p.name != "generic")
        raise UnknownModelError(
            f"unknown model {model!r}; known models: {names} (see `contextwarden models`; register_profile adds one)"
        )
    return profile
