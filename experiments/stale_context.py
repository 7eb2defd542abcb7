"""Experiment 7: stale context — read a file, edit it, keep going.

The agent reads src/config.py (``TIMEOUT = 30``), edits it to ``TIMEOUT = 60``, does other work, and
later reads it again. For every request after the edit we look at how each strategy shows the first
read: verbatim with nothing saying it changed (presented as current), verbatim but followed by a note
that it is out of date, replaced by a stale placeholder, masked, or gone.
"""

from __future__ import annotations

import re
import sys

from _common import Experiment, Recorder, Script, code_file, counter, main, request_text, table

from contextwarden.log.events import ToolResult
from contextwarden.replay import ReplayInput, ReplaySettings, parse_strategy, replay

PATH = "src/config.py"
OLD_LINE = "TIMEOUT = 30  # seconds before a request is abandoned"
NEW_LINE = "TIMEOUT = 60  # seconds before a request is abandoned"
# The edit's own result carries the note; it names the file only when that output does not.
_NOTE = re.compile(r"\[note: earlier reads of (?:this file|" + re.escape(PATH) + r") are out of date\]")
_MASKED = re.compile(r'read_file\(path="' + re.escape(PATH) + r'"\) masked')
_STALE = re.compile(r'read_file\(path="' + re.escape(PATH) + r'"\) is stale')
WAITING = "contextwarden:min-batch=1000000"
"""contextwarden with voluntary batches off: only the note guards the old read until pressure forces a batch."""
STRATEGIES = ("raw", "mask-last-n:10", "contextwarden", WAITING)


def session(after: int) -> tuple[Script, int, int]:
    """The session, the index of the edit's assistant message and of the re-read's, counted in requests."""
    s = Script()
    s.user(
        "Raise the request timeout in src/config.py to 60 seconds and make sure nothing else relies on 30. "
        "Do not change any other setting."
    )
    body = f"{OLD_LINE}\n" + code_file(PATH, 300)
    s.read(PATH, body=body)
    s.grep("TIMEOUT", hits=12)
    s.edit(PATH, old=OLD_LINE, new=NEW_LINE)
    edit_request = 2
    for n in range(after):
        if n % 3 == 0:
            s.grep(f"timeout_{n}", hits=20)
        elif n % 3 == 1:
            s.read(f"src/pkg/client_{n}.py", 120)
        else:
            s.test(tests=150)
    s.read(PATH, body=body.replace(OLD_LINE, NEW_LINE))
    reread_request = 3 + after
    s.say("TIMEOUT is 60 now; nothing else used the old value.")
    return s, edit_request, reread_request


def classify(text: str, old_body: str) -> str:
    """How one request shows the first read of the file."""
    verbatim = old_body in text
    noted = bool(_NOTE.search(text))
    if verbatim and noted:
        return "verbatim + out-of-date note"
    if verbatim:
        return "PRESENTED AS CURRENT"
    if _STALE.search(text):
        return "stale placeholder"
    if "Old environment output" in text or _MASKED.search(text):
        return "masked"
    return "absent"


def run(*, small: bool = False) -> Experiment:
    """Experiment 7: after an edit, is the old read of the file ever presented as current?"""
    after = 6 if small else 15
    script, edit_request, reread_request = session(after)
    old_body = next(e.output for e in script.events if isinstance(e, ToolResult) and e.tool_name == "read_file")
    recorders = {name: Recorder(parse_strategy(name)) for name in STRATEGIES}
    replay(
        [ReplayInput(name="stale", source="scripted stale-read session", events=tuple(script.events))],
        list(recorders.values()),
        settings=ReplaySettings(model="gpt-4o", optimum=False),
        counter=counter(),
    )
    views = {name: [classify(request_text(b.context), old_body) for b in r.built] for name, r in recorders.items()}
    rows = []
    for i in range(edit_request + 1, len(views["raw"])):
        what = "after the edit" if i == edit_request + 1 else ("after the re-read" if i == reread_request + 1 else "")
        rows.append([i + 1, what, *(views[name][i] for name in STRATEGIES)])
    t1 = table(
        "How each request after the edit shows the first read of src/config.py", ["request", "", *STRATEGIES], rows
    )
    summary = []
    for name in STRATEGIES:
        later = views[name][edit_request + 1 :]
        summary.append(
            [
                name,
                len(later),
                later.count("PRESENTED AS CURRENT"),
                later.count("verbatim + out-of-date note"),
                later.count("stale placeholder"),
                later.count("masked") + later.count("absent"),
            ]
        )
    t2 = table(
        "Requests after the edit",
        [
            "strategy",
            "requests",
            "old read presented as current",
            "verbatim + note",
            "stale placeholder",
            "masked or gone",
        ],
        summary,
    )
    by = {r[0]: r for r in summary}
    later = views["contextwarden"][edit_request + 1 :]
    first = later.index("stale placeholder") + 1 if "stale placeholder" in later else 0
    findings = (
        f"contextwarden presented the old read as current in {by['contextwarden'][2]} of {by['contextwarden'][1]} "
        f"requests: its planner replaced the old read with a stale placeholder (pointing at read_range) from "
        f"request {first} after the edit on ({by['contextwarden'][4]} of them show the placeholder).",
        f"With voluntary batches off ({WAITING}) the old read stays verbatim, but the edit's own result carries a "
        f"note that it is out of date from the moment the edit arrives: {by[WAITING][2]} requests presented it as "
        f"current, {by[WAITING][3]} showed it with the note.",
        f"Raw history presented it as current in {by['raw'][2]} requests; mask-last-n:10 in "
        f"{by['mask-last-n:10'][2]}, until it masked the old read for age, not because it was stale.",
    )
    return Experiment(
        name="stale_context",
        title="Experiment 7: stale context",
        setup=f"A scripted session: read {PATH} ({OLD_LINE.split('#')[0].strip()}, 300 lines), grep, edit it to "
        f"{NEW_LINE.split('#')[0].strip()}, then {after} other calls (greps, reads of other files, test "
        "runs), then read the file again. Replayed with each strategy (gpt-4o); every request after the "
        "edit is inspected.",
        shows="Whether the superseded content can reach the model looking current. Supersession and staleness are "
        "detected when the edit arrives; the planner replaces the old read in a batch when that pays.",
        tables=(t1, t2),
        findings=findings,
    )


if __name__ == "__main__":
    sys.exit(main(run))
