"""The default token counter: a byte- and script-aware estimate with no dependencies.

Plain ``len(text) / 4`` is off by a factor that depends on what the text is: it over-counts
English and Python by 10-25% and under-counts Chinese by about 65% and ANSI-coloured terminal
logs by 40-60% (measured against o200k, see ``docs/benchmarks.md``); under-counting is what
overflows a window. A BPE tokenizer first
splits text into *pieces* with a regular expression (a word with its leading space, a run of
digits up to three long, a run of punctuation, a run of newlines, an indentation run) and then
merges bytes inside each piece; common pieces are one token. So this counter approximates
o200k's piece count for ASCII text, adds a little for long words and long punctuation runs
(rarer, so split further) and for ANSI escapes, and weighs non-ASCII text by script: CJK
ideographs about 0.8 token each (o200k merges common pairs), other three-byte characters about
one, a two-byte character one inside a Latin word but about a quarter inside a run of them (whole
Greek or Cyrillic words), four-byte characters (emoji) one and a half.

Everything is computed with ``bytes.translate`` and ``bytes.count`` over a class string (one
byte per input byte saying "lower", "upper", "digit", "space", "newline", "punctuation" or which
kind of UTF-8 lead byte), so the Python interpreter never loops over pieces; see
``benchmarks/bench_tokens.py`` for the throughput.

The weights were fitted against o200k on real samples of English prose, Python, unified diffs,
JSON event logs, ANSI terminal logs and Chinese, then multiplied by a safety ``margin`` so that
the estimate stays above the exact count: the target is never more than 5% under and at most
35% over, and ``tests/shared/test_tokens.py`` checks it on the bundled corpus.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = ["HeuristicCounter", "HeuristicWeights"]


@dataclass(frozen=True, kw_only=True)
class HeuristicWeights:
    """Tokens per feature. The defaults are fitted to o200k_base (see the module docstring)."""

    long_word: float = 0.1
    """Extra tokens per five letters of a letter run (long words split into several tokens)."""
    very_long_word: float = 0.4
    """Extra tokens per twelve letters of a letter run (identifiers, hashes, rare words)."""
    punct_pair: float = 0.35
    """Extra tokens per two characters of a punctuation run."""
    punct_quad: float = 0.3
    """Extra tokens per four characters of a punctuation run."""
    separator: float = -1.6
    """Per eight repeated separator characters (``====``, ``----``): BPE merges them into long tokens."""
    mixed_case: float = 2.5
    """Per upper-lower-upper triple (``AaA``), rare in words and common in base64 and random ids."""
    long_blank: float = 1.0
    """Per 32 characters of a space or tab run (indentation beyond that splits)."""
    long_newline: float = 1.0
    """Per 16 newlines in a run of blank lines."""
    escape: float = 1.5
    """Extra tokens per ESC byte: ``\\x1b[`` never merges, and colour codes cut pieces short."""
    han: float = 0.78
    """Tokens per CJK ideograph (o200k merges common pairs; older vocabularies need ~1.0 or more)."""
    wide: float = 1.05
    """Tokens per other three-byte character (CJK punctuation, kana, Hangul, symbols, lone surrogates)."""
    narrow: float = 1.0
    """Tokens per two-byte character (accented Latin, Greek, Cyrillic, Hebrew, Arabic)."""
    narrow_run: float = -1.5
    """Per pair of adjacent two-byte characters: whole Cyrillic or Greek words merge better than
    an accent inside a Latin word."""
    astral: float = 1.5
    """Tokens per four-byte character (emoji, rare ideographs)."""
    margin: float = 1.15
    """Final multiplier that keeps the estimate above the exact count on unseen text."""


def _table(mapping: dict[bytes, bytes], default: bytes) -> bytes:
    """Build a 256-byte table mapping every byte of each key to its value, the rest to ``default``."""
    table = bytearray(default * 256)
    for sources, target in mapping.items():
        for byte in sources:
            table[byte] = target[0]
    return bytes(table)


_LOWER: Final = bytes(range(0x61, 0x7B))
_UPPER: Final = bytes(range(0x41, 0x5B))
_DIGIT: Final = bytes(range(0x30, 0x3A))
_BLANK: Final = b" \t\x0b\x0c"
_NEWLINE: Final = b"\n\r"
_PUNCT: Final = bytes(b for b in range(0x80) if not (chr(b).isalnum() or b in _BLANK or b in _NEWLINE))
_CONTINUATION: Final = bytes(range(0x80, 0xC0))

# One class byte per input byte; UTF-8 continuation bytes are deleted so a character is one class byte.
# Lead bytes E4-E9 start U+4000-U+9FFF, which is almost all CJK ideographs (the CJK blocks).
_CLASSES: Final = _table(
    {
        _LOWER: b"a",
        _UPPER: b"A",
        _DIGIT: b"d",
        _BLANK: b"s",
        _NEWLINE: b"n",
        _PUNCT: b"p",
        bytes(range(0xC0, 0xE0)): b"u",
        bytes(range(0xE0, 0xE4)) + bytes(range(0xEA, 0xF0)): b"v",
        bytes(range(0xE4, 0xEA)): b"h",
        bytes(range(0xF0, 0x100)): b"w",
    },
    b"?",
)
_LETTERS_ONLY: Final = _table({b"aA": b"a"}, b" ")
_FOLD_CASE: Final = bytes.maketrans(b"A", b"a")
_PUNCT_ONLY: Final = _table({b"p": b"p"}, b" ")
_DIGITS_ONLY: Final = _table({b"d": b"d"}, b" ")
_NEWLINES_ONLY: Final = _table({b"n": b"n"}, b" ")
_SPACING: Final = _table({b"s": b"s", b"d": b"d", b"n": b"n"}, b"o")

# Characters that form long separator lines; a run of one of them is a handful of tokens.
_SEPARATOR_RUNS: Final = tuple(bytes([c]) * 8 for c in b"=-*#_~.+/<>|")

# Texts longer than this are counted in slices cut at newlines, so the transient class strings
# stay a few megabytes however large a tool output is.
_SLICE_CHARS: Final = 1 << 20


def _runs(only: bytes, unit: bytes) -> int:
    """Count the maximal runs of ``unit`` in a string of ``unit`` and spaces."""
    # Count run ends, not starts: the search then skips along the rarer byte (unit), which is
    # several times faster than stopping at every space.
    return only.count(unit + b" ") + only.endswith(unit)


def _feature_sum(text: str, w: HeuristicWeights) -> float:
    """Unscaled token estimate of one slice of text."""
    ascii_only = text.isascii()
    raw = text.encode("ascii") if ascii_only else text.encode("utf-8", "surrogatepass")
    classes = raw.translate(_CLASSES, _CONTINUATION)
    folded = classes.translate(_FOLD_CASE)
    letters = classes.translate(_LETTERS_ONLY)
    punct = classes.translate(_PUNCT_ONLY)
    digits = classes.translate(_DIGITS_ONLY)
    newlines = classes.translate(_NEWLINES_ONLY, b"s")
    spacing = classes.translate(_SPACING)

    # Pieces, as o200k's pre-tokenizer cuts them: words split at lower→upper, digit groups of three,
    # punctuation runs (one glued to a following word unless a space or punctuation precedes it),
    # newline runs (absorbed by punctuation right before them), indentation and spaces before digits.
    total: float = (
        _runs(letters, b"a")
        + classes.count(b"aA")
        + _runs(digits, b"d")
        + digits.count(b"dddd")
        + _runs(punct, b"p")
        - (folded.count(b"pa") - folded.count(b"ppa") - folded.count(b"spa"))
        + _runs(newlines, b"n")
        - classes.count(b"pn")
        + spacing.count(b"sso")
        + spacing.count(b"sd")
        + spacing.count(b"ssd")
    )
    total += (
        w.long_word * letters.count(b"aaaaa")
        + w.very_long_word * letters.count(b"a" * 12)
        + w.punct_pair * punct.count(b"pp")
        + w.punct_quad * punct.count(b"pppp")
    )
    # Rare features: a substring test (a fast scan) decides whether counting is worth it.
    if b"AaA" in classes:
        total += w.mixed_case * classes.count(b"AaA")
    if b"pppppppp" in punct:
        total += w.separator * sum(map(raw.count, _SEPARATOR_RUNS))
    if b"s" * 32 in spacing:
        total += w.long_blank * spacing.count(b"s" * 32)
    if b"n" * 16 in newlines:
        total += w.long_newline * newlines.count(b"n" * 16)
    if b"\x1b" in raw:
        total += w.escape * raw.count(b"\x1b")
    if not ascii_only:
        total += (
            w.han * classes.count(b"h")
            + w.wide * classes.count(b"v")
            + w.narrow * classes.count(b"u")
            + w.narrow_run * classes.count(b"uu")
            + w.astral * classes.count(b"w")
        )
    return total


def _slices(text: str) -> list[str]:
    """Cut a long text into slices of about ``_SLICE_CHARS`` characters, at newlines where possible."""
    out: list[str] = []
    start = 0
    while len(text) - start > _SLICE_CHARS:
        end = text.rfind("\n", start + _SLICE_CHARS // 2, start + _SLICE_CHARS) + 1 or start + _SLICE_CHARS
        out.append(text[start:end])
        start = end
    out.append(text[start:])
    return out


class HeuristicCounter:
    """Estimate o200k token counts from bytes and scripts, without a tokenizer.

    Never raises on any ``str`` (NUL bytes, lone surrogates from undecodable input, control
    characters); an empty text is 0 tokens and any other text at least 1.
    """

    name: str = "heuristic"
    exact: bool = False

    def __init__(self, *, weights: HeuristicWeights | None = None) -> None:
        self.weights = weights or HeuristicWeights()

    def __repr__(self) -> str:
        return f"HeuristicCounter(weights={self.weights!r})"

    def count(self, text: str) -> int:
        """Estimated tokens in ``text`` (rounded, at least 1 for non-empty text)."""
        if not text:
            return 0
        if len(text) <= _SLICE_CHARS:
            total = _feature_sum(text, self.weights)
        else:
            total = sum(_feature_sum(part, self.weights) for part in _slices(text))
        return max(1, int(total * self.weights.margin + 0.5))
