"""The lifecycle of tool results: which later result supersedes an earlier one or makes it stale.

Detection happens at ingestion, one result at a time, and only *proposes* edits: an item stays as
it is (and its :class:`~contextwarden.window.items.Lifecycle` state stays ``FRESH``) until the planner
records the edit in a batch. That keeps the state honest: it always says what the model sees.

- A successful write to a file makes every earlier read of it stale (and earlier writes' results).
- A newer read covering the same lines supersedes an older read, a newer run of the same test
  target or page supersedes the older run, when the newer result's policy is ``supersedable``.
- An identical call with identical output supersedes the older copy (a pure duplicate).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from ..log.events import ToolCall, ToolResult
from .accounting import args_json
from .items import REDUCED, ContextItem, ItemList
from .policies.presets import ToolPolicy
from .policies.resources import Resource, covers

__all__ = ["Proposal", "ResourceLedger"]


@dataclass(frozen=True, kw_only=True)
class Proposal:
    """A detected candidate edit: ``target_id`` is superseded or stale because of ``by``."""

    target_id: str
    """The earlier tool result."""
    action: Literal["supersede", "stale"]
    """What ``by`` does to it."""
    by: ToolResult
    """The newer result."""
    what: str
    """The resource key, or ``identical output``."""


def _outputs_of(items: Sequence[ContextItem]) -> tuple[str, bool]:
    """Name earlier results as the model sees them (the tool, the id of each call); and whether it is plural."""
    tools = "/".join(dict.fromkeys(item.message.tool_name or "tool" for item in items))
    ids = ", ".join(item.message.tool_call_id for item in items)
    plural = len(items) > 1
    return f"{tools} output{'s' if plural else ''} of call{'s' if plural else ''} {ids}", plural


def _stale_note(key: str, event: ToolResult, call: ToolCall | None, written: int) -> str:
    """The note an edit's result carries when it makes reads of file ``key`` still shown out of date.

    It rides on every later request and raw history has none, so it is one short line: every earlier
    read of the file is out of date (the ledger keeps none), and the file is named only when neither the
    call nor the output names it, or the call changed more than one.
    """
    named = key in event.output or (call is not None and key in args_json(call.arguments))
    return f"[note: earlier reads of {'this file' if named and written == 1 else key} are out of date]"


class ResourceLedger:
    """Which results read, changed or ran each resource, as the window grows."""

    def __init__(self) -> None:
        self._readers: dict[str, list[str]] = {}
        self._writers: dict[str, list[str]] = {}
        self._runs: dict[str, list[str]] = {}
        self._fingerprints: dict[str, str] = {}
        self._pointers: dict[str, str] = {}
        """A result that points back to an earlier read (:mod:`.pointers`) -> the file it points to."""

    def point(self, result_id: str, keys: Sequence[str]) -> None:
        """Record that result ``result_id`` points the model back to the earlier read of each file of ``keys``."""
        for key in keys:
            self._pointers[result_id] = key

    def pointed_files(self, items: ItemList) -> list[str]:
        """Files a result still shown points back to: their latest read is what the model is told to use."""
        return [
            key
            for result_id, key in self._pointers.items()
            if (item := items.get(result_id)) is not None and item.state not in REDUCED
        ]

    def current_reads(self, key: str) -> list[str]:
        """The ids of the reads of file ``key`` that no later write made stale, oldest first."""
        return list(self._readers.get(key, ()))

    def latest_read(self, key: str) -> str | None:
        """The id of the latest read of file ``key`` that no later write made stale, if any."""
        readers = self._readers.get(key)
        return readers[-1] if readers else None

    def observe(
        self,
        event: ToolResult,
        call: ToolCall | None,
        resources: Sequence[Resource],
        policy: ToolPolicy,
        items: ItemList,
        replaceable: Callable[[str], bool] = lambda _: True,
        *,
        twin: str | None = None,
    ) -> tuple[list[Proposal], str]:
        """Record ``event`` and return what it supersedes or makes stale.

        Also returns a note for the result's own text when it makes an earlier read stale, so no
        request presents the old content as current even before the planner replaces it. The note
        stands in for the stale placeholder a later batch puts there, so it flags only the reads
        still shown verbatim that such a placeholder would shrink (``replaceable``), or any such read
        when the result does not name the file: a small read next to an edit whose own output names
        the changed file is marked by that output, and a note would cost a good part of it on every
        later request.

        A result shown as a line naming its visible ``twin`` (:mod:`.references`) supersedes what its output
        would, except the twin, which is what it shows: the twin stays a current read or run beside it.
        """
        proposals: list[Proposal] = []
        notes: list[str] = []
        failed = event.is_error or event.exit_code not in (None, 0)
        written = sum(r.kind == "file" and r.access == "write" for r in resources)
        for r in resources:
            if r.kind == "file" and r.access == "write" and not failed:
                reads = self._readers.pop(r.key, [])
                older = reads + self._writers.get(r.key, [])
                self._writers[r.key] = [event.id]
                proposals += [Proposal(target_id=o, action="stale", by=event, what=r.key) for o in older]
                # A read too small for a placeholder needs no note when this output itself names the file
                # it changed: the model sees that change after the read. Otherwise it is flagged.
                named = r.key in event.output
                flagged = (item for o in reads if (item := items.get(o)) is not None and (replaceable(o) or not named))
                shown = [item for item in flagged if item.state not in REDUCED]
                if shown:
                    notes.append(_stale_note(r.key, event, call, written))
            elif r.kind == "file" and r.access == "read" and not failed:
                remaining = []
                for old in self._readers.get(r.key, []):
                    item = items.get(old)
                    touched = item.resources if item is not None else ()
                    if old != twin and policy.supersedable and any(covers(r, o) for o in touched if o.key == r.key):
                        proposals.append(Proposal(target_id=old, action="supersede", by=event, what=r.key))
                    else:
                        remaining.append(old)  # a read of other lines stays current
                self._readers[r.key] = [*remaining, event.id]
            elif r.kind in ("test", "page"):
                if policy.supersedable:
                    kept = [o for o in self._runs.get(r.key, []) if o == twin]
                    older_runs = [o for o in self._runs.get(r.key, []) if o != twin]
                    proposals += [Proposal(target_id=o, action="supersede", by=event, what=r.key) for o in older_runs]
                    # An older run still shown verbatim above this pass (a failure, say) must not read as
                    # current. After a failing run the newest failure is the current state already; a note
                    # there would ride on every later request for nothing.
                    shown = [
                        item for o in older_runs if (item := items.get(o)) is not None and item.state not in REDUCED
                    ]
                    if shown and not failed:
                        what, _ = _outputs_of(shown)
                        notes.append(f"[note: this run replaces the earlier {what}: no longer current]")
                    self._runs[r.key] = [*kept, event.id]
                else:
                    self._runs.setdefault(r.key, []).append(event.id)
        if call is not None and twin is None:
            digest = hashlib.sha1(f"{call.name}\0{args_json(call.arguments)}\0".encode("utf-8", "surrogatepass"))
            output = event.output
            for start in range(0, len(output), 1 << 20):  # a megabyte at a time: no copy of a huge output
                digest.update(output[start : start + (1 << 20)].encode("utf-8", "surrogatepass"))
            fingerprint = digest.hexdigest()
            previous = self._fingerprints.get(fingerprint)
            if previous is not None:
                proposals.append(Proposal(target_id=previous, action="supersede", by=event, what="identical output"))
            self._fingerprints[fingerprint] = event.id
        return proposals, "\n".join(notes)
