"""Hostile names and values at the CLI and the stores: nothing leaves its folder, nothing reaches the terminal raw."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contextwarden.cli import main
from contextwarden.errors import UsageError
from contextwarden.log.events import AssistantMessage, UserMessage
from contextwarden.log.store import MemoryStore, SQLiteStore, import_jsonl, open_store
from contextwarden.proxy._db import ProxyDB
from contextwarden.replay import replay
from contextwarden.replay.inputs import ReplayInput
from contextwarden.replay.settings import ReplaySettings

BAD_IDS = ["../../../../tmp/x", "/etc/x", "a/b", "a\\b", "..", ".", "", " ", " x", "x\n", "x\x1b[2J"]


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


def _chat(path: Path, text: str = "hello") -> Path:
    messages = [
        {"role": "user", "content": text},
        {"role": "assistant", "content": f"you said: {text}"},
        {"role": "user", "content": "and then?"},
    ]
    path.write_text(json.dumps({"model": "gpt-4o", "messages": messages}))
    return path


# --------------------------------------------------------------------------- session ids and file names


@pytest.mark.parametrize("bad", BAD_IDS)
def test_import_as_refuses_an_id_that_is_not_a_name(in_tmp: Path, capsys: pytest.CaptureFixture[str], bad: str) -> None:
    chat = _chat(in_tmp / "chat.json")
    for flag in ("--as", "--session"):
        code, out, err = run(["import", str(chat), flag, bad, "--store", "s.db"], capsys)
        assert code == 2, (flag, bad, out, err)
        assert err.startswith("error:") and len(err.strip().splitlines()) == 1
        assert "Traceback" not in err
    with SQLiteStore(str(in_tmp / "s.db")) as store:
        assert store.list_sessions() == []


@pytest.mark.parametrize("store_kind", ["memory", "sqlite"])
def test_stores_refuse_new_sessions_whose_id_is_not_a_name(tmp_path: Path, store_kind: str) -> None:
    store = MemoryStore() if store_kind == "memory" else SQLiteStore(str(tmp_path / "s.db"))
    with store:
        store.create_session("parent")
        store.append("parent", [UserMessage(text="hi")], expected_last_seq=0)
        for bad in BAD_IDS:
            with pytest.raises(UsageError):
                store.create_session(bad)
            with pytest.raises(UsageError):
                store.fork("parent", at_seq=1, new_session_id=bad)
            header = {"kind": "session", "format": "contextwarden.session/1", "id": bad, "created_at": 1.0}
            line = json.dumps(header) + "\n"
            with pytest.raises(UsageError):
                import_jsonl(store, [line])  # type: ignore[arg-type]
        assert [s.id for s in store.list_sessions()] == ["parent"]
        store.create_session("name with inner spaces.v2:ok")  # what a name may hold


def test_replay_dumps_stay_inside_their_folder_whatever_the_names(tmp_path: Path) -> None:
    events = [UserMessage(text="hi"), AssistantMessage(text="hello"), UserMessage(text="again")]
    hostile = "../../../../" + str(tmp_path / "escaped")
    inputs = [ReplayInput(name=hostile, source="x", events=events), ReplayInput(name="..", source="y", events=events)]
    out = tmp_path / "out"
    replay(inputs, ["raw"], settings=ReplaySettings(model="gpt-4o", optimum=False), dump_dir=out)
    written = sorted(p for p in tmp_path.rglob("*") if p.is_file())
    assert len(written) == 2 and all(out in p.parents for p in written)
    assert not (tmp_path / "escaped.jsonl").exists()


def test_safe_file_name_keeps_plain_names_and_never_collides() -> None:
    from contextwarden._files import safe_file_name

    assert safe_file_name("gpt4__pydicom-1458") == "gpt4__pydicom-1458"
    assert safe_file_name("mask-last-n:2") == "mask-last-n:2"
    names = ["a/b", "a_b", "a\\b", "..", ".", "", "../x", "é"]
    files = [safe_file_name(n) for n in names]
    assert len(set(files)) == len(files)
    assert all("/" not in f and "\\" not in f and f.strip(".") for f in files)


# --------------------------------------------------------------------------- terminal text


def test_inspect_strips_terminal_escapes_from_transcript_text(in_tmp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    hostile = "title\x1b]0;pwned\x07 clear\x1b[2J\x1b[H link\x1b]8;;http://evil\x1b\\here\x1b]8;;\x1b\\ end"
    chat = _chat(in_tmp / "chat.json", hostile)
    assert run(["import", str(chat), "--as", "evil", "--store", "s.db"], capsys)[0] == 0
    code, out, err = run(["inspect", "evil", "--store", "s.db", "--model", "gpt-4o"], capsys)
    assert code == 0, err
    assert "\x1b" not in out and "\x07" not in out
    code, out, _ = run(["sessions", "show", "evil", "--store", "s.db"], capsys)
    assert code == 0 and "\x1b" not in out and "\x07" not in out


# --------------------------------------------------------------------------- values


@pytest.mark.parametrize("value", ["-1", "nan", "inf", "-inf"])
def test_replay_interval_refuses_what_no_clock_keeps(
    in_tmp: Path, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    chat = _chat(in_tmp / "chat.json")
    code, _, err = run(["replay", str(chat), "--strategy", "raw", f"--interval={value}"], capsys)
    assert code == 2 and "--interval" in err and "finite" in err
    with pytest.raises(UsageError):
        ReplaySettings(interval_seconds=float(value))


def test_an_unknown_store_scheme_is_an_error_naming_the_known_ones(
    in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for url in ("memroy:", "postgress://x", "sqlite:relative.db"):
        with pytest.raises(UsageError, match=r"memory:.*sqlite:///"):
            open_store(url)
        with pytest.raises(UsageError):
            ProxyDB(url)
    assert not list(in_tmp.iterdir())
    code, _, err = run(["sessions", "ls", "--store", "memroy:"], capsys)
    assert code != 0 and "unknown store URL scheme" in err
    open_store("./odd:name.db").close()  # a file whose name has a colon, spelled as a path
    assert (in_tmp / "odd:name.db").exists()
