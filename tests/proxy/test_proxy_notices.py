"""The proxy logs one line when a client restarts a window, and one per model it plans with a stand-in."""

from __future__ import annotations

import logging
from pathlib import Path

import httpx
import pytest

from _proxy import rig


def _lines(caplog: pytest.LogCaptureFixture, text: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "contextwarden.proxy" and text in r.getMessage()]


def test_a_stand_in_model_is_logged_once_and_a_restarted_window_with_its_cause(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="contextwarden.proxy")
    with rig(str(tmp_path / "s.db")) as r:
        client = r.anthropic("key-a", **{"x-contextwarden-session": "one-task"})  # one session throughout
        history = [{"role": "user", "content": "first question"}]
        for n in range(3):
            reply = client.messages.create(model="house-model-7", max_tokens=8, messages=history)
            history += [
                {"role": "assistant", "content": reply.content[0].text},
                {"role": "user", "content": f"question {n}"},
            ]
        assert len(_lines(caplog, "model 'house-model-7' is not in the model table")) == 1
        assert "planned and priced as 'claude-sonnet-4-5'" in _lines(caplog, "'house-model-7'")[0]
        # the client edits its own history: the first answer is not what the model said
        edited = [history[0], {"role": "assistant", "content": "something else"}, *history[2:]]
        client.messages.create(model="claude-sonnet-4-5", max_tokens=8, messages=edited)
        (restart,) = _lines(caplog, "restarted the window")
        assert "(reset)" in restart and "changed its history" in restart
        assert not _lines(caplog, "model 'claude-sonnet-4-5' is not")
        # the live page lists the same: the restart as a window event with its cause, both as warnings
        live = httpx.get(r.url + "/contextwarden/live/sessions", headers={"x-api-key": "key-a"}).json()
        (notes,) = live["notes"].values()
        (event,) = notes["window_events"]
        assert event["kind"] == "restart (reset)" and "changed its history" in event["cause"]
        assert any(w.startswith("model 'house-model-7' is not in the model table") for w in notes["warnings"])
        assert any(w.startswith("restart (reset)") for w in notes["warnings"])
