"""Adopting a provider-side compaction (a remote or opaque compacted transcript) as a window.

Some providers compact on their side and hand back a transcript to continue from (OpenAI's
compaction endpoint returns output items with an opaque ``compaction`` item; Anthropic's server
side compaction returns a summary block). That transcript is not trusted as a whole: instructions
we did not write must not slip into the conversation, and our own fragments in it are stale.
So, as Codex does (``docs/behaviours.md``, row 53), :func:`filter_remote_items`

- keeps summary/compaction items (readable or opaque) and real ``user`` / ``assistant`` messages;
- drops ``developer`` and ``system`` messages, tool calls and their outputs, reasoning items;
- drops messages that are our own fragments (pinned anchors, summaries, steering, pins), because
  :func:`adopt_remote_compaction` re-renders those from the current task state;
- drops user messages that are one tagged block from the harness (``<environment_context>``,
  ``<user_instructions>``...): they describe the world when the transcript was made, and the local side
  renders the current ones.

The result is recorded like any compaction: a new window event, nothing rewritten.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ...log.events import Compaction, JSONValue
from ...tokens import TokenCounter
from ...window.opening import PINNED_START, SUMMARY_START, compaction_blocks
from ...window.projection import Projection
from .verify import verify_summary

OWN_MARKERS: tuple[str, ...] = (PINNED_START, SUMMARY_START, "<steering>", "<pinned_note>")
"""Start markers of fragments contextwarden renders itself (they are re-rendered, never adopted)."""

_SUMMARY_TYPES = ("compaction", "compaction_summary", "summary")
_TAGGED_BLOCK = re.compile(r"\A\s*<([A-Za-z][\w.:-]*)(?:\s[^<>]*)?>.*</\1>\s*\Z", re.DOTALL)


def is_foreign_fragment(text: str) -> bool:
    """Whether ``text`` is wholly one ``<tag>...</tag>`` block: injected by a harness, not said by a person."""
    return _TAGGED_BLOCK.match(text) is not None


@dataclass(frozen=True, kw_only=True)
class RemoteFilterResult:
    """What :func:`filter_remote_items` kept and dropped."""

    kept: tuple[dict[str, JSONValue], ...]
    """Items kept, in order."""
    dropped: dict[str, int]
    """Why items were dropped → how many."""


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping) and p.get("text"))
    return ""


def _is_summary(item: Mapping[str, Any]) -> bool:
    return str(item.get("type", "")) in _SUMMARY_TYPES


def filter_remote_items(
    items: Sequence[Mapping[str, Any]],
    *,
    is_own_fragment: Callable[[str], bool] | None = None,
) -> RemoteFilterResult:
    """Keep summary items and real user/assistant messages (see the module docstring)."""
    own = is_own_fragment or (lambda text: text.lstrip().startswith(OWN_MARKERS))
    kept: list[dict[str, JSONValue]] = []
    dropped: dict[str, int] = {}

    def drop(why: str) -> None:
        dropped[why] = dropped.get(why, 0) + 1

    for item in items:
        kind = str(item.get("type", "message"))
        role = str(item.get("role", ""))
        if _is_summary(item):
            kept.append(json.loads(json.dumps(item)))
        elif kind != "message" and not role:
            drop(kind or "unknown")
        elif role in ("developer", "system"):
            drop(f"{role} message")
        elif role not in ("user", "assistant"):
            drop(f"{role or 'unknown'} role")
        elif own(_text(item.get("content"))) or (role == "user" and is_foreign_fragment(_text(item.get("content")))):
            drop("injected fragment (re-rendered)")
        else:
            kept.append(json.loads(json.dumps(item)))
    return RemoteFilterResult(kept=tuple(kept), dropped=dropped)


def render_remote_summary(kept: Sequence[Mapping[str, Any]]) -> str:
    """The kept items as summary text; an opaque item is named (it is replayed from ``details``)."""
    parts: list[str] = []
    for item in kept:
        if _is_summary(item):
            text = _text(item.get("content")) or _text(item.get("summary")) or _text(item.get("text"))
            parts.append(
                text
                if text
                else "[an opaque provider-side compaction item stands here; it is "
                "replayed to the provider that made it]"
            )
        else:
            parts.append(f"[{item.get('role')}]\n{_text(item.get('content'))}")
    return "\n\n".join(p for p in parts if p.strip())


def adopt_remote_compaction(
    projection: Projection,
    items: Sequence[Mapping[str, Any]],
    *,
    counter: TokenCounter,
    provider: str = "",
    is_own_fragment: Callable[[str], bool] | None = None,
) -> Compaction:
    """A compaction event opening a window from a provider's compacted transcript.

    It covers the whole current window (``first_kept_seq`` is the next seq); its anchors are the
    current task state, so goal, constraints and steering are re-rendered by us; the kept items go
    to ``details["remote_items"]`` for a renderer that can replay them. Append it to the session.
    """
    filtered = filter_remote_items(items, is_own_fragment=is_own_fragment)
    summary = render_remote_summary(filtered.kept) or "(the provider returned no summary)"
    state = projection.state
    anchors = replace(state, compactions=state.compactions + 1)
    summary, check = verify_summary(summary, state=state, anchors=anchors, kept_text="")
    previous = projection.compaction
    event = Compaction(
        summary=summary,
        first_kept_seq=projection.last_seq + 1,
        covered_from_seq=previous.covered_from_seq if previous is not None else 1,
        covered_to_seq=projection.last_seq,
        tokens_before=projection.total,
        summarizer=f"remote:{provider}" if provider else "remote",
        verification=check.to_dict(),
        state=anchors.to_dict(),
        details={
            "trigger": "remote",
            "remote_items": list(filtered.kept),
            "remote_dropped": dict(filtered.dropped),
            **({"exposed_tools": list(projection.exposed_tools)} if projection.exposed_tools is not None else {}),
        },
    )
    return replace(event, tokens_after=sum(b.tokens for b in compaction_blocks(event, counter)))
