"""Conflicts: a user's constraint or steering that forbids what an earlier plan said it would do.

The latest word of the user outranks older plans. When a user message or a steering says not to change
a path ("Do not modify auth.py") and an assistant message still shown whole said it would change it, the
new item carries a note that quotes that plan and says it no longer applies. The note goes on the new
item, so the earlier messages and the cached prefix stay as they were, and no request shows the old plan
as if it still held. The failure taxonomy reads the same patterns, so a plan the note marks is not a
conflict and one left unmarked is.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Sequence

from .items import REDUCED, ContextItem

__all__ = ["EDIT_VERB", "FORBID", "OVERRIDE_MARK", "forbidden_paths", "override_note", "overrides"]

EDIT_VERB = re.compile(
    r"\b(?:modify|change|edit|update|rewrite|patch|delete|remove|refactor|touch)\w*|修改|改动|删除", re.IGNORECASE
)
"""A verb that says a file is going to be (or was) changed."""
FORBID = re.compile(
    r"\b(?:do not|don'?t|never|must not|mustn'?t|no longer)\b.{0,40}?"
    r"(?:modify|change|edit|update|rewrite|patch|delete|remove|refactor|touch)|不要(?:修改|改|动)",
    re.IGNORECASE,
)
"""A sentence that forbids changing something."""
_PATHLIKE = re.compile(r"[\w.-]*[./][\w./-]*\w")
_SENTENCE = re.compile(r"(?<=[.!?。！？])\s+|\n+")
_PLANS_SCANNED = 200
"""How many of the latest assistant messages a constraint is checked against."""
_QUOTE_CHARS = 100
"""How much of a contradicted plan the note quotes, around the path it names."""
OVERRIDE_MARK = "[note: this overrides "
"""How an override note starts (the taxonomy looks for it)."""


def forbidden_paths(text: str) -> list[tuple[str, str]]:
    """The ``(path, sentence)`` pairs ``text`` forbids changing, in order."""
    found: list[tuple[str, str]] = []
    for sentence in _SENTENCE.split(text):
        if FORBID.search(sentence):
            found += [(path, sentence.strip()) for path in _PATHLIKE.findall(sentence)]
    return found


def _quote(text: str, path: str) -> str:
    flat = " ".join(text.split())
    at = flat.find(path)
    start = max(0, at - _QUOTE_CHARS // 2)
    piece = flat[start : start + _QUOTE_CHARS]
    return f"{'…' if start else ''}{piece}{'…' if start + _QUOTE_CHARS < len(flat) else ''}"


def override_note(text: str, plans: Iterable[str]) -> str:
    """The note for a user's ``text`` over the earlier assistant ``plans`` (newest first) it contradicts.

    Empty when ``text`` forbids nothing or no plan changes a path it forbids. One quote per path, from the
    newest plan that names it.
    """
    forbidden = dict(forbidden_paths(text))
    if not forbidden:
        return ""
    quotes: dict[str, str] = {}
    for plan in plans:
        for path in forbidden:
            if path not in quotes and path in plan and EDIT_VERB.search(plan):
                quotes[path] = _quote(plan, path)
        if len(quotes) == len(forbidden):
            break
    if not quotes:
        return ""
    listed = "; ".join(f'"{q}"' for q in quotes.values())
    return f"{OVERRIDE_MARK}the earlier plan that said: {listed}. That plan no longer applies.]"


def overrides(text: str, items: Sequence[ContextItem]) -> str:
    """The note for a user's ``text`` over the plans among ``items`` still shown whole, or ``""``."""
    if not FORBID.search(text):
        return ""
    plans = (
        i.message.text
        for i in reversed(items)
        if i.message.role == "assistant" and i.message.text and i.state not in REDUCED
    )
    return override_note(text, itertools.islice(plans, _PLANS_SCANNED))
