"""The section layout of a summary: one list of headings that every writer and checker reads.

The structured summarizer writes these headings, the model prompt describes them, the JSON schema
for constrained decoding names its keys after them and validation requires some of them; each
takes them from here, so a heading renamed here is renamed everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Section:
    """One heading of a summary and what belongs under it."""

    key: str
    """A name for code (and the JSON key under constrained decoding)."""
    heading: str
    """The Markdown heading line, level included (``## Goal``)."""
    guide: str = ""
    """What goes under the heading, as the model prompt says it ("" for a heading with subsections)."""
    hint: str = ""
    """The same in a few words, for the JSON keys of constrained decoding."""

    @property
    def title(self) -> str:
        """The heading without its ``#`` marks."""
        return self.heading.lstrip("#").strip()


HISTORY: tuple[Section, ...] = (
    Section("goal", "## Goal", "What the user wants achieved, in their terms. Several goals become several bullets."),
    Section(
        "constraints",
        "## Constraints & Preferences",
        "- Every rule, limit or preference the user stated, worded as closely to the original as you can.\n"
        '- Write "(none)" if there were none.',
    ),
    Section("progress", "## Progress"),
    Section(
        "done", "### Done", "- [x] Work that is finished, with the files it touched.", "finished steps, with file paths"
    ),
    Section(
        "in_progress",
        "### In Progress",
        "- [ ] Work that was started and is not finished.",
        "the step being worked on now, if any",
    ),
    Section(
        "blocked", "### Blocked", "- What stands in the way, if anything.", "what stops progress: failing tests, errors"
    ),
    Section("decisions", "## Key Decisions", "- **Decision**: the reason it was taken.", "choices made and why"),
    Section(
        "next_steps",
        "## Next Steps",
        "1. The next actions, in order. The first one should be doable right away.",
        "what to do next, in order",
    ),
    Section(
        "critical_context",
        "## Critical Context",
        "- Facts the agent will need: exact paths, function and class names, commands, error messages, values. "
        'Write "(none)" if nothing qualifies.',
        "exact paths, names, values and error messages needed later",
    ),
    Section("working_set", "## Working Set", "- Files and symbols being worked on now."),
    Section("changes", "## Changes", "- Each file changed and what changed in it."),
    Section(
        "test_status",
        "## Test Status",
        "- The latest result of each test command; name the failing tests.",
        "the latest result of each test command",
    ),
    Section(
        "failed_attempts",
        "## Failed Attempts",
        "- Approaches that were tried and did not work, and why, so they are not repeated.",
        "what was tried and failed, with the error line",
    ),
    Section("open_questions", "## Open Questions", "- Things still undecided or unknown."),
    Section(
        "latest_user_intent",
        "## Latest User Intent",
        "The most recent thing the user asked for or corrected, as close to verbatim as possible.",
    ),
)
"""Every section of a history summary, in order."""

TURN: tuple[Section, ...] = (
    Section(
        "turn_request", "## Turn Request", "What the user asked for in this turn, as close to verbatim as possible."
    ),
    Section(
        "turn_progress",
        "## Turn Progress",
        "- What was done so far in this turn: files read or changed, commands run, results.",
    ),
    Section(
        "turn_context",
        "## Turn Context",
        "- Exact details the rest of the turn relies on: paths, names, values, error messages.",
    ),
)
"""Every section of a turn-prefix summary, in order."""

REQUIRED_SECTIONS: tuple[str, ...] = ("Goal", "Constraints", "Progress", "Next Steps")
"""Headings a history summary must have to be accepted (matched case-insensitively, by prefix)."""
TURN_REQUIRED_SECTIONS: tuple[str, ...] = ("Turn Request", "Turn Progress")
"""Headings a turn-prefix summary must have."""

SECTIONS: tuple[str, ...] = tuple(s.heading for s in HISTORY)
"""Every heading line of a history summary, in order."""
TURN_SECTIONS: tuple[str, ...] = tuple(s.heading for s in TURN)
"""Every heading line of a turn-prefix summary, in order."""

_BY_KEY = {s.key: s for s in (*HISTORY, *TURN)}


def section(key: str) -> Section:
    """The section named ``key``; a ``KeyError`` names a key no layout has."""
    return _BY_KEY[key]


def guide(layout: tuple[Section, ...]) -> str:
    """The prompt text describing ``layout``: each heading, then what goes under it."""
    return "\n".join(line for s in layout for line in (s.heading, s.guide) if line)
