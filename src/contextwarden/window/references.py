"""References: a tool output the window already shows is sent as one line naming where it is shown.

An agent often gets an output it already has: the same command run again with the same result, a
file read again that did not change, a part of a file read again while its whole earlier read is
still in view. Sending it again costs its tokens on every later request. Rewriting the *earlier*
copy instead would change a prefix the provider has cached. So the *new* result, which no request
has carried yet, is sent as a reference to its visible twin, and nothing cached changes:

- an output identical to a tool result still shown as it was ingested (same policy, same outcome)
  becomes ``[same output as call X above]``;
- a read of a file whose text is, whole and line for line, part of that file's current read
  still shown as ingested (no write in between, not cut at ingestion) becomes
  ``[lines A-B of the output of call X above]``.

The log keeps the output, so ``read_range`` (or the client's recall tool behind the proxy) still
gives it back by the new result's own id, and the twin's placeholder names the twin's if the twin
is masked later. A reference is made only when it is shorter than the output by more than
:data:`MIN_SAVING` tokens. While the reference is protected (the latest result, the task's
evidence), so is its twin (:meth:`Twins.with_twins`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Container, Iterable, Sequence
from dataclasses import dataclass

from ..context import Decision
from ..log.events import ToolResult
from ..tokens import TokenCounter
from .ingest import ProjectionConfig
from .items import REDUCED, ItemList
from .lifecycle import ResourceLedger
from .pointers import points_back
from .policies.resources import Resource
from .policies.truncate import Truncation

__all__ = ["MIN_SAVING", "REFERENCE_PATTERN", "Twin", "Twins", "reference_text", "referenced_call"]

MIN_SAVING = 24
"""A reference replaces an output only when it saves more than this many tokens."""

REFERENCE_PATTERN = re.compile(r"\A\[(?:same output as|lines (\d+)-(\d+) of the output of) call (\S+) above\]")
"""A reference as the model sees it; groups: first line, last line (for a part), the twin's call id."""


def reference_text(call_id: str, lines: tuple[int, int] | None = None) -> str:
    """The line that stands for an output shown whole (``lines`` None) or in part by call ``call_id``'s result."""
    if lines is None:
        return f"[same output as call {call_id} above]"
    return f"[lines {lines[0]}-{lines[1]} of the output of call {call_id} above]"


def referenced_call(text: str) -> str | None:
    """The call id a reference names, or ``None`` when ``text`` is not a reference."""
    match = REFERENCE_PATTERN.match(text)
    return match.group(3) if match else None


def _digest(result: ToolResult, policy_name: str) -> str:
    failed = result.is_error or result.exit_code not in (None, 0)
    digest = hashlib.sha1(f"{policy_name}\0{int(failed)}\0".encode())
    output = result.output
    for start in range(0, len(output), 1 << 20):  # a megabyte at a time: no copy of a huge output
        digest.update(output[start : start + (1 << 20)].encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


@dataclass(frozen=True)
class Twin:
    """A result shown as a reference: the twin it names, its text and the decision saying so."""

    twin_id: str
    """The earlier tool result still shown."""
    text: str
    """The reference line."""
    decision: Decision
    """The ``reference`` decision of the new result."""


class Twins:
    """The outputs a window shows as ingested, and the references made to them."""

    def __init__(self, config: ProjectionConfig, items: ItemList, ledger: ResourceLedger) -> None:
        """Name twins among ``items`` of a window projected under ``config``; ``ledger`` knows the current reads."""
        self.config = config
        self.items = items
        self.ledger = ledger
        self._shown: dict[str, str] = {}
        """Digest of (policy, outcome, output) -> the first result with it that the window showed."""
        self._twin_of: dict[str, str] = {}
        """A result shown as a reference -> its twin."""

    def __len__(self) -> int:
        """How many results the window shows as references."""
        return len(self._twin_of)

    def twin_of(self, item_id: str) -> str | None:
        """The twin a reference names (``None`` for anything but a reference)."""
        return self._twin_of.get(item_id)

    def with_twins(self, ids: Iterable[str]) -> frozenset[str]:
        """``ids`` and the twin of each reference among them."""
        found = set(ids)
        found.update(twin for i in list(found) if (twin := self._twin_of.get(i)) is not None)
        return frozenset(found)

    def arrival(
        self,
        event: ToolResult,
        policy_name: str,
        cut: Truncation,
        resources: Sequence[Resource],
        pending: Container[str],
        decisions: list[Decision],
    ) -> Twin | None:
        """:meth:`find` for an arriving result (never a pointer back); its decision goes to ``decisions``."""
        if not self.config.references or points_back(event.output):
            return None
        keys = [r.key for r in resources if r.kind == "file" and r.access == "read"]
        reads = [i for key in keys for i in self.ledger.current_reads(key)]
        found = self.find(event, policy_name, cut.text, truncated=cut.truncated, reads=reads, pending=pending,
                          items=self.items, counter=self.config.counter)  # fmt: skip
        if found is not None:
            decisions.append(found.decision)
        return found

    def find(
        self,
        event: ToolResult,
        policy_name: str,
        text: str,
        *,
        truncated: bool,
        reads: Iterable[str],
        pending: Container[str],
        items: ItemList,
        counter: TokenCounter,
    ) -> Twin | None:
        """The twin ``event`` (projected as ``text``) may name instead of showing ``text``, if any.

        ``reads``: the ids of the current reads (no write since) of each file ``event`` reads whole
        or in part, the newest named first; ``pending``: results a recorded candidate will replace (never
        a twin). A result not sent as a reference is recorded as an output later ones may name.
        """
        if event.parts:
            return None
        digest = _digest(event, policy_name)
        shown = self._shown.get(digest)
        twin = items.get(shown) if shown is not None else None
        found = None
        if twin is not None and twin.state not in REDUCED and twin.id not in pending:
            found = self._named(event, twin.id, twin.message.tool_call_id, None, text, counter)
        if found is None and not truncated:
            parts = (self._part_of(event, i, text, items, counter) for i in reversed(list(reads)) if i not in pending)
            found = next((p for p in parts if p is not None), None)
        if found is None:
            self._shown[digest] = event.id
        return found
        return None

    def _part_of(
        self, event: ToolResult, read_id: str, text: str, items: ItemList, counter: TokenCounter
    ) -> Twin | None:
        """A reference to the lines of read ``read_id`` that ``text`` is, when it is shown as ingested and whole."""
        read = items.get(read_id)
        if read is None or read.state in REDUCED or read.truncated or read_id in self._twin_of or not text.strip():
            return None
        shown = read.message.text
        body = text[:-1] if text.endswith("\n") else text
        at = shown.find(body)
        while at >= 0:
            end = at + len(body)
            if (at == 0 or shown[at - 1] == "\n") and (end == len(shown) or shown[end] == "\n"):
                first = shown.count("\n", 0, at) + 1
                return self._named(
                    event, read_id, read.message.tool_call_id, (first, first + body.count("\n")), text, counter
                )
            at = shown.find(body, at + 1)
        return None

    def _named(
        self,
        event: ToolResult,
        twin_id: str,
        call_id: str | None,
        lines: tuple[int, int] | None,
        text: str,
        counter: TokenCounter,
    ) -> Twin | None:
        if not call_id or twin_id == event.id:
            return None
        line = reference_text(call_id, lines)
        saved = counter.count(text) - counter.count(line)
        if saved <= MIN_SAVING:
            return None
        self._twin_of[event.id] = twin_id
        what = "the same output" if lines is None else f"lines {lines[0]}-{lines[1]} of the output"
        decision = Decision(
            action="reference",
            target=event.id,
            reason=f"{event.tool_name} output sent as a reference at arrival: {what} of call {call_id}, still shown",
            tokens_saved=saved,
        )
        return Twin(twin_id=twin_id, text=line, decision=decision)
