"""The proxy's live page in a real headless Chromium, against a real proxy while an SDK session runs.

The page loads, asks for the key, shows the caller's session updating live, its figures equal
``contextwarden proxy stats --json`` for the same store, and markup planted in tool output, model
names and the assistant's text stays text.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from _proxy import Rig, rig
from contextwarden.models import get_profile, register_profile
from contextwarden.proxy.scripted import Reply

pytestmark = pytest.mark.browser

SMALL = "live-test-claude"
"""A Claude profile with a 60K window, so the session's window gets reduced within 30 turns."""
PAYLOAD = "<img src=x onerror=window.__pwned=1><script>window.__pwned=2</script>"
ADMIN = "operator-token"
SCREENSHOT_ENV = "CONTEXTWARDEN_LIVE_SCREENSHOT"
"""Set to a path to keep the screenshot there (the one in docs/ is made this way)."""
TURNS = 30


@pytest.fixture(autouse=True, scope="module")
def _small_profile() -> None:
    base = get_profile("claude-sonnet-4-5")
    register_profile(dataclasses.replace(base, name=SMALL, aliases=(), context_window=60_000, max_input_tokens=None))


def _output(n: int) -> str:
    lines = (f"src/module_{n}/file_{i}.py:{i}: def handler_{n}_{i}(request): return {i * n}" for i in range(80))
    return PAYLOAD + "\n" + "\n".join(lines)


def _session(r: Rig, key: str) -> None:
    client = r.anthropic(key)
    messages: list[Any] = [{"role": "user", "content": f"find every handler and fix the failing one {PAYLOAD}"}]
    for n in range(TURNS):
        r.upstream.push(
            Reply(text=f"part {n} {PAYLOAD}", tool_calls=((f"toolu_{n:03d}", "Bash", {"cmd": f"grep {n} {PAYLOAD}"}),))
        )
        reply = client.messages.create(model=SMALL, max_tokens=256, system="You are a coding agent.", messages=messages)
        messages += [
            {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in reply.content]},
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"toolu_{n:03d}", "content": _output(n)}],
            },
        ]


def _wait(page: Any, script: str, timeout: float = 60) -> Any:
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(page, timeout, poll_frequency=0.2).until(lambda d: d.execute_script(script))


def _enter_key(page: Any, key: str) -> None:
    field = page.find_element("id", "key")
    field.clear()
    field.send_keys(key)
    page.find_element("css selector", "#key-form button[type=submit]").click()


def _row(page: Any, selector: str) -> list[dict[str, str]]:
    return list(
        page.execute_script(
            f"return [...document.querySelectorAll('{selector} td')].map(td => "
            "({text: td.textContent, value: td.dataset.value === undefined ? null : td.dataset.value}))"
        )
    )


COLUMNS = (
    "requests",
    "fallbacks",
    "client_tokens",
    "forwarded_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "effective_cost_usd",
    "client_cost_usd",
    "saving_usd",
    "cost_ratio",
)
"""The figures of a sessions-table row, in order after session, model and mode."""


def _matches(cells: list[dict[str, str]], expected: dict[str, Any]) -> None:
    figures = cells[3 : 3 + len(COLUMNS)]
    for name, cell in zip(COLUMNS, figures, strict=True):
        want = expected[name]
        assert cell["value"] is not None, name
        if isinstance(want, float):
            assert float(cell["value"]) == want, (name, cell, want)
        else:
            assert cell["value"] == ("" if want is None else str(want)), (name, cell, want)
        if name.endswith("_tokens") or name in ("requests", "fallbacks"):
            assert cell["text"] == f"{want:,}", (name, cell)  # shown whole, never cut
        elif name.endswith("_usd"):
            assert cell["text"] == f"${want:.4f}", (name, cell)


def test_live_page_follows_a_running_session_and_matches_the_ledger(driver: Any, tmp_path: Path) -> None:
    store = str(tmp_path / "s.db")
    with rig(store, admin_token=ADMIN) as r:
        # another key's session, with a hostile model name: the first key must not see it
        r.anthropic("key-b").messages.create(model=PAYLOAD, max_tokens=8, messages=[{"role": "user", "content": "hi"}])
        running = threading.Thread(target=_session, args=(r, "key-a"))
        running.start()
        try:
            driver.get(r.url + "/contextwarden/")
            assert driver.execute_script("return document.readyState") == "complete"
            _enter_key(driver, "key-a")
            _wait(driver, "return document.querySelectorAll('#sessions tr.session').length === 1")
            seen_while_running = int(_row(driver, "#sessions tr.session")[3]["value"])
        finally:
            running.join(timeout=300)
        assert seen_while_running < TURNS, "the page must load while the session still runs"
        # it updates by itself: the row reaches the session's last request without a reload
        _wait(
            driver, f"return document.querySelector('#sessions tr.session td:nth-child(4)').dataset.value === '{TURNS}'"
        )
        driver.find_element("css selector", "#sessions tr.session").click()
        _wait(driver, "return document.querySelectorAll('#decisions tr').length > 2")
        _wait(driver, f"return document.querySelectorAll('#requests tr').length === {TURNS + 1}")
        ledger = _stats_json(store)
        mine = [s for s in ledger["sessions"] if s["model"] == SMALL]
        (expected,) = mine
        cells = _row(driver, "#sessions tr.session")
        assert cells[0]["text"] == expected["session_id"]
        _matches(cells, expected)  # the caller's total is its one session
        _matches(_row(driver, "#sessions tr.total"), expected)
        assert float(expected["saving_usd"]) > 0
        assert "edit batch" in cells[3 + len(COLUMNS)]["text"]
        causes = page_text(driver, "events")
        assert "edit batch" in causes and "saves" in causes  # window events with their cause
        # the chart: one bar per request for forwarded and for cached tokens, a line for what was sent
        assert driver.execute_script("return document.querySelectorAll('#tokens-chart rect.forwarded').length") == TURNS
        assert driver.execute_script("return document.querySelectorAll('#cost-chart polyline').length") == 2
        decisions = driver.find_element("id", "decisions").text
        assert "mask" in decisions and "older than" in decisions
        composition = driver.find_element("id", "sections").text
        assert "tool_output" in composition
        _inert(driver)
        _keep_screenshot(driver, tmp_path)

        # the operator sees both sessions and the hostile model name as plain text
        _enter_key(driver, ADMIN)
        _wait(driver, "return document.querySelectorAll('#sessions tr.session').length === 2")
        _matches(_row(driver, "#sessions tr.total"), ledger["total"])
        assert PAYLOAD in driver.find_element("id", "sessions").text
        assert "not in the model table" in driver.find_element("id", "sessions").text
        _inert(driver)


def page_text(page: Any, element_id: str) -> str:
    return str(page.find_element("id", element_id).text)


def _inert(page: Any) -> None:
    assert page.execute_script("return typeof window.__pwned") == "undefined"
    assert page.execute_script("return document.querySelectorAll('img, iframe, object, embed').length") == 0
    assert page.execute_script("return document.querySelectorAll('script').length") == 1  # live.js
    handlers = page.execute_script(
        "return [...document.querySelectorAll('*')].flatMap(e => [...e.attributes].map(a => a.name))"
        ".filter(n => n.startsWith('on')).length"
    )
    assert handlers == 0
    # it is there, as text (a placeholder cuts the call's arguments after the script tag opens)
    assert "<img src=x onerror=window.__pwned=1><script>" in page.find_element("tag name", "body").text


def _keep_screenshot(page: Any, tmp_path: Path) -> None:
    height = page.execute_script("return document.body.scrollHeight")
    page.set_window_size(1400, min(int(height) + 120, 1600))
    page.execute_script("document.querySelectorAll('.scroll').forEach(e => { e.scrollLeft = 0; }); scrollTo(0, 0)")
    target = Path(os.environ.get(SCREENSHOT_ENV) or tmp_path / "live.png")
    assert page.save_screenshot(str(target))
    assert target.stat().st_size > 20_000
    page.set_window_size(1400, 1000)


def _stats_json(store: str) -> dict[str, Any]:
    command = [sys.executable, "-m", "contextwarden", "proxy", "stats", "--json", "--store", store]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return dict(json.loads(result.stdout))
