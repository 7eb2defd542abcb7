"""Reading a projection checkpoint back: the JSON of :mod:`.checkpoint` becomes a :class:`Projection`.

Only JSON, never pickle: a store's content is untrusted, and reading it must not run code. Any
part of the wrong shape raises :class:`CheckpointError` (the caller rebuilds the window from the
log); the hot path (one call per item) converts only what JSON cannot say: tuples, enums, parts.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from .._dataclass_json import decode_dataclass
from ..context import Decision, Message
from ..log.codec import EVENT_SCHEMA_VERSION, event_from_dict, loads_json
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
from .checkpoint_json import CHECKPOINT_FORMAT, CheckpointError
from .editqueue import EditQueue, ToolRecord
from .ingest import ProjectionConfig
from .items import ContextItem, Lifecycle, Tier
from .lifecycle import ResourceLedger
from .policies.presets import DEFAULT_TOOL_POLICY, ToolPolicy
from .policies.resources import Resource
from .projection import Projection
from .state import StateBuilder, TaskState, WorkingSetInputs

__all__ = ["loads_projection"]

_T = TypeVar("_T")


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
    # A checkpoint from before the field offered the retrieval tools with the first cut at ingestion.
    p.cuts_offered = bool(data.get("cuts_offered", any(d.action == "truncate" for d in p.decisions)))
    p.held_frontier = {bool(thinking): str(item_id) for thinking, item_id in data["held_frontier"]}
    usage = None if data["last_usage"] is None else event_from_dict(data["last_usage"])
    if usage is not None and not isinstance(usage, UsageReport):
        raise CheckpointError("the last usage report is not one")
    p.last_usage = usage
    p.tokens_at_last_usage = _int(data["tokens_at_last_usage"])
    p.assistant_turns = _int(data["assistant_turns"])
    p._seen_user = bool(data["seen_user"])
    items = p.list.items
    calls = {call.id: call for call in (_call(c, items) for c in data["calls"])}
    p._calls.update(calls)  # the queue holds the same dict
    _restore_ledger(p._ledger, data["ledger"])
    p.twins._shown = {str(k): str(v) for k, v in data["twins"]["shown"].items()}
    p.twins._twin_of = {str(k): str(v) for k, v in data["twins"]["twin_of"].items()}
    _restore_queue(p.queue, data["queue"], data["records"], config, items)
    _restore_state(p.state_builder, data["state"], calls)
    _restore_prefix(p._prefix, data["prefix"], p.list.items)
    return p


def _restore_ledger(ledger: ResourceLedger, raw: Mapping[str, Any]) -> None:
    ledger._readers = _id_lists(raw["readers"])
    ledger._writers = _id_lists(raw["writers"])
    ledger._runs = _id_lists(raw["runs"])
    ledger._fingerprints = {str(k): str(v) for k, v in raw["fingerprints"].items()}
    ledger._pointers = {str(k): str(v) for k, v in raw.get("pointers", {}).items()}


def _call(raw: Any, items: Sequence[ContextItem]) -> ToolCall:
    """A call written in full, or named by its place in the window's items (``[position, index]``)."""
    if isinstance(raw, dict):
        return _tool_call(raw)
    position, index = raw
    return items[_int(position)].message.tool_calls[_int(index)]


def _restore_queue(
    queue: EditQueue,
    raw: Mapping[str, Any],
    records: Sequence[Any],
    config: ProjectionConfig,
    items: Sequence[ContextItem],
) -> None:
    known = (*config.tool_policies, DEFAULT_TOOL_POLICY)
    policies = [_policy(encoded, known) for encoded in raw["policies"]]
    queue.candidates = {edit.target_id: edit for edit in (_edit(e) for e in raw["candidates"])}
    for item_id, stub, call, lines, policy, sources, odd_lines in records:
        queue._records[item_id] = ToolRecord(
            stub=_stub(stub),
            call=None if call is None else _call(call, items),
            lines=lines,
            policy=policies[policy],
            sources=tuple(sources),
            odd_lines=tuple(odd_lines),
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
    builder._open_file = str(raw["open_file"])
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
