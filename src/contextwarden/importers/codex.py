"""Codex CLI rollout JSONL (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``).

Each line is ``{"timestamp": ..., "type": ..., "payload": {...}}`` with ``type`` one of
``session_meta``, ``response_item``, ``turn_context``, ``event_msg`` and ``compacted``. Older rollouts
(before the envelope) hold a meta line and bare response items; both are read. The mapping:

- ``session_meta``: ``base_instructions.text`` → system :class:`Instruction`; ids, cwd, CLI version →
  ``metadata``.
- ``response_item`` ``message``: ``developer``/``system`` → :class:`Instruction`; ``user`` →
  :class:`UserMessage`, except the harness's injected context (``<user_instructions>``,
  ``<environment_context>``, ``# AGENTS.md instructions``) which becomes a developer
  :class:`Instruction`; ``assistant`` → :class:`AssistantMessage`.
- ``reasoning`` (read by the Responses codec: summary or full text as unsigned thinking, the item with
  its ``encrypted_content`` kept verbatim as an :class:`~contextwarden.log.events.OpaquePart`), ``function_call``,
  ``custom_tool_call`` and ``local_shell_call`` of one model response are merged into that response's
  :class:`AssistantMessage`. A response ends at its ``token_count`` event (or, in rollouts without
  usage, at the next non-assistant item).
- ``function_call_output`` / ``custom_tool_call_output`` → :class:`ToolResult`; the exit code is read
  from the ``{"output", "metadata": {"exit_code"}}`` JSON form or an ``Exit code: N`` header.
- ``event_msg`` ``token_count``: ``info.last_token_usage`` → :class:`UsageReport` right after the
  response it belongs to (``input_tokens`` already includes ``cached_input_tokens``); repeated reports
  with an unchanged running total are dropped. Other events mirror response items and are skipped.
- ``compacted`` → :class:`Compaction` with the summary text and ``details.provider_side = true``; its
  ``replacement_history`` goes through the remote-compaction filter (``filter_remote_items``): the kept
  summaries and user messages in ``details.remote_items``, what was dropped counted in
  ``details.remote_dropped`` (developer messages, tool traffic, injected context such as
  ``<environment_context>``). A
  ``compaction``/``context_compaction`` item (encrypted) is a compaction too, merged with the
  ``compacted`` line that follows it (``details.compaction_item``).
- ``tool_search_call``/``tool_search_output`` → a ``tool_search`` call and its result (the tools found,
  as JSON); ``web_search_call`` and ``image_generation_call`` (server-side tools) are kept verbatim as
  :class:`~contextwarden.log.events.OpaquePart` on their response; ``agent_message`` (another agent's
  message) → :class:`UserMessage` headed by its author and recipient.
- ``event_msg`` ``thread_rolled_back``: the last ``num_turns`` user turns are left out (with a warning).
- ``ghost_snapshot``, ``additional_tools``, ``configuration_update``, ``compaction_trigger`` and the
  ``world_state`` line are harness state, skipped and counted in ``metadata["skipped"]``.
"""

from __future__ import annotations

import json
from typing import Any

from ..log.events import BinaryPart, JSONValue, ToolCall
from ..plan.compaction.remote import OWN_MARKERS, filter_remote_items
from ..wire.openai_responses.request import assistant_turn
from ..wire.usage import int_field, openai_responses_usage
from ._builder import TranscriptBuilder
from ._codex_items import (
    ASSISTANT_ITEMS,
    COMPACTION_ITEMS,
    CONTROL_ITEMS,
    ENVELOPE_TYPES,
    INJECTED_PREFIXES,
    ITEM_TYPES,
    OUTPUT_ITEMS,
    SERVER_ITEMS,
    agent_message_text,
    content_text,
    exit_code_of,
    kind_of,
    message_text,
)
from ._common import (
    Transcript,
    as_dict,
    fail,
    opt_str,
    parse_arguments,
    parse_timestamp,
)
from ._source import ImportOptions, SourceDocument


def load(doc: SourceDocument, options: ImportOptions) -> Transcript:
    """Read a Codex CLI rollout file."""
    if doc.is_jsonl:
        records = doc.lines
    elif isinstance(doc.document, dict):
        records = ((1, doc.document),)
    else:
        raise fail(doc.path, "$", "expected Codex rollout JSON Lines (one object per line)")
    builder = TranscriptBuilder(source=doc.path, format=options.format)
    with_usage = any(_is_token_count(r) for _, r in records)
    reader = _Reader(builder, doc.path, ends_at_usage=with_usage)
    for number, record in records:
        reader.read(number, record)
    reader.finish()
    return builder.build()


def _injected(text: str) -> bool:
    """Context Codex or contextwarden injected (AGENTS.md, environment, our own fragments), not a person's words."""
    return text.lstrip().startswith((*INJECTED_PREFIXES, *OWN_MARKERS))


def _is_token_count(record: dict[str, Any]) -> bool:
    payload = record.get("payload")
    return record.get("type") == "event_msg" and isinstance(payload, dict) and payload.get("type") == "token_count"


class _Reader:
    def __init__(self, builder: TranscriptBuilder, source: str, *, ends_at_usage: bool) -> None:
        self.builder = builder
        self.source = source
        self.ends_at_usage = ends_at_usage
        self.model = ""
        self.response: str | None = None
        self.responses = 0
        self.last_total: Any = None
        self.pending_item: dict[str, JSONValue] | None = None  # a compaction item not yet placed

    def read(self, number: int, record: dict[str, Any]) -> None:
        kind = kind_of(record)
        where = f"line {number}"
        at = parse_timestamp(record.get("timestamp"))
        payload = record.get("payload")
        inner = kind_of(payload) if isinstance(payload, dict) else ""
        if kind not in ("compacted", "event_msg") and not (kind == "response_item" and inner in COMPACTION_ITEMS):
            self.finish()
        if kind == "world_state":
            self.builder.skip("world_state")
        elif kind in ENVELOPE_TYPES:
            self._envelope(kind, as_dict(record.get("payload"), self.source, f"{where}: payload"), where, at)
        elif kind in ITEM_TYPES and "payload" not in record:
            self._item(record, where, at)
        elif "record_type" in record or ("type" not in record and "id" in record and "timestamp" in record):
            self.builder.skip("legacy-state")
        else:
            self.builder.unknown(str(kind))

    def finish(self) -> None:
        """Place a compaction item that no ``compacted`` line followed."""
        if self.pending_item is not None:
            details, self.pending_item = self.pending_item, None
            at = details.pop("at", None)
            self.builder.compaction("", details=details, at=at if isinstance(at, float) else None)

    def _envelope(self, kind: str, payload: dict[str, Any], where: str, at: float | None) -> None:
        if kind == "response_item":
            self._item(payload, f"{where}: payload", at)
        elif kind == "event_msg":
            self._event(payload, at)
        elif kind == "turn_context":
            self.model = str(payload.get("model") or self.model)
            if self.model:
                self.builder.metadata.setdefault("model", self.model)
        elif kind == "session_meta":
            self._meta(payload)
        else:
            self._compacted(payload, at)

    # -- envelope kinds

    def _meta(self, payload: dict[str, Any]) -> None:
        for key in ("id", "cwd", "originator", "cli_version", "model_provider", "forked_from_id", "agent_role"):
            if isinstance(payload.get(key), str):
                self.builder.metadata[f"session_{key}" if key == "id" else key] = payload[key]
        source = payload.get("source")
        if isinstance(source, (str, dict)):
            # A subagent's rollout names its parent here: {"subagent": {"thread_spawn": {...}}}.
            self.builder.metadata["source"] = source
        tools = payload.get("dynamic_tools")
        if isinstance(tools, list):
            self.builder.metadata["dynamic_tools"] = [
                str(t.get("name")) for t in tools if isinstance(t, dict) and t.get("name")
            ]
        base = payload.get("base_instructions")
        text = base.get("text") if isinstance(base, dict) else base
        if isinstance(text, str):
            self.builder.instruction(text, role="system", source="codex base_instructions")

    def _compacted(self, payload: dict[str, Any], at: float | None) -> None:
        self.response = None
        details: dict[str, JSONValue] = {"provider_side": True}
        if self.pending_item is not None:
            # The compaction item the model returned and the rollout's own marker are one compaction.
            details["compaction_item"] = self.pending_item["compaction_item"]
            self.pending_item = None
        history = payload.get("replacement_history")
        if isinstance(history, list):
            # The transcript a compaction hands back is filtered like any remote one: developer messages,
            # tool traffic and the harness's injected context go; summaries and what people said stay.
            items = [item for item in history if isinstance(item, dict)]
            filtered = filter_remote_items(items, is_own_fragment=_injected)
            details["replacement_history_items"] = len(history)
            details["remote_items"] = list(filtered.kept)
            details["remote_dropped"] = dict(filtered.dropped)
            retained = [message_text(item)[0] for item in filtered.kept if item.get("role") == "user"]
            details["retained_user_messages"] = [t for t in retained if t]
            if any(isinstance(i, dict) and i.get("type") in ("compaction", "compaction_summary") for i in history):
                details["encrypted"] = True
        message = payload.get("message")
        self.builder.compaction(message if isinstance(message, str) else "", details=details, at=at)

    def _event(self, payload: dict[str, Any], at: float | None) -> None:
        kind = payload.get("type")
        if kind == "thread_rolled_back":
            turns = int_field(payload.get("num_turns"))
            dropped = self.builder.rewind_user_turns(turns)
            self.response = None
            self.builder.warn(f"a rollback undid the last {turns} user turn(s): {dropped} event(s) left out")
            return
        if kind != "token_count":
            self.builder.skip(f"event_msg:{kind}")
            return
        info = payload.get("info")
        if isinstance(info, dict):
            last, total = info.get("last_token_usage"), info.get("total_token_usage")
        else:
            last, total = (payload, None) if "input_tokens" in payload else (None, None)
        usage = openai_responses_usage(last)
        if usage is None or (total is not None and total == self.last_total):
            # Rate-limit-only updates and repeats of the same running total carry no new call.
            self.builder.skip("event_msg:token_count")
            return
        self.last_total = total
        totals = openai_responses_usage(total)
        if totals is not None:
            self.builder.metadata["usage_totals"] = {
                "input_tokens": totals.input,
                "output_tokens": totals.output,
                "cache_read_tokens": totals.cache_read,
            }
        self.builder.usage(usage, model=self.model, key=self.response)
        self.response = None

    # -- response items

    def _key(self) -> str:
        if self.response is None:
            self.responses += 1
            self.response = f"response:{self.responses}"
        return self.response

    def _item(self, item: dict[str, Any], where: str, at: float | None) -> None:
        kind = kind_of(item)
        if kind == "message":
            self._message(item, where, at)
        elif kind in ASSISTANT_ITEMS:
            self._assistant_item(item, where, at)
        elif kind in OUTPUT_ITEMS:
            if not self.ends_at_usage:
                self.response = None
            self._output(item, where, at)
        elif kind == "agent_message":
            self.response = None
            self.builder.user(agent_message_text(item), at=at)
        elif kind in COMPACTION_ITEMS:
            # An encrypted compaction the model returned: what came before is now this opaque item.
            self.response = None
            self.finish()
            self.pending_item = {"provider_side": True, "encrypted": True, "compaction_item": kind, "at": at}
        elif kind in CONTROL_ITEMS:
            self.builder.skip(kind)
        else:
            self.builder.unknown(f"response_item:{kind}")

    def _message(self, item: dict[str, Any], where: str, at: float | None) -> None:
        role = opt_str(item, "role", self.source, where)
        text, parts = message_text(item)
        if role == "assistant":
            self.builder.assistant(text=text, model=self.model, key=self._key(), at=at)
            return
        self.response = None
        if role in ("developer", "system"):
            self.builder.instruction(text, role=role, source=f"codex {role} message", at=at)
        elif role == "user" and text.lstrip().startswith(INJECTED_PREFIXES):
            self.builder.instruction(text, role="developer", source="codex injected context", at=at)
        elif role == "user":
            self.builder.user(text, parts=parts, at=at)
        else:
            raise fail(self.source, f"{where}.role", f"unknown message role {role!r}")

    def _assistant_item(self, item: dict[str, Any], where: str, at: float | None) -> None:
        kind = item.get("type")
        if kind == "reasoning":
            # Read as the Responses codec reads it: summary text as unsigned thinking, the item itself
            # (its encrypted_content with it) kept verbatim for the Responses renderer.
            turn = assistant_turn([item])
            self.builder.assistant(
                thinking=[b for b in turn.thinking if b.text],
                opaque=turn.opaque,
                model=self.model,
                key=self._key(),
                at=at,
            )
            return
        if kind in SERVER_ITEMS:
            # The wire layer keeps the item verbatim so the Responses renderer sends it back.
            turn = assistant_turn([item])
            self.builder.assistant(opaque=turn.opaque, model=self.model, key=self._key(), at=at)
            return
        call_id = item.get("call_id") or item.get("id")
        if not isinstance(call_id, str) or not call_id:
            raise fail(self.source, f"{where}.call_id", "a tool call needs a call_id")
        if kind == "tool_search_call":
            raw = item.get("arguments")
            arguments = raw if isinstance(raw, dict) else parse_arguments(raw)
            call = ToolCall(id=call_id, name="tool_search", arguments=arguments)
        elif kind == "function_call":
            call = ToolCall(
                id=call_id, name=str(item.get("name") or ""), arguments=parse_arguments(item.get("arguments"))
            )
        elif kind == "custom_tool_call":
            call = ToolCall(
                id=call_id,
                name=str(item.get("name") or ""),
                arguments={"input": str(item.get("input") or "")},
            )
        else:
            action = item.get("action")
            call = ToolCall(id=call_id, name="local_shell", arguments=action if isinstance(action, dict) else {})
        self.builder.assistant(tool_calls=[call], model=self.model, key=self._key(), at=at)

    def _output(self, item: dict[str, Any], where: str, at: float | None) -> None:
        call_id = opt_str(item, "call_id", self.source, where) or opt_str(item, "id", self.source, where)
        if item.get("type") == "tool_search_output":
            tools = item.get("tools")
            text = json.dumps(tools if isinstance(tools, list) else [], ensure_ascii=False, separators=(",", ":"))
            failed = item.get("status") not in (None, "completed")
            self.builder.tool_result(call_id, text, is_error=failed, where=where, at=at)
            return
        output = item.get("output")
        success: Any = None
        parts: list[BinaryPart] = []
        if isinstance(output, dict):
            success = output.get("success")
            output = output.get("content")
        if isinstance(output, list):
            text, parts = content_text(output)
        elif isinstance(output, str):
            text = output
        elif output is None:
            text = ""
        else:
            raise fail(self.source, f"{where}.output", "expected a string or an array of content items")
        exit_code = exit_code_of(text)
        is_error = success is False or (exit_code is not None and exit_code != 0)
        self.builder.tool_result(call_id, text, is_error=is_error, exit_code=exit_code, parts=parts, where=where, at=at)


__all__ = ["ITEM_TYPES", "load"]
