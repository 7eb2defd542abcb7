"""Run by test_integrations_langchain in a second process: continue session ``lc`` from the store."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from langchain_core.messages import convert_to_messages
from test_integrations_langchain import RecordingModel, agent_for, script

from contextwarden.integrations.langchain import ContextWardenMiddleware
from contextwarden.log.store import SQLiteStore
from contextwarden.models import get_profile


def main(db: str, history_file: str) -> None:
    history = convert_to_messages(json.loads(Path(history_file).read_text(encoding="utf-8")))
    warden = ContextWardenMiddleware(SQLiteStore(db), session_id="lc", model=get_profile("gpt-4o"))
    model = RecordingModel(messages=iter(script(30, 32)))
    agent_for(model, [warden]).invoke({"messages": [*history, {"role": "user", "content": "continue"}]})
    sent = sum(len(str(m.content)) for m in model.received[0])
    full = sum(len(str(m.content)) for m in history)
    print(json.dumps({"first_request_chars": sent, "history_chars": full}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
