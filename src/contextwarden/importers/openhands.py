"""OpenHands event streams: a JSON list of action and observation events (or ``{"events": [...]}``).

This is the V0 format (``openhands/events``); a stream of the SDK's ``kind`` events (V1,
``openhands-sdk``) is read by :mod:`.openhands_sdk`. Both may also be JSON Lines.

The mapping follows what OpenHands' ``ConversationMemory`` sends to the model:

- ``action: system`` → :class:`Instruction`; ``action: message`` → :class:`UserMessage` (source
  ``user``; image URLs → :class:`BinaryPart` or an ``[image: URL]`` marker) or :class:`AssistantMessage`
  (source ``agent``).
- An agent action with ``tool_call_metadata`` (``run``, ``edit``, ``read``, ``think``, ``browse``...) →
  the model response recorded in ``model_response``: one :class:`AssistantMessage` per response id with
  its text, reasoning and every tool call, and its ``usage`` → :class:`UsageReport` right after it. When
  ``model_response`` was stripped, the call is rebuilt from ``function_name``, ``tool_call_id`` and the
  action's arguments.
- ``action: finish`` → an :class:`AssistantMessage` with the final thought (OpenHands drops the finish
  tool call from later prompts; nothing answers it).
- An observation with ``tool_call_metadata`` → :class:`ToolResult` for ``tool_call_id``: ``run`` as
  ``prefix + content + suffix`` plus the working-directory and exit-code lines, with ``exit_code`` and
  ``is_error`` from ``extras.metadata``/``success``; ``edit`` as ``formatted_output_and_error`` when
  present; ``error`` with OpenHands' trailing marker and ``is_error``; others as their ``content``.
- ``action: condensation`` → :class:`Compaction` with its summary (``details.provider_side = true``).
- State changes, ``null`` observations, recalls and other events without a model-visible part are
  skipped and counted in ``metadata["skipped"]``.
"""

from __future__ import annotations

from typing import Any

from ..log.events import BinaryPart, JSONValue, ThinkingBlock, ToolCall
from ..wire.usage import openai_chat_usage
from ._builder import TranscriptBuilder
from ._common import (
    Transcript,
    as_dict,
    as_list,
    binary_from_data_url,
    fail,
    openai_tool_calls,
    parse_arguments,
    parse_timestamp,
)
from ._source import ImportOptions, SourceDocument
from .openhands_sdk import is_sdk_event, read_sdk_events

# Argument keys OpenHands adds to actions for its own bookkeeping; the model never produced them.
_INTERNAL_ARGS = frozenset(
    {
        "thought",
        "impl_source",
        "translated_ipython_code",
        "confirmation_state",
        "security_risk",
        "hidden",
        "blocking",
        "is_input",
        "is_confirmed",
        "image_urls",
        "wait_for_response",
    }
)


def load(doc: SourceDocument, options: ImportOptions) -> Transcript:
    """Read an OpenHands event stream: the V0 action/observation format, or the SDK's ``kind`` events."""
    events, prefix = _event_list(doc)
    builder = TranscriptBuilder(source=doc.path, format=options.format)
    records = [as_dict(raw, doc.path, f"{prefix}[{index}]") for index, raw in enumerate(events)]
    places = [f"{prefix}[{index}]" for index in range(len(records))]
    if any(is_sdk_event(r) for r in records):
        builder.metadata["variant"] = "sdk"
        read_sdk_events(records, builder, places)
        return builder.build()
    reader = _Reader(builder, doc.path)
    for record, place in zip(records, places, strict=True):
        reader.read(record, place)
    return builder.build()


def _event_list(doc: SourceDocument) -> tuple[list[Any], str]:
    if doc.is_jsonl:
        return [record for _, record in doc.lines], "$"
    document = doc.document
    if isinstance(document, dict):
        return as_list(document.get("events"), doc.path, "$.events"), "$.events"
    return as_list(document, doc.path, "$"), "$"


class _Reader:
    def __init__(self, builder: TranscriptBuilder, source: str) -> None:
        self.builder = builder
        self.source = source
        self.responses: set[str] = set()

    def read(self, event: dict[str, Any], where: str) -> None:
        at = parse_timestamp(event.get("timestamp"))
        if isinstance(event.get("action"), str):
            self._action(event, where, at)
        elif isinstance(event.get("observation"), str):
            self._observation(event, where, at)
        else:
            self.builder.unknown("event without action or observation")

    # -- actions

    def _action(self, event: dict[str, Any], where: str, at: float | None) -> None:
        action = event["action"]
        args = event.get("args")
        args = args if isinstance(args, dict) else {}
        metadata = event.get("tool_call_metadata")
        if action == "system":
            self.builder.instruction(str(args.get("content") or event.get("message") or ""), source="openhands system")
        elif action == "message":
            self._message(event, args, at)
        elif action == "finish":
            self._finish(event, args, metadata, at)
        elif action == "condensation":
            summary = args.get("summary")
            details: dict[str, JSONValue] = {"provider_side": True}
            for key in ("forgotten_event_ids", "forgotten_events_start_id", "forgotten_events_end_id"):
                if args.get(key) is not None:
                    details[key] = args[key]
            self.builder.compaction(summary if isinstance(summary, str) else "", details=details, at=at)
        elif isinstance(metadata, dict) and event.get("source") == "agent":
            self._tool_action(event, args, metadata, where, at)
        elif action == "run" and event.get("source") == "user":
            self.builder.user(f"User executed the command:\n{args.get('command', '')}", at=at)
        else:
            self.builder.skip(f"action:{action}")

    def _message(self, event: dict[str, Any], args: dict[str, Any], at: float | None) -> None:
        text = args.get("content")
        text = text if isinstance(text, str) else str(event.get("message") or "")
        if event.get("source") == "user":
            texts = [text]
            parts: list[BinaryPart] = []
            for url in args.get("image_urls") or []:
                part = binary_from_data_url(url) if isinstance(url, str) else None
                if part is not None:
                    parts.append(part)
                elif isinstance(url, str) and url:
                    texts.append(f"[image: {url}]")
            self.builder.user("\n".join(texts), parts=parts, at=at)
        else:
            self.builder.assistant(text=text, at=at)

    def _finish(self, event: dict[str, Any], args: dict[str, Any], metadata: Any, at: float | None) -> None:
        response = _model_response(metadata)
        text = args.get("final_thought") or args.get("thought") or event.get("message") or ""
        content = _response_message(response).get("content")
        if isinstance(content, str) and content and content not in text:
            text = f"{text}\n{content}" if text else content
        self.builder.assistant(text=str(text), model=str(response.get("model") or ""), at=at)
        self._usage(response, key=None)

    def _tool_action(
        self,
        event: dict[str, Any],
        args: dict[str, Any],
        metadata: dict[str, Any],
        where: str,
        at: float | None,
    ) -> None:
        response = _model_response(metadata)
        response_id = response.get("id")
        if isinstance(response_id, str) and response_id:
            key = f"response:{response_id}"
            if response_id in self.responses:
                return  # the response's text and every call were taken from its first action
            self.responses.add(response_id)
            message = _response_message(response)
            calls = openai_tool_calls(
                message.get("tool_calls"),
                self.source,
                f"{where}.tool_call_metadata.model_response.choices[0].message",
            )
            reasoning = message.get("reasoning_content")
            thinking = [ThinkingBlock(text=reasoning)] if isinstance(reasoning, str) and reasoning else []
            content = message.get("content")
            self.builder.assistant(
                text=content if isinstance(content, str) else "",
                thinking=thinking,
                tool_calls=calls,
                model=str(response.get("model") or ""),
                key=key,
                at=at,
            )
            self._usage(response, key=key)
            return
        call_id = metadata.get("tool_call_id")
        if not isinstance(call_id, str) or not call_id:
            raise fail(self.source, f"{where}.tool_call_metadata.tool_call_id", "expected the tool call id")
        arguments = parse_arguments({k: v for k, v in args.items() if k not in _INTERNAL_ARGS})
        call = ToolCall(id=call_id, name=str(metadata.get("function_name") or event["action"]), arguments=arguments)
        self.builder.assistant(text=str(args.get("thought") or ""), tool_calls=[call], at=at)

    def _usage(self, response: dict[str, Any], *, key: str | None) -> None:
        usage = openai_chat_usage(response.get("usage"))
        if usage is not None:
            model = str(response.get("model") or "")
            if model:
                self.builder.metadata.setdefault("model", model)
            self.builder.usage(usage, model=model, request_id=str(response.get("id") or ""), key=key)

    # -- observations

    def _observation(self, event: dict[str, Any], where: str, at: float | None) -> None:
        kind = event["observation"]
        metadata = event.get("tool_call_metadata")
        extras = event.get("extras")
        extras = extras if isinstance(extras, dict) else {}
        content = event.get("content")
        content = content if isinstance(content, str) else ""
        if not isinstance(metadata, dict):
            if kind == "run" and event.get("source") == "user":
                text = f"\nObserved result of command executed by user:\n{_command_output(content, extras)}"
                self.builder.user(text, at=at)
            else:
                self.builder.skip(f"observation:{kind}")
            return
        call_id = metadata.get("tool_call_id")
        if not isinstance(call_id, str):
            raise fail(self.source, f"{where}.tool_call_metadata.tool_call_id", "expected the tool call id")
        exit_code: int | None = None
        is_error = False
        if kind == "run":
            run_meta = extras.get("metadata")
            code = run_meta.get("exit_code") if isinstance(run_meta, dict) else None
            exit_code = code if isinstance(code, int) and not isinstance(code, bool) else None
            success = event.get("success")
            is_error = (success is False) if isinstance(success, bool) else (exit_code not in (None, 0))
            text = _command_output(content, extras)
        elif kind == "edit" and isinstance(extras.get("formatted_output_and_error"), str):
            text = extras["formatted_output_and_error"]
        elif kind == "error":
            text, is_error = content + "\n[Error occurred in processing last action]", True
        elif kind == "user_rejected":
            text = f"OBSERVATION:\n{content}\n[Last action has been rejected by the user]"
        else:
            text = content
        self.builder.tool_result(call_id, text, is_error=is_error, exit_code=exit_code, where=where, at=at)


def _model_response(metadata: Any) -> dict[str, Any]:
    response = metadata.get("model_response") if isinstance(metadata, dict) else None
    return response if isinstance(response, dict) else {}


def _response_message(response: dict[str, Any]) -> dict[str, Any]:
    choices = response.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        message = choices[0].get("message")
        if isinstance(message, dict):
            return message
    return {}


def _command_output(content: str, extras: dict[str, Any]) -> str:
    """Render a command observation as the agent saw it (OpenHands' ``to_agent_observation``)."""
    meta = extras.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    text = f"{meta.get('prefix') or ''}{content}{meta.get('suffix') or ''}"
    if meta.get("working_dir"):
        text += f"\n[Current working directory: {meta['working_dir']}]"
    if meta.get("py_interpreter_path"):
        text += f"\n[Python interpreter: {meta['py_interpreter_path']}]"
    code = meta.get("exit_code")
    if isinstance(code, int) and code != -1:
        text += f"\n[Command finished with exit code {code}]"
    return text
