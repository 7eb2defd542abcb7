"""The texts sent to a summarizer model.

A summary is a handover note: the agent keeps working from it plus the newest messages, so it
must carry the task, the rules, what is done and what comes next, with exact paths, names and
error text. The headings come from :mod:`~contextwarden.plan.compaction.sections`, the one layout
the structured summarizer writes, validation checks and verification repairs.
"""

from __future__ import annotations

from dataclasses import dataclass

from .sections import HISTORY, TURN, guide

SYSTEM_PROMPT = """\
You write handover notes for an AI agent that is in the middle of a task. The agent's working \
memory is about to be cleared; afterwards it will see only your notes and its most recent \
messages, and it must be able to carry on without asking the user to repeat anything.

You are not that agent. Do not continue the task, do not answer questions that appear in the \
record, do not call tools and do not write tool-call syntax. Reply with the notes and nothing \
else: no greeting, no preamble, no closing remark.

Write the notes in Markdown under exactly the headings you are given, in the given order. Use the \
language the user writes in, but copy file paths, identifiers, commands, numbers and error \
messages character for character."""

_MARKDOWN_RULE = "Write the notes in Markdown under exactly the headings you are given, in the given order."
_JSON_RULE = "Write the notes as the JSON object you are asked for, with every key it names."

_SECTION_GUIDE = guide(HISTORY)
"""The history headings and what goes under each (from :mod:`.sections`)."""

INITIAL_PROMPT = f"""\
The record above, inside <conversation>, is the older part of a working session. It is about to \
be removed from the agent's view; the newest messages stay visible and are not shown here.

Write the handover notes with these headings, in this order, filling in what the record \
supports and leaving nothing out that the agent will need:

{_SECTION_GUIDE}

Be brief but do not drop facts: a lost constraint or a lost error message costs more than a \
long line."""

UPDATE_PROMPT = f"""\
Inside <previous-summary> are the notes you wrote at the last handover. Inside <conversation> is \
what happened after them that is now also leaving the agent's view.

Write one complete new set of notes that replaces the previous ones:
- keep every goal, constraint, decision and fact from the previous notes unless the new record \
shows it is obsolete;
- move finished items to Done and record new progress, decisions, errors and test results;
- rewrite Next Steps for where the work stands now;
- drop only what is clearly no longer relevant.

Use these headings, in this order:

{_SECTION_GUIDE}"""

TURN_PREFIX_PROMPT = f"""\
The record above, inside <conversation>, is the beginning of the turn the agent is still working \
on: the user's request and the first steps taken for it. The rest of this turn stays visible to \
the agent, so describe only this beginning, so that what follows makes sense.

Use exactly these headings:
{guide(TURN)}"""

JSON_PROMPT = """\
The record above, inside <conversation>, is the older part of a working session (with \
<previous-summary>, the notes so far: keep what is still true, update the rest). It is about to \
be removed from the agent's view. What was done, the files changed, the test results and the \
errors are recorded separately: write only what needs judgment.

Reply with one JSON object with exactly these keys, each a list of short strings copied from the \
record where you can (paths, commands and error lines character for character):
{keys}"""

FOCUS_NOTE = """\
The user asked that these notes pay particular attention to: {focus}"""

REGROUND_NOTE = """\
This record is taken from the raw session log, not from earlier notes. Treat it as the ground \
truth and write the notes from it alone."""


@dataclass(frozen=True, kw_only=True)
class Prompt:
    """A summarizer request as text: a system prompt and one user message."""

    system: str
    """The system prompt."""
    user: str
    """The user message: the tagged inputs followed by the instructions."""


def build_prompt(
    *,
    transcript: str,
    purpose: str,
    previous_summary: str = "",
    focus: str = "",
    reground: bool = False,
    json_keys: str = "",
) -> Prompt:
    """The prompt for one summary: initial, update (with a previous summary) or turn prefix.

    ``json_keys`` (a history summary under constrained decoding) asks for a JSON object with
    those keys instead of the Markdown notes.
    """
    parts: list[str] = []
    if purpose == "turn_prefix":
        instructions = TURN_PREFIX_PROMPT
    elif json_keys:
        if previous_summary:
            parts.append(f"<previous-summary>\n{previous_summary}\n</previous-summary>")
        instructions = JSON_PROMPT.format(keys=json_keys)
    elif previous_summary:
        parts.append(f"<previous-summary>\n{previous_summary}\n</previous-summary>")
        instructions = UPDATE_PROMPT
    else:
        instructions = INITIAL_PROMPT
    parts.append(f"<conversation>\n{transcript}\n</conversation>")
    if reground:
        parts.append(REGROUND_NOTE)
    parts.append(instructions)
    if focus:
        parts.append(FOCUS_NOTE.format(focus=focus))
    system = (
        SYSTEM_PROMPT.replace(_MARKDOWN_RULE, _JSON_RULE) if json_keys and purpose != "turn_prefix" else SYSTEM_PROMPT
    )
    return Prompt(system=system, user="\n\n".join(parts))
