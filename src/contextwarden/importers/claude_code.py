"""Claude Code transcripts: session JSONL and ``claude -p --output-format stream-json`` output.

Session files live under ``~/.claude/projects/<project>/<session>.jsonl``; stream-json is what
``claude -p --output-format stream-json --verbose`` prints.

Both are one JSON object per line with a ``type``. The mapping:

- ``user`` lines: a string ``message.content`` or its ``text`` blocks → :class:`UserMessage` (images →
  :class:`BinaryPart`); ``tool_result`` blocks → :class:`ToolResult` (``is_error`` kept; for ``Bash``
  an ``Exit code N`` header gives ``exit_code``). Later user messages stay user messages.
- ``assistant`` lines: Claude Code writes one line per content block, all with the same
  ``message.id``; they are merged into one :class:`AssistantMessage` (``text``, ``thinking`` with its
  signature, ``redacted_thinking`` as a signature-only block, ``tool_use`` → tool calls; server tool
  blocks such as ``server_tool_use``/``web_search_tool_result`` kept verbatim as opaque parts).
  ``<synthetic>`` messages (``isApiErrorMessage``, "No response requested.") are no model call: skipped.
  ``message.usage`` → one :class:`UsageReport` right after that message, ``input_tokens`` being
  ``input_tokens + cache_creation_input_tokens + cache_read_input_tokens``; ``usage.cache_creation``
  (2.x) splits the writes by lifetime, the 1-hour ones kept as ``cache_write_1h_tokens``.
- ``system`` with ``subtype: compact_boundary`` plus the following ``isCompactSummary`` user line →
  :class:`Compaction` (``details.provider_side = true``, trigger and pre-compaction tokens kept).
  ``system``/``init`` (stream-json) and ``result`` lines fill ``metadata`` (model, tools, cost totals).
  ``microcompact_boundary`` (old tool results cleared) is listed in ``metadata["microcompactions"]``;
  ``compactMetadata`` and stream-json's ``compact_metadata`` are both read.
- ``summary``, ``file-history-snapshot``, ``progress``, ``queue-operation``, ``attachment``, stream-json
  ``stream_event`` and other
  UI-only lines are skipped and counted in ``metadata["skipped"]``; unknown types are counted in warnings.

Lines marked ``isSidechain`` (or stream-json lines with a ``parent_tool_use_id``) belong to a subagent
and are skipped, unless the whole file is a subagent's. When the ``parentUuid`` chain shows a rewound
or edited conversation, only the branch ending at the last message is imported.

Claude Code does not record its system prompt in these files, so no :class:`Instruction` is produced.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from ..log.events import JSONValue, UserMessage
from ..wire.usage import anthropic_usage, int_field
from ._anthropic import add_assistant, assistant_content, text_and_parts, user_content
from ._builder import TranscriptBuilder
from ._common import (
    Transcript,
    as_dict,
    fail,
    opt_str,
    parse_timestamp,
)
from ._source import ImportOptions, SourceDocument

_UI_ONLY = frozenset(
    {"summary", "file-history-snapshot", "progress", "queue-operation", "attachment", "custom-title", "stream_event"}
)
_EXIT_CODE = re.compile(r"^(?:Error: )?Exit code (-?\d+)")

Record = tuple[int, dict[str, Any]]


def load(doc: SourceDocument, options: ImportOptions) -> Transcript:
    """Read a Claude Code session JSONL or stream-json file."""
    records = _records(doc)
    builder = TranscriptBuilder(source=doc.path, format=options.format)
    stream_json = any(r.get("type") == "system" and r.get("subtype") == "init" for _, r in records)
    builder.metadata["variant"] = "stream-json" if stream_json else "session"
    records = _main_thread(records, builder)
    if not stream_json:
        records = _active_branch(records, builder)
    reader = _Reader(builder, doc.path)
    for number, record in records:
        reader.read(number, record)
    reader.finish()
    builder.metadata["system_prompt_recorded"] = False
    transcript = builder.build()
    if not any(isinstance(e, UserMessage) for e in transcript.events):
        # A resumed or headless run can start with tool results only: say so rather than guess a task.
        warning = "no user prompt in this file: the task is unknown (a resumed session, or the prompt was not logged)"
        transcript = dataclasses.replace(transcript, warnings=(*transcript.warnings, warning))
    return transcript


def _records(doc: SourceDocument) -> tuple[Record, ...]:
    if doc.is_jsonl:
        return doc.lines
    if isinstance(doc.document, dict):
        return ((1, doc.document),)
    raise fail(doc.path, "$", "expected Claude Code JSON Lines (one object per line)")


def _main_thread(records: tuple[Record, ...], builder: TranscriptBuilder) -> tuple[Record, ...]:
    """Drop subagent (sidechain) lines, unless the file holds nothing else."""

    def is_side(record: dict[str, Any]) -> bool:
        return bool(record.get("isSidechain")) or record.get("parent_tool_use_id") is not None

    main = tuple(r for r in records if not is_side(r[1]))
    if not any(r.get("type") in ("user", "assistant") for _, r in main):
        return records
    dropped = len(records) - len(main)
    if dropped:
        builder.warn(f"skipped {dropped} sidechain (subagent) record(s); import the subagent file on its own")
    return main


def _active_branch(records: tuple[Record, ...], builder: TranscriptBuilder) -> tuple[Record, ...]:
    """Follow ``parentUuid`` back from the last message so rewound branches are left out."""
    if not any("parentUuid" in r for _, r in records):
        return records
    keep = _chain(records)
    if keep is None:
        builder.warn("the parentUuid chain is broken (lines lost or never written); using file order")
        return records
    _attach_siblings(records, keep)
    kept = tuple(r for i, r in enumerate(records) if i in keep or "uuid" not in r[1])
    dropped = sum(1 for i, (_, r) in enumerate(records) if i not in keep and _is_message(r))
    if dropped:
        builder.warn(f"skipped {dropped} message record(s) on abandoned branches (rewound or edited turns)")
    return kept


def _is_message(record: dict[str, Any]) -> bool:
    return record.get("type") in ("user", "assistant") and isinstance(record.get("uuid"), str)


def _chain(records: tuple[Record, ...]) -> set[int] | None:
    """Indexes on the path from the last message to its root (across compaction boundaries)."""
    by_uuid = {r["uuid"]: i for i, (_, r) in enumerate(records) if isinstance(r.get("uuid"), str)}
    leaves = [i for i, (_, r) in enumerate(records) if _is_message(r)]
    keep: set[int] = set()
    current: int | None = leaves[-1] if leaves else None
    while current is not None and current not in keep:
        keep.add(current)
        record = records[current][1]
        parent = record.get("parentUuid") or record.get("logicalParentUuid")
        if parent is not None and not (isinstance(parent, str) and parent in by_uuid):
            return None
        current = by_uuid[parent] if parent is not None else None
    return keep


def _attach_siblings(records: tuple[Record, ...], keep: set[int]) -> None:
    """Add records that hang off the chain as siblings rather than links.

    Blocks of one response and the results of parallel tool calls may each point at their own
    tool_use line, so they sit beside the chain, not on it; they are part of the live conversation.
    """
    blocks = [_blocks(r) for _, r in records]
    kinds = [r.get("type") for _, r in records]
    responses = {_message_id(r) for i, (_, r) in enumerate(records) if i in keep and kinds[i] == "assistant"}
    responses.discard("")
    for index, (_, record) in enumerate(records):
        if kinds[index] == "assistant" and _message_id(record) in responses:
            keep.add(index)
    calls = {
        b["id"]
        for i in keep
        if kinds[i] == "assistant"
        for b in blocks[i]
        if b.get("type") == "tool_use" and isinstance(b.get("id"), str)
    }
    for index in range(len(records)):
        ids = [b.get("tool_use_id") for b in blocks[index] if b.get("type") == "tool_result"]
        answered = bool(ids) and all(isinstance(i, str) and i in calls for i in ids)
        if kinds[index] == "user" and answered and len(ids) == len(blocks[index]):
            keep.add(index)


def _blocks(record: dict[str, Any]) -> list[dict[str, Any]]:
    message = record.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _message_id(record: dict[str, Any]) -> str:
    message = record.get("message")
    value = message.get("id") if isinstance(message, dict) else None
    return value if isinstance(value, str) else ""


class _Reader:
    """Reads records in order; holds the one piece of state between lines (a pending compaction)."""

    def __init__(self, builder: TranscriptBuilder, source: str) -> None:
        self.builder = builder
        self.source = source
        self.pending_compaction: dict[str, Any] | None = None

    def read(self, number: int, record: dict[str, Any]) -> None:
        kind = record.get("type")
        where = f"line {number}"
        if kind == "user":
            self._user(record, where)
        elif kind == "assistant":
            self._flush_compaction()
            self._assistant(record, where)
        elif kind == "system":
            self._system(record)
        elif kind == "result":
            self._result(record)
        elif isinstance(kind, str) and kind in _UI_ONLY:
            if kind == "summary" and isinstance(record.get("summary"), str):
                self.builder.metadata.setdefault("title", record["summary"])
            self.builder.skip(kind)
        else:
            self.builder.unknown(str(kind))

    def finish(self) -> None:
        self._flush_compaction()

    # -- line kinds

    def _system(self, record: dict[str, Any]) -> None:
        subtype = record.get("subtype")
        if subtype == "compact_boundary":
            self._flush_compaction()
            meta = _either(record, "compactMetadata", "compact_metadata")  # session file / stream-json
            self.pending_compaction = {
                "provider_side": True,
                "trigger": str(meta.get("trigger") or ""),
                "pre_tokens": int_field(meta.get("preTokens", meta.get("pre_tokens"))),
                "at": parse_timestamp(record.get("timestamp")),
            }
        elif subtype == "microcompact_boundary":
            self._microcompact(_either(record, "microcompactMetadata", "microcompact_metadata"))
        elif subtype == "init":
            meta = self.builder.metadata
            for key in ("model", "cwd", "session_id", "claude_code_version", "permissionMode"):
                if isinstance(record.get(key), (str, int, float)):
                    meta[key] = record[key]
            tools = record.get("tools")
            if isinstance(tools, list):
                meta["tools"] = [t for t in tools if isinstance(t, str)]
        else:
            self.builder.skip(f"system:{subtype}")

    def _microcompact(self, meta: dict[str, Any]) -> None:
        """Record a microcompaction: Claude Code cleared old tool results from later requests.

        The boundary names the cleared results (``compactedToolIds``) but not what replaced them, so
        it is reported in ``metadata["microcompactions"]`` rather than guessed into the events; the
        replay's raw strategy therefore still sends those results in full.
        """
        ids = meta.get("compactedToolIds", meta.get("compacted_tool_ids"))
        entry: dict[str, JSONValue] = {
            "trigger": str(meta.get("trigger") or ""),
            "pre_tokens": int_field(meta.get("preTokens", meta.get("pre_tokens"))),
            "tokens_saved": int_field(meta.get("tokensSaved", meta.get("tokens_saved"))),
            "tool_ids": [i for i in ids if isinstance(i, str)] if isinstance(ids, list) else [],
        }
        found = self.builder.metadata.setdefault("microcompactions", [])
        if isinstance(found, list):
            found.append(entry)
        self.builder.skip("system:microcompact_boundary")

    def _result(self, record: dict[str, Any]) -> None:
        usage = anthropic_usage(record.get("usage"))
        totals: dict[str, Any] = {}
        if usage is not None:
            totals = {
                "input_tokens": usage.input,
                "output_tokens": usage.output,
                "cache_read_tokens": usage.cache_read,
                "cache_write_tokens": usage.cache_write,
            }
        cost = record.get("total_cost_usd")
        if isinstance(cost, (int, float)):
            totals["cost_usd"] = float(cost)
        if isinstance(record.get("num_turns"), int):
            totals["turns"] = record["num_turns"]
        if totals:
            self.builder.metadata["usage_totals"] = totals
        self.builder.skip("result")

    def _user(self, record: dict[str, Any], where: str) -> None:
        at = parse_timestamp(record.get("timestamp"))
        message = as_dict(record.get("message"), self.source, f"{where}: message")
        content = message.get("content")
        if record.get("isCompactSummary"):
            details = self.pending_compaction or {"provider_side": True}
            self.pending_compaction = None
            summary, _ = text_and_parts(content, self.source, where)
            self.builder.compaction(summary, details=_details(details), at=details.get("at") or at)
            return
        self._flush_compaction()
        if record.get("isVisibleInTranscriptOnly"):
            self.builder.skip("transcript-only")
            return
        user = user_content(content, self.source, f"{where}: message")
        for here, block in user.results:
            self._tool_result(block, here, at)
        self.builder.user(user.text, parts=user.parts, at=at)

    def _tool_result(self, block: dict[str, Any], where: str, at: float | None) -> None:
        call_id = opt_str(block, "tool_use_id", self.source, where)
        output, parts = text_and_parts(block.get("content"), self.source, where)
        is_error = bool(block.get("is_error"))
        exit_code = None
        if self.builder.tool_name(call_id) == "Bash":
            match = _EXIT_CODE.match(output)
            exit_code = int(match.group(1)) if match else None
        self.builder.tool_result(
            call_id, output, is_error=is_error, exit_code=exit_code, parts=parts, where=where, at=at
        )

    def _assistant(self, record: dict[str, Any], where: str) -> None:
        message = as_dict(record.get("message"), self.source, f"{where}: message")
        model = opt_str(message, "model", self.source, f"{where}: message")
        if model == "<synthetic>" or record.get("isApiErrorMessage"):
            # Written by Claude Code itself (an API error, "No response requested."): no model call.
            self.builder.skip("synthetic-assistant")
            return
        if model:
            self.builder.metadata.setdefault("model", model)
        key = "msg:" + str(message.get("id") or record.get("uuid") or where)
        content = assistant_content(message.get("content"), self.source, f"{where}: message", self.builder.skip)
        request_id = record.get("requestId")
        add_assistant(
            self.builder,
            message,
            content,
            model=model,
            request_id=request_id if isinstance(request_id, str) else "",
            key=key,
            at=parse_timestamp(record.get("timestamp")),
        )

    def _flush_compaction(self) -> None:
        if self.pending_compaction is not None:
            details = self.pending_compaction
            self.pending_compaction = None
            self.builder.compaction("", details=_details(details), at=details.get("at"))


def _either(record: dict[str, Any], camel: str, snake: str) -> dict[str, Any]:
    value = record.get(camel, record.get(snake))
    return value if isinstance(value, dict) else {}


def _details(pending: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in pending.items() if k != "at" and v not in ("", None)}
