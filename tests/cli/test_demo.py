from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from contextwarden.cli import cli
from contextwarden.cli.demo import DEFAULT_TRAJECTORY, DEMO_STRATEGIES, REPORT_NAME, bundled_trajectories
from contextwarden.importers import load_transcript
from contextwarden.log.events import AssistantMessage
from contextwarden.log.store import open_store


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CONTEXTWARDEN_STORE", raising=False)
    return tmp_path


def test_bundled_trajectories_are_real_files_with_their_license() -> None:
    found = bundled_trajectories()
    assert DEFAULT_TRAJECTORY in found
    for path in found.values():
        assert path.is_file() and (path.parent / "LICENSE").is_file()


def test_demo_imports_into_the_default_sqlite_store_replays_and_writes_the_report(in_tmp: Path) -> None:
    result = CliRunner().invoke(cli, ["demo"])
    assert result.exit_code == 0, result.output
    store_path = in_tmp / ".contextwarden" / "sessions.db"
    report = in_tmp / REPORT_NAME
    assert store_path.is_file() and report.is_file()
    transcript = load_transcript(bundled_trajectories()[DEFAULT_TRAJECTORY])
    calls = sum(isinstance(e, AssistantMessage) for e in transcript.events)
    store = open_store(str(store_path))
    try:
        session = f"demo-{DEFAULT_TRAJECTORY}"
        assert len(store.read(session)) == len(transcript.events)
    finally:
        store.close()
    out = result.output
    name = bundled_trajectories()[DEFAULT_TRAJECTORY].name
    assert f"imported {name} as session {session}" in out
    for strategy in DEMO_STRATEGIES:
        assert strategy in out
    assert f"{calls} model calls replayed" in out and ("o200k_base" in out or "heuristic" in out)
    html = report.read_text(encoding="utf-8")
    assert html.count('data-chart="composition"') == len(DEMO_STRATEGIES)
    assert "Transcript, request by request" in html and "needs_extensions checks versions using strings" in html
    # the first screen says what the replay found, in one sentence, in the table's terms
    sentence = next(line for line in out.splitlines() if line.startswith(f"Over {calls} model calls contextwarden"))
    assert sentence in html.split("<h2>")[0] + html.split("<h2>")[1]  # before the first table
    assert "contextwarden costs $" in sentence and "keeping every probe" in sentence

    again = CliRunner().invoke(cli, ["demo"])
    assert again.exit_code == 0, again.output
    assert f"reused {name} as session {session}" in again.output


def test_the_demo_session_shows_contextwarden_cheaper_than_raw_and_masking_keeping_every_probe(in_tmp: Path) -> None:
    result = CliRunner().invoke(cli, ["demo", "--json"])
    assert result.exit_code == 0, result.output
    figures = {s["name"]: s for s in json.loads(result.output)["strategies"]}
    ours, raw, masked = figures["contextwarden"], figures["raw"], figures["mask-last-n:10"]
    assert raw["requests"] >= 30  # a long session (the shared ones' median is 36), not one where nothing needs reducing
    assert ours["cost_usd"] < raw["cost_usd"] and ours["cost_usd"] < masked["cost_usd"]
    assert ours["input_tokens_total"] < raw["input_tokens_total"]
    assert ours["retention"] == 1.0 and min(ours["probe_retention"].values()) == 1.0


def test_demo_json_with_explicit_store_and_out(in_tmp: Path) -> None:
    store = in_tmp / "elsewhere.db"
    result = CliRunner().invoke(
        cli,
        [
            "demo",
            "--json",
            "--out",
            "reports",
            "--store",
            str(store),
            "--trajectory",
            "gpt4__pydicom-1458",
            "--model",
            "gpt-4o",
        ],
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert [s["name"] for s in doc["strategies"]] == list(DEMO_STRATEGIES)
    assert doc["model"] == "gpt-4o" and doc["session"] == "demo-gpt4__pydicom-1458"
    raw = doc["strategies"][0]
    assert raw["requests"] == 12 and raw["input_tokens_total"] > 0 and raw["retention"] == 1.0
    assert Path(doc["report"]) == Path("reports") / REPORT_NAME and (in_tmp / doc["report"]).is_file()
    assert store.is_file() and not (in_tmp / ".contextwarden").exists()


def test_demo_session_name_taken_by_another_file_gets_a_new_name(in_tmp: Path) -> None:
    store = open_store(str(in_tmp / "s.db"))
    try:
        store.create_session(f"demo-{DEFAULT_TRAJECTORY}", metadata={"source": "/somewhere/else.traj"})
    finally:
        store.close()
    result = CliRunner().invoke(cli, ["demo", "--json", "--store", str(in_tmp / "s.db")])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["session"] == f"demo-{DEFAULT_TRAJECTORY}-2"


def test_demo_runs_as_the_installed_command(in_tmp: Path) -> None:
    exe = Path(sys.executable).with_name("contextwarden")
    if not exe.exists():
        pytest.skip(f"the console script is not installed next to {sys.executable}")
    env = {k: v for k, v in os.environ.items() if k != "CONTEXTWARDEN_STORE"}
    done = subprocess.run(
        [str(exe), "demo"], cwd=in_tmp, capture_output=True, text=True, timeout=300, env=env, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "report: contextwarden-report.html" in done.stdout
    assert "mask-last-n:10" in done.stdout and (in_tmp / REPORT_NAME).is_file()


def test_the_sentence_claims_no_saving_where_there_is_none(in_tmp: Path) -> None:
    result = CliRunner().invoke(cli, ["demo", "--trajectory", "gpt4__test-repo-i1"])  # 5 calls: nothing to reduce
    assert result.exit_code == 0, result.output
    (sentence,) = [line for line in result.output.splitlines() if line.startswith("Over 5 model calls")]
    assert "saves nothing here" in sentence and "1.00x the raw history" in sentence
