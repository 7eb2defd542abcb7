from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _paths import ROOT
from contextwarden.cli import main
from contextwarden.errors import UsageError
from contextwarden.log.events import (
    AssistantMessage,
    BinaryPart,
    Compaction,
    Event,
    SettingChange,
    ThinkingBlock,
    ToolCall,
    ToolResult,
    UsageReport,
    UserMessage,
)
from contextwarden.tokens import (
    IMAGE_TOKENS,
    MESSAGE_OVERHEAD,
    TOOL_CALL_OVERHEAD,
    CachedCounter,
    CalibratedCounter,
    EventTokenCache,
    ExactCounter,
    HeuristicCounter,
    TokenCounter,
    _exact,
    available_counters,
    best_counter,
    calibrate_from_events,
    event_tokens,
    seed_tiktoken_cache,
)

CORPUS = ROOT / "benchmarks" / "corpus"
SAMPLES = sorted(p for p in CORPUS.iterdir() if p.suffix != ".md" and not p.name.startswith("LICENSE"))
HEURISTIC = HeuristicCounter()


def _read(path: Path) -> str:
    return path.read_bytes().decode("utf-8", "surrogateescape")


@pytest.fixture(scope="module")
def o200k() -> ExactCounter:
    try:
        return ExactCounter("o200k_base")
    except ImportError:
        pytest.skip("bpe-openai is not installed: the exact o200k reference needs the tokenizers extra")


class Recording:
    """Counts characters as tokens and records every text it was asked about."""

    name = "recording"
    exact = False

    def __init__(self) -> None:
        self.calls: list[str] = []

    def count(self, text: str) -> int:
        self.calls.append(text)
        return len(text)


# --------------------------------------------------------------------------- heuristic accuracy


def test_corpus_covers_every_kind_the_target_names() -> None:
    kinds = {p.name for p in SAMPLES}
    assert kinds == {
        "prose_en.txt",
        "python_code.py.txt",
        "cpython_3.11.2_to_3.11.7.diff",
        "openhands_events.json",
        "terminal_ansi.log",
        "chinese_zh.txt",
    }


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_heuristic_error_band_on_real_samples(path: Path, o200k: ExactCounter) -> None:
    text = _read(path)
    exact = o200k.count(text)
    error = (HEURISTIC.count(text) - exact) / exact
    assert -0.05 <= error <= 0.35, f"{path.name}: heuristic off by {error:+.1%} against o200k"


@pytest.mark.parametrize(("name", "at_most"), [("chinese_zh.txt", -0.5), ("terminal_ansi.log", -0.2)])
def test_chars_over_four_undercounts_what_the_heuristic_handles(name: str, at_most: float, o200k: ExactCounter) -> None:
    text = _read(CORPUS / name)
    exact = o200k.count(text)
    assert (len(text) / 4 - exact) / exact < at_most
    assert HEURISTIC.count(text) >= exact


# --------------------------------------------------------------------------- heuristic robustness


def test_heuristic_edge_inputs() -> None:
    assert HEURISTIC.count("") == 0
    assert HEURISTIC.count("a") == 1
    assert HEURISTIC.count("\x00") >= 1
    assert HEURISTIC.count("a\udcff\ud800b") >= 3  # lone surrogates, inside and outside surrogateescape
    every_byte = bytes(range(256)).decode("utf-8", "surrogateescape")
    assert HEURISTIC.count(every_byte) > 0
    assert HEURISTIC.name == "heuristic" and HEURISTIC.exact is False
    assert isinstance(HEURISTIC, TokenCounter)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(codec=None, exclude_categories=())))
def test_heuristic_never_raises_and_is_zero_only_when_empty(text: str) -> None:
    n = HEURISTIC.count(text)
    assert n >= 0
    assert (n == 0) == (text == "")


def test_heuristic_long_text_is_counted_in_slices_consistently() -> None:
    line = "def handler(event):  # process 42 events\n    return event.payload['x'] * 2\n"
    small = line * 1_000
    big = line * 40_000  # over two slices
    ratio = HEURISTIC.count(big) / (40 * HEURISTIC.count(small))
    assert 0.99 < ratio < 1.01


def test_heuristic_repeated_separators_are_cheap(o200k: ExactCounter) -> None:
    text = ("=" * 79 + "\n") * 100
    assert HEURISTIC.count(text) < 6 * o200k.count(text)  # far from the 20x of a naive punctuation cost


# --------------------------------------------------------------------------- exact counter


def test_exact_counts_and_bad_text(o200k: ExactCounter) -> None:
    assert o200k.count("") == 0
    assert o200k.count("hello world") == 2
    assert o200k.name == "o200k_base" and o200k.exact is True
    assert o200k.count("<|endoftext|>") > 1  # special-token text is content, not a control token
    assert o200k.count("a\x00b") >= 2
    # undecodable bytes (surrogateescape) and a surrogate outside that range both count as U+FFFD
    assert o200k.count("a\udcff b") == o200k.count("a\ufffd b")
    assert o200k.count("a\ud800 b") == o200k.count("a\ufffd\ufffd\ufffd b")
    cl100k = ExactCounter("cl100k_base")
    assert cl100k.count(_read(CORPUS / "chinese_zh.txt")) > o200k.count(_read(CORPUS / "chinese_zh.txt"))


def test_exact_rejects_unknown_encoding() -> None:
    with pytest.raises(UsageError, match="p50k_base"):
        ExactCounter("p50k_base")


@pytest.fixture
def fresh_loaders() -> Iterator[None]:
    _exact._load.cache_clear()
    best_counter.cache_clear()
    yield
    _exact._load.cache_clear()
    best_counter.cache_clear()


def test_missing_tokenizers_raise_import_error_naming_the_extra(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, fresh_loaders: None
) -> None:
    monkeypatch.setitem(sys.modules, "bpe_openai", None)  # import bpe_openai now raises ImportError
    monkeypatch.setitem(sys.modules, "bpe_openai._bindings", None)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "empty-cache"))
    with pytest.raises(ImportError, match=r"pip install 'contextwarden\[tokenizers\]'"):
        ExactCounter()
    assert isinstance(best_counter("o200k_base"), HeuristicCounter)
    assert [c.name for c in available_counters()] == ["heuristic"]


def test_tiktoken_backend_from_seeded_cache(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, o200k: ExactCounter, fresh_loaders: None
) -> None:
    pytest.importorskip("tiktoken", reason="tiktoken is part of the tokenizers extra")
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "cache"))
    with pytest.raises(ImportError, match="no cached o200k_base"):
        ExactCounter(backend="tiktoken")  # refuses instead of downloading
    written = seed_tiktoken_cache()
    assert len(written) == 2 and all(p.parent == tmp_path / "cache" for p in written)
    _exact._load.cache_clear()
    via_tiktoken = ExactCounter(backend="tiktoken")
    assert via_tiktoken.backend == "tiktoken"
    for path in SAMPLES:
        text = _read(path)
        assert via_tiktoken.count(text) == o200k.count(text), path.name


def test_bpe_openai_public_api_fallback(
    monkeypatch: pytest.MonkeyPatch, o200k: ExactCounter, fresh_loaders: None
) -> None:
    def unavailable() -> None:
        raise ImportError("simulated: a bpe-openai whose compiled module has another layout")

    monkeypatch.setattr(_exact, "_bindings_module", unavailable)
    monkeypatch.setattr(_exact, "_SLICE_CHARS", 5_000)  # force several slices
    fallback = ExactCounter()
    text = _read(CORPUS / "python_code.py.txt")
    assert abs(fallback.count(text) - o200k.count(text)) <= 5  # slice seams may merge differently


def test_best_and_available_counters(o200k: ExactCounter) -> None:
    assert best_counter("o200k_base").exact
    assert best_counter("claude") is best_counter("claude")
    assert isinstance(best_counter("gemini"), HeuristicCounter)
    names = [c.name for c in available_counters()]
    assert names == ["o200k_base", "cl100k_base", "heuristic"]


# --------------------------------------------------------------------------- caching


def test_cached_counter_counts_each_text_once_and_is_bounded() -> None:
    base = Recording()
    cached = CachedCounter(base, maxsize=2)
    assert cached.count("abc") == cached.count("abc") == 3
    assert base.calls == ["abc"] and cached.hits == 1
    cached.count("d")
    cached.count("ef")  # evicts "abc"
    cached.count("abc")
    assert base.calls == ["abc", "d", "ef", "abc"]
    assert cached.name == "recording" and cached.exact is False


def test_event_token_cache_counts_each_event_once_per_counter() -> None:
    events = [UserMessage(text="hello"), ToolResult(call_id="c", tool_name="t", output="x" * 50)]
    cache = EventTokenCache(maxsize=10)
    first, second = Recording(), Recording()
    second.name = "other"
    totals = [sum(cache.tokens(e, first) for e in events) for _ in range(3)]
    assert totals == [totals[0]] * 3 and len(first.calls) == 2
    assert cache.hits == 4 and cache.misses == 2
    sum(cache.tokens(e, second) for e in events)
    assert len(second.calls) == 2  # a different counter name is a different entry
    small = EventTokenCache(maxsize=1)
    small.tokens(events[0], first)
    small.tokens(events[1], first)
    assert len(small) == 1


def test_event_token_cache_scales_calibrated_counts_without_recounting() -> None:
    base = Recording()
    calibrated = CalibratedCounter(base, factor=2.0)
    cache = EventTokenCache()
    event = UserMessage(text="x" * 100)
    assert cache.tokens(event, calibrated) == 2 * (100 + MESSAGE_OVERHEAD)
    calibrated.factor = 1.5
    assert cache.tokens(event, calibrated) == int(1.5 * (100 + MESSAGE_OVERHEAD) + 0.5)
    assert len(base.calls) == 1


def test_event_tokens_per_kind() -> None:
    counter = Recording()
    call = ToolCall(id="c1", name="read", arguments={"path": "a.py"})
    assistant = AssistantMessage(text="ok", thinking=(ThinkingBlock(text="hmm"),), tool_calls=(call,))
    args = '{"path":"a.py"}'
    assert event_tokens(assistant, counter) == MESSAGE_OVERHEAD + 2 + 3 + TOOL_CALL_OVERHEAD + 4 + len(args)
    image = BinaryPart(media_type="image/png", data=b"\x89PNG")
    assert event_tokens(UserMessage(text="see", parts=(image,)), counter) == MESSAGE_OVERHEAD + 3 + IMAGE_TOKENS
    assert event_tokens(UsageReport(input_tokens=10), counter) == 0
    assert event_tokens(SettingChange(model="gpt-4o"), counter) == 0
    assert event_tokens(Compaction(summary="s" * 10, first_kept_seq=3), counter) == MESSAGE_OVERHEAD + 10


# --------------------------------------------------------------------------- usage anchoring


# --------------------------------------------------------------------------- calibration


def test_calibrated_counter_smooths_and_clamps() -> None:
    base = Recording()
    calibrated = CalibratedCounter(base, smoothing=0.5, max_factor=2.0, min_sample_tokens=100)
    assert calibrated.observe(1_000, 1_400)
    assert calibrated.factor == pytest.approx(1.2)
    assert not calibrated.observe(50, 500)  # too small to tell
    assert not calibrated.observe(1_000, 0)
    calibrated.observe(1_000, 100_000)  # absurd ratio: clamped to max_factor before smoothing
    assert calibrated.factor == pytest.approx(1.6)
    assert calibrated.samples == 2
    assert calibrated.count("x" * 10) == 16
    assert calibrated.name == "recording*1.600" and calibrated.exact is False
    with pytest.raises(ValueError):
        CalibratedCounter(base, smoothing=0.0)


def test_calibration_from_usage_learns_the_real_ratio(o200k: ExactCounter) -> None:
    """A session whose 'provider' reports exact o200k counts plus a constant overhead
    (system prompt and tool schemas it never sees as events)."""
    texts = [_read(p) for p in SAMPLES]
    events: list[Event] = [UserMessage(text="start")]
    reported = 1_500  # the overhead: cancels out of increments
    for i, text in enumerate(texts * 2):
        reply = AssistantMessage(text=f"step {i}", tool_calls=(ToolCall(id=f"c{i}", name="read"),))
        events.append(reply)
        events.append(UsageReport(input_tokens=reported, output_tokens=5, response_event_id=reply.id))
        result = ToolResult(call_id=f"c{i}", tool_name="read", output=text)
        events.append(result)
        reported += event_tokens(reply, o200k) + event_tokens(result, o200k)
    calibrated = calibrate_from_events(events, HEURISTIC)
    assert calibrated.samples == len(texts) * 2 - 1
    # the heuristic over-counts by design; calibration brings a held-out text close to exact
    held_out = _read(CORPUS / "python_code.py.txt") + _read(CORPUS / "prose_en.txt")
    exact = o200k.count(held_out)
    assert HEURISTIC.count(held_out) > 1.08 * exact
    assert abs(calibrated.count(held_out) - exact) < 0.08 * exact


def test_calibration_skips_pairs_across_window_events_and_model_changes() -> None:
    counter = Recording()

    def turn(input_tokens: int) -> list[Event]:
        reply = AssistantMessage(text="r" * 300)
        return [
            reply,
            UsageReport(input_tokens=input_tokens, response_event_id=reply.id),
            ToolResult(call_id="c", tool_name="t", output="o" * 600),
        ]

    events = [*turn(1_000), *turn(2_000)]
    assert calibrate_from_events(events, counter).samples == 1
    with_compaction = [*turn(1_000), Compaction(summary="s", first_kept_seq=1), *turn(2_000)]
    assert calibrate_from_events(with_compaction, counter).samples == 0
    with_switch = [*turn(1_000), SettingChange(model="claude-sonnet-4-5"), *turn(2_000)]
    assert calibrate_from_events(with_switch, counter).samples == 0
    assert calibrate_from_events(events, CalibratedCounter(counter, factor=2.0)).base is counter


# --------------------------------------------------------------------------- CLI


def test_cli_tokens_json_on_binary_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], o200k: ExactCounter
) -> None:
    path = tmp_path / "blob.bin"
    path.write_bytes(b"text \x00\xff\xfe\x80 more \xe4\xbd\xa0\xe5\xa5\xbd" + bytes(range(256)))
    main(["tokens", str(path), "--json"])
    report = json.loads(capsys.readouterr().out)
    rows = {row["counter"]: row for row in report["counters"]}
    assert set(rows) == {"o200k_base", "cl100k_base", "heuristic"}
    assert rows["o200k_base"]["exact"] is True and rows["heuristic"]["exact"] is False
    assert all(r["bytes"] == path.stat().st_size and r["tokens"] > 0 and r["ms"] >= 0 for r in rows.values())


def test_cli_tokens_table_and_missing_file(capsys: pytest.CaptureFixture[str]) -> None:
    main(["tokens", str(CORPUS / "chinese_zh.txt")])
    out = capsys.readouterr().out
    assert "heuristic" in out and "3,786" in out
    with pytest.raises(SystemExit) as exc:
        main(["tokens", "/nonexistent/file.txt"])
    assert exc.value.code == 2
