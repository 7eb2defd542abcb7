"""The HTML report in a real headless Chromium: it renders, its charts exist, and transcript text stays inert."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import pytest
from test_report import PAYLOAD, results

from contextwarden.replay import ReplaySettings, load_inputs, replay
from contextwarden.report import render_report, write_report

pytestmark = pytest.mark.browser


def _open(driver: Any, path: Path) -> list[dict[str, Any]]:
    driver.get(path.resolve().as_uri())
    assert driver.execute_script("return document.readyState") == "complete"
    return list(driver.get_log("browser"))


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_report_renders_with_charts_and_a_readable_screenshot(driver: Any, tmp_path: Path) -> None:
    report = tmp_path / "report.html"
    write_report(results(n=40), report)
    logs = _open(driver, report)
    assert not [e for e in logs if e.get("level") == "SEVERE"], logs  # e.g. a stylesheet refused by the CSP
    charts = driver.find_elements("css selector", "svg.chart")
    # the tokens-against-cost chart, then per file: input, cost, cached + one composition per strategy
    assert len(charts) == 1 + 2 * (3 + 3)
    first = charts[0]
    assert first.size["width"] > 300 and first.size["height"] > 100
    assert driver.execute_script("return document.querySelectorAll('svg.chart polyline').length") >= 9
    assert driver.execute_script("return document.querySelectorAll('svg.chart polygon').length") >= 8
    # the hashed stylesheet applied: the header is dark
    background = driver.execute_script("return getComputedStyle(document.querySelector('header')).backgroundColor")
    assert background == "rgb(29, 35, 48)"
    height = driver.execute_script("return document.body.scrollHeight")
    driver.set_window_size(1400, min(int(height) + 120, 5000))
    shot = tmp_path / "report.png"
    assert driver.save_screenshot(str(shot))
    data = shot.read_bytes()
    width, tall = _png_size(data)
    assert width >= 1000 and tall >= 1000 and len(data) > 50_000


def test_transcript_markup_renders_as_text_and_executes_nothing(driver: Any, tmp_path: Path) -> None:
    report = tmp_path / "hostile.html"
    write_report(results(payload=PAYLOAD), report)
    _open(driver, report)
    assert driver.execute_script("return typeof window.__pwned") == "undefined"
    assert driver.execute_script("return document.querySelectorAll('script, img, iframe, object, embed').length") == 0
    body = driver.find_element("css selector", "body").text
    assert PAYLOAD in body  # the literal text is visible
    handlers = driver.execute_script(
        "return [...document.querySelectorAll('*')].flatMap(e => [...e.attributes].map(a => a.name))"
        ".filter(n => n.startsWith('on')).length"
    )
    assert handlers == 0
    driver.save_screenshot(str(tmp_path / "hostile.png"))


def test_the_policy_blocks_script_even_if_escaping_failed(driver: Any, tmp_path: Path) -> None:
    # Defence in depth: splice live markup into the page as an escaping bug would; the CSP still stops it.
    doc = render_report(results()).replace("<main>", f"<main>{PAYLOAD}", 1)
    report = tmp_path / "spliced.html"
    report.write_text(doc, encoding="utf-8")
    logs = _open(driver, report)
    assert driver.execute_script("return document.querySelectorAll('script').length") == 1  # it is there...
    assert driver.execute_script("return typeof window.__pwned") == "undefined"  # ...and did not run
    assert any("Content Security Policy" in str(e.get("message", "")) for e in logs), logs


def test_a_hostile_transcript_replayed_end_to_end_stays_text(driver: Any, tmp_path: Path) -> None:
    # A real transcript file through the importer and the replay engine: markup in the task, a tool
    # output, the model's answer, a tool argument and the file name itself.
    messages = [
        {"role": "user", "content": f"Look at page.html and report. {PAYLOAD}"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "bash", "arguments": json.dumps({"command": f"cat page.html # {PAYLOAD}"})},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": PAYLOAD},
        {"role": "assistant", "content": f"The page holds {PAYLOAD}"},
    ]
    transcript = tmp_path / "<img src=x onerror=window.__pwned=3>.json"
    transcript.write_text(json.dumps({"messages": messages}), encoding="utf-8")
    inputs = load_inputs([str(transcript)])
    results = replay(inputs, ["raw", "mask-last-n:0"], settings=ReplaySettings(model="gpt-4o"))
    report = tmp_path / "replayed.html"
    write_report(results, report, transcripts={i.source: i.events for i in inputs})
    _open(driver, report)
    driver.execute_script("document.querySelectorAll('details').forEach(d => d.open = true)")
    assert driver.execute_script("return typeof window.__pwned") == "undefined"
    assert driver.execute_script("return document.querySelectorAll('script, img').length") == 0
    body = driver.find_element("css selector", "body").text
    assert body.count(PAYLOAD) >= 3  # task, tool output, answer
    assert "<img src=x onerror=window.__pwned=3>" in body  # the file name
    driver.save_screenshot(str(tmp_path / "replayed.png"))
