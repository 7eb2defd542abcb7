from __future__ import annotations

import re
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextwarden.errors import UsageError
from contextwarden.tokens import ExactCounter, HeuristicCounter, TokenCounter
from contextwarden.window.policies.presets import SHELL_POLICY, apply_policy
from contextwarden.window.policies.truncate import line_count, truncate_output

HEURISTIC = HeuristicCounter()


def _exact_counter() -> TokenCounter:
    try:
        with warnings.catch_warnings():
            # bpe-openai loads its vocabulary with a deprecated importlib.resources call
            warnings.simplefilter("ignore", DeprecationWarning)
            counter = ExactCounter("o200k_base")
            counter.count("warm up")
            return counter
    except ImportError:
        pytest.skip("bpe-openai is not installed: exact counts need pip install 'contextwarden[tokenizers]'")


@pytest.fixture(scope="module")
def exact() -> TokenCounter:
    return _exact_counter()


_MARKER_CALL = re.compile(r'read_range\(artifact_id="([^"]+)", start_line=(\d+), end_line=(\d+)\)')


def _numbered(n: int, word: str = "line") -> list[str]:
    return [f"{word} {i} of the build log: compiling module_{i} with default flags" for i in range(1, n + 1)]


def test_line_count() -> None:
    assert line_count("") == 0
    assert line_count("a") == 1
    assert line_count("a\n") == 1
    assert line_count("a\nb") == 2
    assert line_count("\n\n") == 2


def test_under_the_limit_is_unchanged(exact: TokenCounter) -> None:
    text = "\n".join(_numbered(20)) + "\n"
    cut = truncate_output(text, max_tokens=10_000, counter=exact, artifact_id="a1")
    assert cut.text == text
    assert not cut.truncated
    assert cut.original_tokens == exact.count(text)
    assert cut.original_tokens_exact
    assert cut.original_lines == 20
    assert cut.kept_ranges == ((1, 20),)


def test_empty_text_is_unchanged(exact: TokenCounter) -> None:
    cut = truncate_output("", max_tokens=5, counter=exact, artifact_id="a1")
    assert (cut.text, cut.truncated, cut.original_lines, cut.kept_ranges) == ("", False, 0, ())


def test_over_the_limit_keeps_head_tail_and_a_complete_marker(exact: TokenCounter) -> None:
    lines = _numbered(2_000)
    text = "\n".join(lines) + "\n"
    cut = truncate_output(text, max_tokens=1_000, counter=exact, artifact_id="res-42")
    assert cut.truncated
    assert exact.count(cut.text) <= 1_000
    assert cut.original_tokens == exact.count(text)
    assert cut.original_lines == 2_000
    (head_start, head_end), (tail_start, tail_end) = cut.kept_ranges
    assert head_start == 1 and tail_end == 2_000 and head_end < tail_start
    assert cut.text.startswith("\n".join(lines[:head_end]) + "\n")
    assert cut.text.endswith("\n".join(lines[tail_start - 1 :]) + "\n")
    marker = next(line for line in cut.text.splitlines() if line.startswith("[... output truncated"))
    assert f"{exact.count(text):,} tokens" in marker and "about" not in marker
    assert "2,000 lines" in marker
    assert f"lines 1-{head_end} and lines {tail_start}-2000" in marker
    assert "no error-like lines" in marker
    call = _MARKER_CALL.search(marker)
    assert call is not None
    assert call.groups() == ("res-42", str(head_end + 1), str(tail_start - 1))


def test_head_fraction_moves_the_split(exact: TokenCounter) -> None:
    text = "\n".join(_numbered(2_000)) + "\n"
    head_heavy = truncate_output(text, max_tokens=1_000, counter=exact, artifact_id="x", head_fraction=0.9)
    tail_heavy = truncate_output(text, max_tokens=1_000, counter=exact, artifact_id="x", head_fraction=0.1)
    assert head_heavy.kept_ranges[0][1] > 4 * tail_heavy.kept_ranges[0][1]


def _cargo_log_with_error_in_the_middle() -> tuple[str, int]:
    lines = [f"   Compiling crate_{i} v0.{i}.0" for i in range(600)]
    lines[300] = "error[E0308]: mismatched types"
    lines[301] = "  --> src/parse.rs:41:17"
    lines[302] = "error: could not compile `parser` (lib) due to 1 previous error"
    lines += [f"  Downloaded noise_{i} v1.0.0" for i in range(400)]
    return "\n".join(lines) + "\n", 301


def test_error_in_the_middle_with_noise_tail_is_kept_with_line_numbers(exact: TokenCounter) -> None:
    text, error_line = _cargo_log_with_error_in_the_middle()
    cut = truncate_output(text, max_tokens=600, counter=exact, artifact_id="build")
    assert cut.truncated and exact.count(cut.text) <= 600
    assert f"[line {error_line}] error[E0308]: mismatched types" in cut.text
    assert f"[line {error_line + 2}] error: could not compile `parser`" in cut.text
    assert "src/parse.rs:41:17" not in cut.text  # not error-like, not in head or tail
    assert (error_line, error_line) in cut.kept_ranges
    assert "Its 2 error-like line(s) are shown below, each with its line number" in cut.text
    assert "the output continues at line" in cut.text
    assert cut.error_lines_omitted == 0


def test_failure_at_the_end_stays_visible(exact: TokenCounter) -> None:
    lines = [f"tests/test_mod_{i}.py::test_case PASSED" for i in range(800)]
    lines += ["FAILED tests/test_parse.py::test_unicode - AssertionError: 'a' != 'b'",
              "========= 1 failed, 800 passed in 12.31s ========="]  # fmt: skip
    cut = truncate_output("\n".join(lines), max_tokens=500, counter=exact, artifact_id="t")
    assert cut.text.endswith("1 failed, 800 passed in 12.31s =========")
    assert "FAILED tests/test_parse.py::test_unicode" in cut.text


def test_zero_error_summaries_are_not_error_lines(exact: TokenCounter) -> None:
    lines = _numbered(1_000)
    lines[500] = "Summary: 0 errors, 0 failed, no exceptions"
    lines[501] = "Exception in thread main: boom"
    cut = truncate_output("\n".join(lines), max_tokens=500, counter=exact, artifact_id="z")
    assert "0 errors, 0 failed" not in cut.text
    assert "[line 502] Exception in thread main: boom" in cut.text


def test_pytest_detail_lines_and_exit_codes_are_error_like(exact: TokenCounter) -> None:
    lines = _numbered(1_000)
    lines[400] = "E       assert 41 == 42"
    lines[401] = "e   lowercase e line is not pytest detail"
    lines[600] = "Process finished with exit code 2"
    lines[700] = "Segmentation fault (core dumped)"
    cut = truncate_output("\n".join(lines), max_tokens=600, counter=exact, artifact_id="p")
    assert "[line 401] E       assert 41 == 42" in cut.text
    assert "[line 601] Process finished with exit code 2" in cut.text
    assert "[line 701] Segmentation fault (core dumped)" in cut.text
    assert "lowercase e line" not in cut.text


def test_many_error_lines_keep_the_first_and_the_last(exact: TokenCounter) -> None:
    lines = _numbered(3_000)
    for i in range(1_000, 2_000):
        lines[i] = f"ERROR test_{i} failed with ValueError"
    cut = truncate_output("\n".join(lines), max_tokens=800, counter=exact, artifact_id="m")
    assert exact.count(cut.text) <= 800
    assert "[line 1001] ERROR test_1000 failed" in cut.text
    assert "[line 2000] ERROR test_1999 failed" in cut.text
    assert "of them, from its start and its end, are shown below" in cut.text
    assert cut.error_lines_omitted > 900


def test_error_lines_are_not_kept_when_disabled(exact: TokenCounter) -> None:
    text, _ = _cargo_log_with_error_in_the_middle()
    cut = truncate_output(text, max_tokens=600, counter=exact, artifact_id="b", keep_error_lines=False)
    assert "mismatched types" not in cut.text
    assert "error-like" not in cut.text


def test_a_single_huge_line_is_cut_by_characters(exact: TokenCounter) -> None:
    text = "".join(f"{i:06d}," for i in range(50_000))
    cut = truncate_output(text, max_tokens=300, counter=exact, artifact_id="one")
    assert cut.truncated and exact.count(cut.text) <= 300
    assert cut.text.startswith("000000,000001,")
    assert cut.text.endswith("049998,049999,")
    assert "characters of line 1" in cut.text
    assert cut.kept_ranges == ((1, 1),)


def test_line_numbers_can_start_later(exact: TokenCounter) -> None:
    text = "\n".join(_numbered(1_000)) + "\n"
    cut = truncate_output(text, max_tokens=400, counter=exact, artifact_id="r", first_line=501)
    assert cut.kept_ranges[0][0] == 501 and cut.kept_ranges[-1][1] == 1_500
    call = _MARKER_CALL.search(cut.text)
    assert call is not None and int(call.group(2)) == cut.kept_ranges[0][1] + 1


def test_heuristic_counter_sizes_are_stated_as_estimates() -> None:
    text = "\n".join(_numbered(2_000))
    cut = truncate_output(text, max_tokens=500, counter=HEURISTIC, artifact_id="h")
    assert not cut.original_tokens_exact
    assert f"about {cut.original_tokens:,} tokens (estimated)" in cut.text


@pytest.mark.parametrize("limit", [1, 2, 5, 10, 20, 40, 80])
def test_tiny_limits_still_fit(limit: int, exact: TokenCounter) -> None:
    text = "\n".join(_numbered(300))
    cut = truncate_output(text, max_tokens=limit, counter=exact, artifact_id="tiny-artifact")
    assert cut.truncated
    assert exact.count(cut.text) <= limit


def test_bad_arguments_are_refused(exact: TokenCounter) -> None:
    with pytest.raises(UsageError):
        truncate_output("x", max_tokens=0, counter=exact, artifact_id="a")
    with pytest.raises(UsageError):
        truncate_output("x", max_tokens=10, counter=exact, artifact_id="a", head_fraction=1.5)


_LINE = st.one_of(
    st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40),
    st.sampled_from(["error: boom", "FAILED x", "E   assert 0", "ok", "", "  Compiling x v1", "界界界", "x" * 500]),
)


@given(
    lines=st.lists(_LINE, max_size=120),
    limit=st.integers(min_value=1, max_value=400),
    head=st.floats(min_value=0.0, max_value=1.0),
    errors=st.booleans(),
)
@settings(max_examples=300, deadline=None)
def test_result_never_exceeds_the_limit(
    lines: list[str], limit: int, head: float, errors: bool, exact: TokenCounter
) -> None:
    text = "\n".join(lines)
    for counter in (HEURISTIC, exact):
        cut = truncate_output(
            text, max_tokens=limit, counter=counter, artifact_id="prop", head_fraction=head, keep_error_lines=errors
        )
        assert counter.count(cut.text) <= limit
        assert cut.truncated == (cut.text != text)
        assert cut.original_lines == line_count(text)
        for start, end in cut.kept_ranges:
            assert 1 <= start <= end <= max(cut.original_lines, 1)


def test_one_hundred_megabytes_are_bounded() -> None:
    block = "\n".join(f"  Compiling crate_{i} v0.1.{i} (/build/crate_{i})" for i in range(1_000)) + "\n"
    middle = "error[E0432]: unresolved import `crate::missing`\n"
    half = block * 1_100
    text = half + middle + half
    assert len(text) > 100_000_000
    cut = apply_policy(text, SHELL_POLICY, counter=HEURISTIC, artifact_id="huge")
    assert cut.truncated and HEURISTIC.count(cut.text) <= SHELL_POLICY.max_tokens
    assert not cut.original_tokens_exact and "(estimated)" in cut.text
    assert cut.original_lines == line_count(text)
    assert f"[line {half.count(chr(10)) + 1}] error[E0432]: unresolved import" in cut.text


def test_error_lines_are_numbered_right_after_letters_that_lowercase_longer(exact: TokenCounter) -> None:
    # "İ".lower() is two characters; the scan must not shift offsets.
    lines = [f"İstanbul İzmir row {i} processed" for i in range(1_000)]
    lines[600] = "FATAL: disk full while writing row 600"
    lines[700] = "构建失败：找不到模块 parser"
    lines[800] = "Killed"
    cut = truncate_output("\n".join(lines), max_tokens=700, counter=exact, artifact_id="u")
    assert "[line 601] FATAL: disk full while writing row 600" in cut.text
    assert "[line 701] 构建失败：找不到模块 parser" in cut.text
    assert "[line 801] Killed" in cut.text


def test_error_counts_in_the_marker_match_the_omitted_part(exact: TokenCounter) -> None:
    for first in range(10, 80, 3):
        lines = _numbered(2_000)
        errors = [*range(first, first + 12), 1_000]
        for i in errors:
            lines[i - 1] = f"error: problem at step {i}"
        cut = truncate_output("\n".join(lines), max_tokens=900, counter=exact, artifact_id="c")
        shown_here = re.search(r"shown here: lines 1-(\d+) and lines (\d+)-2000", cut.text)
        assert shown_here is not None
        head_end, tail_start = int(shown_here.group(1)), int(shown_here.group(2))
        in_middle = [i for i in errors if head_end < i < tail_start]
        shown = re.findall(r"^\[line (\d+)\] error", cut.text, re.MULTILINE)
        assert all(head_end < int(n) < tail_start for n in shown)
        assert len(shown) + cut.error_lines_omitted == len(in_middle), first
