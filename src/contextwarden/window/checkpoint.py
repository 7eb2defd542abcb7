"""Projection checkpoints: the whole state of a :class:`Projection` as JSON, and back.

A new process building a long session would fold every event of its window again (about a
millisecond each). A checkpoint is that fold's result, stored next to the log, so the projection
resumes from it and folds only the events after it. It is derived data: deleting it changes
nothing but speed, and any doubt about it means a full rebuild, never a wrong window.

Only JSON, never pickle: a store's content is untrusted, and reading it must not run code. Every
part of the state is written here field by field, so a field added to one of the projection's
parts that this module does not know makes :func:`snapshot` refuse (``CheckpointError``) instead of
writing a checkpoint that silently lacks it; the tests take a snapshot of a real session, so such
a field fails them.

The pairing-normalized prefix is stored too, so the first request after a resume normalizes only
the messages after it, as a warm build does; a prefix message that is an item's own message (all
but renamed or synthetic ones) is stored as that item's position. A save reuses the text of every
item, call and tool record the last save of the same window wrote (:mod:`.checkpoint_json`), so
its cost follows what changed, not the window's length.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any, TypeVar

import msgspec

from .._dataclass_json import decode_dataclass, encode_dataclass
from ..context import Decision, Message
from ..log.codec import EVENT_SCHEMA_VERSION, event_from_dict, event_to_dict, loads_json
from ..log.events import (
    BinaryPart,
    Compaction,
    ContextEdit,
    OpaquePart,
    ThinkingBlock,
    ToolCall,
    ToolResult,
    UsageReport,
)
from .accounting import NormalizedPrefix
from .checkpoint_json import FragmentMemo, has_nonfinite, json_text
from .editqueue import EditQueue, ToolRecord
from .ingest import ProjectionConfig
from .items import ContextItem, ItemList, Lifecycle, Tier
from .lifecycle import ResourceLedger
from .policies.presets import DEFAULT_TOOL_POLICY, ToolPolicy
from .policies.resources import Resource
from .projection import Projection
from .state import StateBuilder, TaskState, WorkingSetInputs

__all__ = ["CHECKPOINT_FORMAT", "CheckpointError", "FragmentMemo", "dumps_projection", "loads_projection"]

_T = TypeVar("_T")

CHECKPOINT_FORMAT = 2
"""Version of the layout below; a checkpoint of another format is not read (the window is rebuilt)."""

_KNOWN_FIELDS: dict[type, frozenset[str]] = {
    Projection: frozenset({
        "_calls", "_ledger", "_prefix", "_seen_user", "assistant_turns", "compaction", "config", "decisions",
        "exposed_tools", "held_frontier", "last_seq", "last_usage", "list", "queue", "state_builder",
        "system_parts", "tokens_at_last_usage",
    }),
    ItemList: frozenset({"_cum", "_cum_valid", "_pos", "items", "settled", "total"}),
    EditQueue: frozenset({
        "_by_policy", "_calls", "_last_user_pos", "_mask_cache", "_rank_in_policy", "_records", "_savings",
        "_shrinkable", "_thinking_floor", "_thinking_ids", "_tool_floor", "_tool_ids", "candidates", "counter",
        "items", "retrievable",
    }),
    ResourceLedger: frozenset({"_fingerprints", "_readers", "_runs", "_writers"}),
    StateBuilder: frozenset({
        "_calls", "_named_paths", "_named_text", "_pending", "_seen_user", "_state", "_task_files", "policies",
    }),
    NormalizedPrefix: frozenset({"_decisions", "_ids", "_messages", "_sections", "_upto", "counter"}),
}  # fmt: skip
"""The attributes each part of a projection has; :func:`snapshot` writes every one (or rebuilds it)."""


class CheckpointError(ValueError):
    """A checkpoint cannot be written or read; the caller rebuilds the window from the log instead."""


# ---------------------------------------------------------------------------------------------- writing


def dumps_projection(
    projection: Projection, *, annex: Mapping[str, Any] | None = None, memo: FragmentMemo | None = None
) -> str:
    r"""The projection's state as one JSON text (NUL and lone surrogates survive as ``\u`` escapes).

    ``annex`` is JSON-ready data of the caller's kept alongside (:func:`loads_projection` returns it).
    ``memo`` carries the text of unchanged parts from the previous save of the same window (keep
    one per window; without it every part is encoded).
    """
    p = projection
    for part in (p, p.list, p.queue, p._ledger, p.state_builder, p._prefix):
        unknown = set(vars(part)) ^ _KNOWN_FIELDS[type(part)]
        if unknown:
            raise CheckpointError(f"{type(part).__name__} has fields the checkpoint does not know: {sorted(unknown)}")
    if p._calls != p.state_builder._calls:
        raise CheckpointError("the projection's and the state's tool calls differ")
    if memo is None:
        memo = FragmentMemo()
    memo.start()
    policies: list[ToolPolicy] = []
    for record in p.queue._records.values():
        if record.policy not in policies:
            policies.append(record.policy)
    rest = {"format": CHECKPOINT_FORMAT, "annex": dict(annex or {}), **_projection_data(p, policies)}
    # json, not msgspec: this part is small, and may hold floats msgspec would write as null
    head = json.dumps(msgspec.to_builtins(rest), separators=(",", ":"), allow_nan=True)
    items = ",".join(memo.text(item, None, partial(_item_text, item)) for item in p.list.items)
    calls = ",".join(memo.text(call, None, partial(_call_text, call)) for call in p._calls.values())
    records = ",".join(
        memo.text(r, (item_id, index), partial(_record_text, item_id, r, index))
        for item_id, r in p.queue._records.items()
        for index in (policies.index(r.policy),)
    )
    memo.finish()
    return f'{head[:-1]},"items":[{items}],"calls":[{calls}],"records":[{records}]}}'


def _item_text(item: ContextItem) -> str:
    return json_text(item, nonfinite=any(has_nonfinite(c.arguments) for c in item.message.tool_calls))


def _call_text(call: ToolCall) -> str:
    return json_text(call, nonfinite=has_nonfinite(call.arguments))


def _record_text(item_id: str, r: ToolRecord, policy_index: int) -> str:
    stub = event_to_dict(r.stub)
    nonfinite = has_nonfinite(stub) or (r.call is not None and has_nonfinite(r.call.arguments))
    return json_text([item_id, stub, r.call, r.lines, policy_index, r.sources], nonfinite=nonfinite)


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
        },
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


# ---------------------------------------------------------------------------------------------- reading


def loads_projection(text: str, config: ProjectionConfig) -> tuple[Projection, dict[str, Any]]:
    """The projection a :func:`dumps_projection` text holds, under ``config`` (the one it was made with), and its annex.

    ``CheckpointError`` for anything but a well-formed checkpoint of this format.
    """
    try:
        data = loads_json(text)
        if not isinstance(data, dict) or data.get("format") != CHECKPOINT_FORMAT:
            raise CheckpointError("not a checkpoint of this format")
        annex = data["annex"]
        if not isinstance(annex, dict):
            raise CheckpointError("the annex is not an object")
        return _restore(data, config), annex
    except CheckpointError:
        raise
    except Exception as exc:  # any malformed part: the caller rebuilds from the log
        raise CheckpointError(f"malformed checkpoint: {type(exc).__name__}: {exc}") from None


def _restore(data: Mapping[str, Any], config: ProjectionConfig) -> Projection:
    compaction = None if data["compaction"] is None else event_from_dict(data["compaction"])
    if compaction is not None and not isinstance(compaction, Compaction):
        raise CheckpointError("the window's opening is not a compaction")
    p = Projection(config, compaction=compaction)
    for raw in data["items"]:
        p.list.push(_item(raw))
    if p.list.total != data["total"]:
        raise CheckpointError("the items' tokens do not add up to the recorded total")
    p.last_seq = _int(data["last_seq"])
    p.system_parts = [str(s) for s in data["system_parts"]]
    exposed = data["exposed_tools"]
    p.exposed_tools = None if exposed is None else tuple(str(name) for name in exposed)
    p.decisions = [Decision(**d) for d in data["decisions"]]
    p.held_frontier = {bool(thinking): str(item_id) for thinking, item_id in data["held_frontier"]}
    usage = None if data["last_usage"] is None else event_from_dict(data["last_usage"])
    if usage is not None and not isinstance(usage, UsageReport):
        raise CheckpointError("the last usage report is not one")
    p.last_usage = usage
    p.tokens_at_last_usage = _int(data["tokens_at_last_usage"])
    p.assistant_turns = _int(data["assistant_turns"])
    p._seen_user = bool(data["seen_user"])
    calls = {call.id: call for call in (_tool_call(c) for c in data["calls"])}
    p._calls.update(calls)  # the queue holds the same dict
    _restore_ledger(p._ledger, data["ledger"])
    _restore_queue(p.queue, data["queue"], data["records"], config)
    _restore_state(p.state_builder, data["state"], calls)
    _restore_prefix(p._prefix, data["prefix"], p.list.items)
    return p


def _restore_ledger(ledger: ResourceLedger, raw: Mapping[str, Any]) -> None:
    ledger._readers = _id_lists(raw["readers"])
    ledger._writers = _id_lists(raw["writers"])
    ledger._runs = _id_lists(raw["runs"])
    ledger._fingerprints = {str(k): str(v) for k, v in raw["fingerprints"].items()}


def _restore_queue(queue: EditQueue, raw: Mapping[str, Any], records: Sequence[Any], config: ProjectionConfig) -> None:
    known = (*config.tool_policies, DEFAULT_TOOL_POLICY)
    policies = [_policy(encoded, known) for encoded in raw["policies"]]
    queue.candidates = {edit.target_id: edit for edit in (_edit(e) for e in raw["candidates"])}
    for item_id, stub, call, lines, policy, sources in records:
        queue._records[item_id] = ToolRecord(
            stub=_stub(stub),
            call=None if call is None else _tool_call(call),
            lines=lines,
            policy=policies[policy],
            sources=tuple(sources),
        )
    queue._tool_ids = [str(i) for i in raw["tool_ids"]]
    queue._tool_floor = _int(raw["tool_floor"])
    queue._by_policy = _id_lists(raw["by_policy"])
    queue._rank_in_policy = dict(raw["rank_in_policy"])
    queue._thinking_ids = [str(i) for i in raw["thinking_ids"]]
    queue._thinking_floor = _int(raw["thinking_floor"])
    queue._last_user_pos = _int(raw["last_user_pos"])
    queue._mask_cache = {str(i): None if e is None else _edit(e) for i, e in raw["mask_cache"]}
    queue._savings = {(i, action): saved for i, action, saved in raw["savings"]}
    queue._shrinkable = dict(raw["shrinkable"])


def _restore_state(builder: StateBuilder, raw: Mapping[str, Any], calls: Mapping[str, ToolCall]) -> None:
    builder._state = TaskState.from_dict(raw["state"])
    builder._calls = dict(calls)
    builder._seen_user = bool(raw["seen_user"])
    named_text = raw["named_text"]
    builder._named_text = None if named_text is None else str(named_text)
    builder._named_paths = frozenset(str(p) for p in raw["named_paths"])
    builder._task_files = tuple(str(f) for f in raw["task_files"])
    pending = raw["pending"]
    builder._pending = None
    if pending is not None:
        builder._pending = WorkingSetInputs(
            touch={str(k): _int(v) for k, v in pending["touch"].items()},
            refs={str(k): _int(v) for k, v in pending["refs"].items()},
            read=tuple(str(f) for f in pending["read"]),
            modified=tuple(str(f) for f in pending["modified"]),
            unresolved=str(pending["unresolved"]),
            now=_int(pending["now"]),
            named=frozenset(str(p) for p in pending["named"]),
        )


def _restore_prefix(prefix: NormalizedPrefix, raw: Mapping[str, Any], items: Sequence[ContextItem]) -> None:
    upto = _int(raw["upto"])
    if upto > len(items):
        raise CheckpointError("the normalized prefix is longer than the window")
    messages: list[Message] = []
    for message in raw["messages"]:
        if isinstance(message, dict):
            messages.append(_message(message))
            continue
        k = _int(message)
        if not 0 <= k < upto:
            raise CheckpointError("a normalized message names an item outside the prefix")
        messages.append(items[k].message)
    prefix._messages = messages
    prefix._decisions = [Decision(**d) for d in raw["decisions"]]
    prefix._upto = upto
    prefix._sections = {str(section): _int(tokens) for section, tokens in raw["sections"].items()}
    prefix._ids = {str(i) for i in raw["ids"]}


def _policy(encoded: object, known: Sequence[ToolPolicy]) -> ToolPolicy:
    """The policy ``encoded`` describes: the config's own object when it holds an equal one."""
    policy = decode_dataclass(ToolPolicy, encoded, "tool policy")
    return next((k for k in known if k == policy), policy)


def _item(raw: dict[str, Any]) -> ContextItem:
    # The hot path of a resume (one call per item): only what JSON cannot say is converted (tuples,
    # enums, nested parts); a field of the wrong shape fails here or in the consistency checks.
    raw["message"] = _message(raw["message"])
    raw["tier"] = _TIERS[raw["tier"]]
    raw["state"] = _STATES[raw["state"]]
    raw["source_ids"] = tuple(raw["source_ids"])
    resources = raw["resources"]
    raw["resources"] = tuple(Resource(**r) for r in resources) if resources else ()
    return _instance(ContextItem, raw)


def _message(raw: dict[str, Any]) -> Message:
    for name, make in _MESSAGE_PARTS:
        value = raw[name]
        raw[name] = tuple(make(v) for v in value) if value else ()
    raw["source_ids"] = tuple(raw["source_ids"])
    return _instance(Message, raw)


def _instance(cls: type[_T], fields: dict[str, Any]) -> _T:
    """``cls(**fields)`` for a plain frozen dataclass given every field, without running ``__init__``.

    Like :func:`~contextwarden.log.events.with_position`: items and messages have no ``__slots__``
    and no ``__post_init__``, so setting the fields is all ``__init__`` does, at a fraction of the
    cost (a resume makes two per item).
    """
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = frozenset(f.name for f in dataclasses.fields(cls))  # type: ignore[arg-type]
    if fields.keys() != names:
        raise CheckpointError(f"{cls.__name__}: fields {sorted(fields.keys() ^ names)} do not match")
    made = _new_object(cls)
    _set_attribute(made, "__dict__", fields)  # the decoded dict becomes the instance's: no copy
    return made


_new_object = object.__new__
_set_attribute = object.__setattr__
_FIELD_NAMES: dict[type, frozenset[str]] = {}


def _stub(raw: dict[str, Any]) -> ToolResult:
    """A tool result without its output, as :func:`~contextwarden.log.codec.event_to_dict` wrote it."""
    if raw.pop("kind") != ToolResult.kind or raw.pop("schema") != EVENT_SCHEMA_VERSION:
        raise CheckpointError("a tool record is not a tool result of this schema")
    parts = raw.get("parts")
    raw["parts"] = tuple(_binary(p) for p in parts) if parts else ()
    return _instance(ToolResult, raw)


def _tool_call(raw: dict[str, Any]) -> ToolCall:
    return _instance(ToolCall, raw)


def _binary(raw: Mapping[str, Any]) -> BinaryPart:
    try:
        data = base64.b64decode(raw["data"], validate=True)
    except binascii.Error as exc:
        raise CheckpointError(f"invalid base64 in a binary part: {exc}") from None
    return BinaryPart(media_type=str(raw["media_type"]), data=data, name=str(raw["name"]))


def _edit(raw: Mapping[str, Any]) -> ContextEdit:
    return ContextEdit(**raw)


_TIERS = {tier.value: tier for tier in Tier}
_STATES = {state.value: state for state in Lifecycle}
_MESSAGE_PARTS: tuple[tuple[str, Callable[[Any], object]], ...] = (
    ("thinking", lambda t: ThinkingBlock(**t)),
    ("tool_calls", _tool_call),
    ("parts", _binary),
    ("opaque", lambda o: OpaquePart(**o)),
)


def _id_lists(raw: Mapping[str, Any]) -> dict[str, list[str]]:
    return {str(k): [str(i) for i in v] for k, v in raw.items()}


def _int(value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise CheckpointError(f"expected an integer, got {type(value).__name__}")
    return value
