"""Checks on injected text on arrival: a stable prefix, registered fragments (``docs/behaviours.md``, rows 45, 49).

Two things a caller can put into a request by accident are caught when the request is built, not only
by a later ``lint``:

- **dynamic values in the prefix**: a leading instruction (it becomes the system text) holding a date,
  a time, a UUID, a hex id or a Unix timestamp. Such a value changes between sessions or runs, so the
  cached prefix is lost from its first token. The text is kept (only the caller knows where the value
  belongs) and the build records a ``dynamic_prefix`` decision naming the values.
- **unregistered fragments**: a block-level ``<snake_case_tag>...</snake_case_tag>`` in a user message or
  a later instruction whose tag no registered fragment type owns (``<git_status>`` pasted in by a
  host). Rule 6 says injected text comes only through registered, capped types, so the tags are escaped
  (``&lt;git_status>``: the model reads them as quoted text, not as a fragment) and the build records an
  ``escape_fragment`` decision. Register a type (``DEFAULT_REGISTRY.register``) or pass host context
  through ``Session.add_context`` instead.

Only snake_case tags count as fragment-like: HTML or XML a user pastes (``<div>``, ``<dependency>``) has
none, and the tags contextwarden renders itself are all registered.
"""

from __future__ import annotations

import re

from ..context import Decision
from ..fragments import DEFAULT_REGISTRY, FragmentRegistry, dynamic_values

__all__ = ["dynamic_prefix", "escape_unregistered"]

_FRAGMENT_OPEN = re.compile(r"^[ \t]*<([a-z][a-z0-9]*(?:_[a-z0-9]+)+)(?:[ \t][^<>\n]{0,300})?>", re.MULTILINE)
_MAX_TAGS = 20


def _registered(registry: FragmentRegistry) -> frozenset[str]:
    return frozenset(t.start_marker.strip("<>").split()[0] for t in registry.all())


def unregistered_tags(text: str, registry: FragmentRegistry = DEFAULT_REGISTRY) -> list[str]:
    """Tags of block-level, fragment-like blocks in ``text`` that no type of ``registry`` owns."""
    if "_" not in text or "<" not in text or registry.find(text) is not None:
        return []  # a registered fragment's own inner markup is its producer's
    known = _registered(registry)
    found: list[str] = []
    for match in _FRAGMENT_OPEN.finditer(text):
        tag = match.group(1)
        if tag not in known and tag not in found and f"</{tag}>" in text[match.end() :]:
            found.append(tag)
            if len(found) == _MAX_TAGS:
                break
    return found


def escape_unregistered(
    text: str, target: str, registry: FragmentRegistry = DEFAULT_REGISTRY
) -> tuple[str, Decision | None]:
    """``text`` with the tags of its unregistered fragment-like blocks escaped, and the decision saying so."""
    tags = unregistered_tags(text, registry)
    if not tags:
        return text, None
    pattern = re.compile(rf"<(/?)({'|'.join(re.escape(t) for t in tags)})(?=[\s>])")
    listed = ", ".join(f"<{t}>" for t in tags)
    decision = Decision(
        action="escape_fragment",
        target=target,
        reason=f"{listed} is not a registered fragment type: escaped so it reads as quoted text; register a "
        "fragment type or pass host context through Session.add_context",
    )
    return pattern.sub(r"&lt;\1\2", text), decision


def dynamic_prefix(text: str, target: str) -> Decision | None:
    """The decision to record when a leading instruction holds values that look dynamic, else ``None``."""
    found = dynamic_values(text)
    if not found:
        return None
    shown = ", ".join(dict.fromkeys(found[:3]))
    return Decision(
        action="dynamic_prefix",
        target=target,
        reason=f"the system text holds values that look dynamic ({shown}): when they change, the cached prefix "
        "is lost from its start; keep them out of the leading instructions",
    )
