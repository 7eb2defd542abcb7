"""Hostile input at the CLI: no traceback, no silent loss.

Lone surrogates are decided once at the import boundary, transcript text is never read as Rich markup,
a forced --format that does not fit fails and stores nothing.
"""

from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

import _paths
from contextwarden.cli import main
from contextwarden.errors import ImportFormatError
from contextwarden.importers import detect_transcript_format, load_transcript, text_size
from contextwarden.log.codec import event_to_dict

DATA = _paths.DATA / "transcripts"
BUNDLED = Path(str(resources.files("contextwarden") / "data" / "trajectories"))
SWE = BUNDLED / "swe-agent" / "ctf__i_got_id_demo.traj"
ANTHROPIC = DATA / "chat" / "anthropic.json"
ONE_PER_FORMAT = [
    DATA / "claude-code" / "session.jsonl",
    DATA / "codex" / "rollout.jsonl",
    DATA / "chat" / "openai.json",
    ANTHROPIC,
    DATA / "mini-swe-agent" / "slugify.traj.json",
    SWE,
    sorted((BUNDLED / "openhands").glob("*.json"))[0],
]
SURROGATE = re.compile("[\ud800-\udfff]")


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        main(argv)
        code = 0
    except SystemExit as done:
        code = int(done.code or 0)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CONTEXTWARDEN_STORE", raising=False)
    return tmp_path


# --------------------------------------------------------------------------- lone surrogates


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*_strings(k), *_strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _poison_longest_string(value: Any) -> Any:
    """``value`` with a lone surrogate appended to its longest string (the one most likely to be content)."""
    longest = max(_strings(value), key=len)

    def walk(node: Any) -> Any:
        if isinstance(node, str):
            return node + "\ud800" if node == longest else node
        if isinstance(node, dict):
            return {k: walk(v) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    return walk(value)


def _poisoned_copy(path: Path, tmp_path: Path) -> Path:
    text = path.read_text(encoding="utf-8")
    target = tmp_path / path.name
    if path.suffix == ".jsonl":
        lines = [json.loads(line) for line in text.splitlines() if line.strip()]
        index = max(range(len(lines)), key=lambda i: max(map(len, _strings(lines[i]))))
        lines[index] = _poison_longest_string(lines[index])
        target.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="ascii")
    else:
        target.write_text(json.dumps(_poison_longest_string(json.loads(text))), encoding="ascii")
    assert "\\ud800" in target.read_text(encoding="ascii")  # json.dumps escapes it: valid JSON, no valid text
    return target


@pytest.mark.parametrize("path", ONE_PER_FORMAT, ids=lambda p: p.name)
def test_every_importer_gets_lone_surrogates_replaced_and_counted(path: Path, tmp_path: Path) -> None:
    poisoned = _poisoned_copy(path, tmp_path)
    transcript = load_transcript(poisoned, format=detect_transcript_format(path))
    texts = [s for event in transcript.events for s in _strings(event_to_dict(event))]
    assert not any(SURROGATE.search(s) for s in texts)
    # the longest string may occur more than once (a file that repeats its messages), each poisoned
    assert any(re.match(r"replaced [1-9]\d* lone UTF-16 surrogate escape\(s\)", w) for w in transcript.warnings)
    for event in transcript.events:
        json.dumps(event_to_dict(event), ensure_ascii=False).encode("utf-8")  # storable and printable


def test_a_surrogate_transcript_imports_replays_to_a_report_and_inspects(
    in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = in_tmp / "sur.json"
    source.write_text(
        json.dumps(
            {"messages": [{"role": "user", "content": "fix it \ud800 now"}, {"role": "assistant", "content": "ok"}]}
        ),
        encoding="ascii",
    )
    code, out, err = run(["import", str(source)], capsys)
    assert code == 0, err
    assert "warning: replaced 1 lone UTF-16 surrogate" in out
    code, out, err = run(["replay", "sur", "--strategy", "raw", "--no-optimum", "--report", "r.html"], capsys)
    assert code == 0, err
    assert (in_tmp / "r.html").stat().st_size > 0 and "fix it \ufffd now" in (in_tmp / "r.html").read_text()
    code, out, err = run(["inspect", "sur"], capsys)
    assert code == 0, err
    assert "fix it \ufffd now" in out


# --------------------------------------------------------------------------- markup


MARKUP = "look: [/bold] [red]not red[/red] [link=http://x]x[/link] :smile: [/]"


def test_transcript_text_is_never_read_as_rich_markup(in_tmp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = in_tmp / "markup.json"
    messages = [{"role": "user", "content": MARKUP}, {"role": "assistant", "content": f"reply {MARKUP}"}]
    source.write_text(json.dumps({"messages": messages}), encoding="utf-8")
    assert run(["import", str(source)], capsys)[0] == 0
    for argv in (["inspect", "markup"], ["sessions", "show", "markup"], ["lint", "markup"]):
        code, out, err = run(argv, capsys)
        assert code in (0, 1) and "Traceback" not in err and "MarkupError" not in err, (argv, err)
        if argv[0] != "lint":
            assert "[/bold]" in " ".join(out.split()), argv  # shown literally, not parsed or dropped
    code, out, err = run(["replay", "markup", "--strategy", "raw", "--no-optimum"], capsys)
    assert code == 0, err


# --------------------------------------------------------------------------- forced formats


@pytest.mark.parametrize(
    ("path", "forced"),
    [
        (ANTHROPIC, "openai-chat"),  # would drop the system prompt, the tool_use, the tool_result, the thinking
        (SWE, "claude-code"),  # would be a session of 0 events
        (DATA / "mini-swe-agent" / "slugify.traj.json", "openai-chat"),
        (DATA / "codex" / "legacy.jsonl", "openai-chat"),
    ],
    ids=lambda v: v.name if isinstance(v, Path) else v,
)
def test_a_forced_format_that_does_not_fit_fails_in_one_line_and_stores_nothing(
    path: Path, forced: str, in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(["import", str(path), "--format", forced], capsys)
    assert code == 1 and out == ""
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert f"--format {forced} does not fit" in err and "nothing was imported" in err
    assert detect_transcript_format(path) in err  # says which format it looks like
    assert not (in_tmp / ".contextwarden").exists()


def test_the_misfit_message_says_what_and_how_much_is_lost() -> None:
    with pytest.raises(ImportFormatError) as raised:
        load_transcript(ANTHROPIC, format="openai-chat")
    whole = load_transcript(ANTHROPIC)
    message = str(raised.value)
    assert "tool_result 2" in message and "instruction 1" in message  # what the detected reading has
    assert f"{text_size(whole.events):,} characters" in message


def test_a_forced_format_that_keeps_everything_is_accepted() -> None:
    bare = DATA / "chat" / "bare-list.json"  # plain role/content messages read the same either way
    assert detect_transcript_format(bare) == "openai-chat"
    forced = load_transcript(bare, format="anthropic-messages")
    assert forced.format == "anthropic-messages" and len(forced.events) == len(load_transcript(bare).events)


def test_a_file_with_no_events_is_an_error_not_an_empty_session(in_tmp: Path) -> None:
    empty = in_tmp / "only-summary.jsonl"
    empty.write_text(json.dumps({"type": "summary", "summary": "nothing", "leafUuid": "x"}) + "\n")
    with pytest.raises(ImportFormatError, match="holds no events to import"):
        load_transcript(empty)


def test_a_report_that_cannot_be_written_leaves_no_empty_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import contextwarden.report as report
    from contextwarden.replay import ReplaySettings, load_inputs, replay

    inputs = load_inputs([str(ANTHROPIC)])
    results = replay(inputs, ["raw"], settings=ReplaySettings(optimum=False))
    monkeypatch.setattr(report, "render_report", lambda *a, **k: "text no UTF-8 stream takes: \ud800")
    target = tmp_path / "r.html"
    with pytest.raises(UnicodeEncodeError):
        report.write_report(results, target)
    assert list(tmp_path.iterdir()) == []
