from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from contextwarden.window.policies.normalize import REPEAT_NOTE, normalize_output, sanitize_output


def test_plain_text_is_unchanged_and_has_no_notes() -> None:
    text = "collected 3 items\n\ntests/test_a.py ...\t[100%]\n"
    out = normalize_output(text)
    assert out.text == text
    assert out.notes == ()


def test_ansi_colour_and_cursor_sequences_are_stripped() -> None:
    text = "\x1b[1m\x1b[31mFAILED\x1b[0m tests/test_a.py\n\x1b[2K\x1b[1Gdone\x1b[?25h\n"
    out = normalize_output(text)
    assert out.text == "FAILED tests/test_a.py\ndone\n"
    assert out.notes == ("stripped 6 ANSI escape sequences",)


def test_osc_hyperlinks_and_titles_keep_their_visible_text() -> None:
    text = "see \x1b]8;;https://example.com\x07the docs\x1b]8;;\x07 now\x1b]0;my title\x1b\\\n"
    assert normalize_output(text).text == "see the docs now\n"


def test_charset_and_two_byte_escapes_are_stripped() -> None:
    assert normalize_output("\x1b(Bplain\x1b7saved\x1b8\n").text == "plainsaved\n"


def test_carriage_return_progress_bar_keeps_only_its_final_state() -> None:
    text = "Downloading   0%\rDownloading  50%\rDownloading 100%\nDone\n"
    out = normalize_output(text)
    assert out.text == "Downloading 100%\nDone\n"
    assert out.notes == ("kept the final state of 1 carriage-return progress line",)


def test_progress_bar_cleared_with_spaces_keeps_last_visible_state() -> None:
    text = "step 1/3\rstep 3/3\r        \r\nnext\n"
    assert normalize_output(text).text == "step 3/3\nnext\n"


def test_crlf_line_endings_are_not_taken_for_progress_bars() -> None:
    assert normalize_output("first\r\nsecond\r\n").text == "first\nsecond\n"


def test_backspaces_are_applied() -> None:
    assert normalize_output("N\bNA\bAM\bME\bE\nab\b\bxy\n").text == "NAME\nxy\n"


def test_runs_of_three_or_more_identical_lines_collapse_with_a_count() -> None:
    text = "start\n" + "warning: deprecated\n" * 42 + "end\n"
    out = normalize_output(text)
    assert out.text == "start\nwarning: deprecated\n[... previous line repeated 41 more times]\nend\n"
    assert out.notes == ("collapsed 1 run of repeated lines (40 lines removed)",)


def test_two_identical_lines_stay() -> None:
    text = "same\nsame\nother\n"
    assert normalize_output(text).text == text


def test_run_at_the_end_without_final_newline() -> None:
    assert normalize_output("a\nx\nx\nx").text == "a\nx\n" + REPEAT_NOTE.format(n=2)


def test_blank_line_runs_collapse_too() -> None:
    assert normalize_output("a\n\n\n\n\nb\n").text == "a\n\n[... previous line repeated 3 more times]\nb\n"


def test_nul_and_undecodable_bytes_become_visible_escapes() -> None:
    raw = b"ok\x00bin\xff\xfe\n".decode("utf-8", "surrogateescape")
    out = normalize_output(raw)
    assert out.text == "ok\\x00bin\\xff\\xfe\n"
    assert "escaped 1 NUL byte as \\x00" in out.notes
    assert "escaped 2 undecodable bytes as \\xNN" in out.notes
    out.text.encode("utf-8")  # safe to send


def test_other_control_characters_are_escaped_tab_kept() -> None:
    out = normalize_output("bell\x07 tab\tform\x0cfeed\x7f\n")
    assert out.text == "bell\\x07 tab\tform\\x0cfeed\\x7f\n"


def test_sanitize_keeps_lines_and_controls_but_escapes_nul_and_surrogates() -> None:
    text = "a\r\nb\x1b[31m\x00c\udcff\n" + "x\n" * 5
    out = sanitize_output(text)
    assert out.text == "a\r\nb\x1b[31m\\x00c\\xff\n" + "x\n" * 5
    assert sanitize_output("clean\n").notes == ()


def test_a_run_of_note_lines_does_not_break_idempotence() -> None:
    note = REPEAT_NOTE.format(n=2)
    text = "\n".join(["A", "A", "A", note, note, note])
    once = normalize_output(text).text
    assert normalize_output(once).text == once


_PIECES = st.sampled_from(
    ["a", "b", " ", "\n", "\r", "\r\n", "\x1b[31m", "\x1b[0m", "\x1b]0;t\x07", "\x1b", "\x00", "\b", "\t", "\x07",
     "\udcff", "é", "界", "x\n", "x\n", REPEAT_NOTE.format(n=2) + "\n", "[", "m"]
)  # fmt: skip


@given(st.lists(_PIECES, max_size=60).map("".join))
@settings(max_examples=400, deadline=None)
def test_normalize_is_idempotent_and_safe(text: str) -> None:
    once = normalize_output(text).text
    assert normalize_output(once).text == once
    assert normalize_output(once).notes == ()
    once.encode("utf-8")
    assert "\x1b" not in once and "\r" not in once and "\x00" not in once


@given(st.lists(_PIECES, max_size=60).map("".join))
@settings(max_examples=200, deadline=None)
def test_sanitize_is_idempotent_and_keeps_line_count(text: str) -> None:
    once = sanitize_output(text).text
    assert sanitize_output(once).text == once
    assert once.count("\n") == text.count("\n")
    once.encode("utf-8")
