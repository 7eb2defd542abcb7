"""Projection checkpoints: the whole state of a :class:`Projection` as JSON, and back.

A new process building a long session would fold every event of its window again (about a
millisecond each). A checkpoint is that fold's result, stored next to the log, so the projection
resumes from it and folds only the events after it. It is derived data: deleting it changes
nothing but speed, and any doubt about it means a full rebuild, never a wrong window.

Only JSON, never pickle: a store's content is untrusted, and reading it must not run code. Every
part of the state is written here field by field, so a field added to one of the projection's
parts that this module does not know makes :func:`dumps_pieces` refuse (``CheckpointError``) instead
of writing a checkpoint that silently lacks it; the tests save a real session, so such a field
fails them. Reading is :mod:`.checkpoint_read` (:func:`loads_projection`, re-exported here).

The pairing-normalized prefix is stored too, so the first request after a resume normalizes only
the messages after it, as a warm build does; a prefix message that is an item's own message (all
but renamed or synthetic ones) is stored as that item's position. A save reuses the text of every
item, call and tool record the last save of the same window wrote (:mod:`.checkpoint_json`), and
says where the text may be cut into pieces that seldom change, so a SQL store writes only the
changed pieces (:mod:`contextwarden.log.store._sql_checkpoints`): a save's encoding and writing
follow what changed, not the window's length.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

import msgspec

from .._dataclass_json import encode_dataclass
from ..context import Message
from ..log.codec import event_to_dict
from ..log.events import ToolCall
from .accounting import NormalizedPrefix
from .checkpoint_json import CHECKPOINT_FORMAT, CheckpointError, FragmentMemo, has_nonfinite, json_text
from .checkpoint_read import loads_projection
from .editqueue import EditQueue, ToolRecord
from .items import ContextItem, ItemList
from .lifecycle import ResourceLedger
from .policies.presets import ToolPolicy
from .projection import Projection
from .references import Twins
from .state import StateBuilder

__all__ = [
    "CHECKPOINT_FORMAT",
    "PIECE_RUN",
    "CheckpointError",
    "FragmentMemo",
    "dumps_pieces",
    "dumps_projection",
    "loads_projection",
]

_KNOWN_FIELDS: dict[type, frozenset[str]] = {
    Projection: frozenset({
        "_calls", "_ledger", "_prefix", "_seen_user", "assistant_turns", "compaction", "config", "cuts_offered",
        "decisions", "exposed_tools", "held_frontier", "last_seq", "last_usage", "list", "queue", "state_builder",
        "system_parts", "tokens_at_last_usage", "twins",
    }),
    ItemList: frozenset({"_cum", "_cum_valid", "_pos", "items", "settled", "total"}),
    EditQueue: frozenset({
        "_by_policy", "_calls", "_last_user_pos", "_mask_cache", "_rank_in_policy", "_records", "_savings",
        "_shrinkable", "_thinking_floor", "_thinking_ids", "_tool_floor", "_tool_ids", "candidates", "counter",
        "items", "retrievable", "twins",
    }),
    ResourceLedger: frozenset({"_fingerprints", "_pointers", "_readers", "_runs", "_writers"}),
    Twins: frozenset({"_shown", "_twin_of", "config", "items", "ledger"}),
    StateBuilder: frozenset({
        "_calls", "_named_paths", "_named_text", "_open_file", "_pending", "_seen_user", "_state", "_task_files",
        "policies",
    }),
    NormalizedPrefix: frozenset({"_decisions", "_ids", "_messages", "_sections", "_upto", "counter"}),
}  # fmt: skip
"""The attributes each part of a projection has; :func:`dumps_pieces` writes every one (or rebuilds it)."""


# ---------------------------------------------------------------------------------------------- writing


def dumps_projection(
    projection: Projection, *, annex: Mapping[str, Any] | None = None, memo: FragmentMemo | None = None
) -> str:
    r"""The projection's state as one JSON text (NUL and lone surrogates survive as ``\u`` escapes).

    ``annex`` is JSON-ready data of the caller's kept alongside (:func:`loads_projection` returns it).
    ``memo`` carries the text of unchanged parts from the previous save of the same window (keep
    one per window; without it every part is encoded).
    """
    return dumps_pieces(projection, annex=annex, memo=memo)[0]


def dumps_pieces(
    projection: Projection, *, annex: Mapping[str, Any] | None = None, memo: FragmentMemo | None = None
) -> tuple[str, tuple[int, ...]]:
    """Like :func:`dumps_projection`, also giving where the text may be cut into pieces that seldom change.

    The items, calls and tool records are written in runs of :data:`PIECE_RUN`, each run starting at
    one of the offsets: appending to the window changes only the last run of each, and an edit only
    the run of the item it replaces, so a store keeping the pieces apart writes little per save.
    """
    p = projection
    for part in (p, p.list, p.queue, p._ledger, p.twins, p.state_builder, p._prefix):
        unknown = set(vars(part)) ^ _KNOWN_FIELDS[type(part)]
        if unknown:
            raise CheckpointError(f"{type(part).__name__} has fields the checkpoint does not know: {sorted(unknown)}")
    if p._calls != p.state_builder._calls:
        raise CheckpointError("the projection's and the state's tool calls differ")
    if memo is None:
        memo = FragmentMemo()
    memo.start()
    policies: list[ToolPolicy] = []
    index_of: dict[int, int] = {}  # by identity: records share their config's policy objects
    for record in p.queue._records.values():
        if id(record.policy) not in index_of:
            if record.policy not in policies:
                policies.append(record.policy)
            index_of[id(record.policy)] = policies.index(record.policy)
    rest = msgspec.to_builtins(
        {"format": CHECKPOINT_FORMAT, "annex": dict(annex or {}), **_projection_data(p, policies)}
    )
    # Floats live only in the events (created_at, usage), the policies, the annex and the task
    # state; the rest is ids, positions and counts, not walked (a new part comes through _KNOWN_FIELDS).
    floats = (rest["compaction"], rest["last_usage"], rest["annex"], rest["queue"]["policies"], rest["state"])
    head = json_text(rest, nonfinite=has_nonfinite(floats))
    items = [memo.text(item, None, partial(_item_text, item)) for item in p.list.items]
    # A call the window shows unchanged is written once, in its item; the calls and the tool records
    # name it by place ([item position, call index]) and the reader shares the one object.
    shown = {id(c): (n, k) for n, item in enumerate(p.list.items) for k, c in enumerate(item.message.tool_calls)}
    calls = [memo.text(c, shown.get(id(c)), partial(_call_text, c, shown.get(id(c)))) for c in p._calls.values()]
    records = [
        memo.text(r, (item_id, index, at), partial(_record_text, item_id, r, index, at))
        for item_id, r in p.queue._records.items()
        for index, at in ((index_of[id(r.policy)], shown.get(id(r.call))),)
    ]
    memo.finish()
    return _joined(head, (("items", items), ("calls", calls), ("records", records)))


PIECE_RUN = 64
"""Items (calls, tool records) per piece of a checkpoint's text."""


def _joined(head: str, lists: Sequence[tuple[str, list[str]]]) -> tuple[str, tuple[int, ...]]:
    """``head`` (a JSON object) with each named list of JSON texts added, and the offsets of their runs."""
    out = [head[:-1]]
    size = len(out[0])
    offsets: list[int] = []
    for name, texts in lists:
        opener = f',"{name}":['
        out.append(opener)
        size += len(opener)
        for start in range(0, len(texts), PIECE_RUN):
            if start:
                out.append(",")
                size += 1
            offsets.append(size)
            run = ",".join(texts[start : start + PIECE_RUN])
            out.append(run)
            size += len(run)
        out.append("]")
        size += 1
    out.append("}")
    return "".join(out), tuple(offsets)


def _item_text(item: ContextItem) -> str:
    return json_text(item, nonfinite=any(has_nonfinite(c.arguments) for c in item.message.tool_calls))


def _call_text(call: ToolCall, shown_at: tuple[int, int] | None) -> str:
    if shown_at is not None:
        return json_text(list(shown_at))
    return json_text(call, nonfinite=has_nonfinite(call.arguments))


def _record_text(item_id: str, r: ToolRecord, policy_index: int, call_at: tuple[int, int] | None) -> str:
    stub = event_to_dict(r.stub)
    call: object = r.call if call_at is None else list(call_at)
    nonfinite = has_nonfinite(stub) or (call_at is None and r.call is not None and has_nonfinite(r.call.arguments))
    return json_text([item_id, stub, call, r.lines, policy_index, r.sources, r.odd_lines], nonfinite=nonfinite)


def _projection_data(p: Projection, policies: list[ToolPolicy]) -> dict[str, Any]:
    """Every part but the items, calls and tool records (written from the memo)."""
    queue, ledger, builder = p.queue, p._ledger, p.state_builder
    pending = builder._pending
    return {
        "last_seq": p.last_seq,
        "compaction": None if p.compaction is None else event_to_dict(p.compaction),
        "total": p.list.total,
        "system_parts": p.system_parts,
        "exposed_tools": p.exposed_tools,
        "cuts_offered": p.cuts_offered,
        "decisions": p.decisions,
        "held_frontier": [[thinking, item_id] for thinking, item_id in p.held_frontier.items()],
        "last_usage": None if p.last_usage is None else event_to_dict(p.last_usage),
        "tokens_at_last_usage": p.tokens_at_last_usage,
        "assistant_turns": p.assistant_turns,
        "seen_user": p._seen_user,
        "ledger": {
            "readers": ledger._readers,
            "writers": ledger._writers,
            "runs": ledger._runs,
            "fingerprints": ledger._fingerprints,
            "pointers": ledger._pointers,
        },
        "twins": {"shown": p.twins._shown, "twin_of": p.twins._twin_of},
        "queue": {
            "candidates": list(queue.candidates.values()),
            "policies": [encode_dataclass(policy) for policy in policies],
            "tool_ids": queue._tool_ids,
            "tool_floor": queue._tool_floor,
            "by_policy": queue._by_policy,
            "rank_in_policy": queue._rank_in_policy,
            "thinking_ids": queue._thinking_ids,
            "thinking_floor": queue._thinking_floor,
            "last_user_pos": queue._last_user_pos,
            "mask_cache": [[item_id, edit] for item_id, edit in queue._mask_cache.items()],
            "savings": [[item_id, action, saved] for (item_id, action), saved in queue._savings.items()],
            "shrinkable": queue._shrinkable,
        },
        "state": {
            "state": builder._state.to_dict(),
            "seen_user": builder._seen_user,
            "named_text": builder._named_text,
            "named_paths": sorted(builder._named_paths),
            "task_files": builder._task_files,
            "open_file": builder._open_file,
            "pending": None if pending is None else {**pending._asdict(), "named": sorted(pending.named)},
        },
        "prefix": _prefix_data(p._prefix, p.list.items),
    }


def _prefix_data(prefix: NormalizedPrefix, items: Sequence[ContextItem]) -> dict[str, Any]:
    """The settled pairing-normalized prefix: an item's own message as its position, any other in full."""
    upto = prefix._upto
    position = {id(items[k].message): k for k in range(upto)}
    messages: list[int | Message] = []
    for message in prefix._messages:
        k = position.get(id(message))
        messages.append(k if k is not None and items[k].message is message else message)
    return {
        "upto": upto,
        "messages": messages,
        "decisions": prefix._decisions,
        "sections": prefix._sections,
        "ids": sorted(prefix._ids),
    }
