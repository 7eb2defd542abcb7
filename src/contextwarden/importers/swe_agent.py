"""SWE-agent ``.traj`` files and mini-swe-agent trajectory JSON.

**SWE-agent** (``{"environment", "trajectory", "history", "info"}``): ``history`` is read, because it
holds the messages as the model saw them (``trajectory`` holds the same steps as thought, action and
observation, and the final observation the model never saw).

- ``system`` → :class:`Instruction`. A ``user`` message with ``is_demo`` (the demonstration SWE-agent
  shows before the task) → :class:`Instruction` with ``source="swe-agent demonstration"``, so the first
  :class:`UserMessage` is the task itself.
- Function-calling trajectories: ``assistant`` content and ``tool_calls`` → :class:`AssistantMessage`
  with those calls; ``tool`` messages (``tool_call_ids``) → :class:`ToolResult`.
- Text-action trajectories (the action is a command inside the reply, the observation comes back as a
  ``user`` message): the assistant's ``thought`` becomes the message text and its ``action`` a synthesized
  tool call with the stable id ``call-<step>`` (step = 1-based index of the assistant message), named
  after the command word (``open``, ``edit``, ``python``, ``submit``...) with ``{"command": action}`` as
  arguments; the ``user`` message that answers it → :class:`ToolResult`. A user message that follows an
  assistant message without an action stays a :class:`UserMessage`. The last action (usually ``submit``)
  has no result: the model never saw one.
- ``info.model_stats`` (tokens sent and received, API calls, cost) holds run totals only, so it goes to
  ``metadata["usage_totals"]`` and no per-call :class:`UsageReport` is invented.

**mini-swe-agent** (``{"info", "messages", "trajectory_format"}``): messages are OpenAI Chat messages
with an ``extra`` field. In text mode the command is the fenced ``bash`` / ``mswea_bash_command`` block
(or ``extra.actions``); it becomes a ``bash`` tool call ``call-<step>`` with ``{"command": ...}`` and the
block is removed from the text, the next ``user`` message (``<returncode>N</returncode>...``) is its
:class:`ToolResult` with that exit code. Tool-call models' ``tool_calls`` and ``tool`` messages are
read as they are. ``extra.response.usage`` gives a per-call :class:`UsageReport`.
"""

from __future__ import annotations

import re
from typing import Any

from ..log.events import ToolCall
from ..wire.usage import int_field, openai_chat_usage
from ._builder import TranscriptBuilder
from ._common import (
    Transcript,
    as_dict,
    as_list,
    openai_content,
    openai_tool_calls,
    opt_str,
    parse_timestamp,
)
from ._source import ImportOptions, SourceDocument

_COMMAND_WORD = re.compile(r"[A-Za-z0-9_.+/-]+")
_FENCE = re.compile(r"```(?:bash|mswea_bash_command|sh)[ \t]*\n(.*?)\n?```", re.DOTALL)
_RETURN_CODE = re.compile(r"<returncode>(-?\d+)</returncode>")


def load(doc: SourceDocument, options: ImportOptions) -> Transcript:
    """Read a SWE-agent ``.traj`` or a mini-swe-agent trajectory, as ``options.format`` says."""
    root = as_dict(doc.document, doc.path, "$")
    builder = TranscriptBuilder(source=doc.path, format=options.format)
    info = root.get("info")
    info = info if isinstance(info, dict) else {}
    _info_metadata(info, builder)
    if options.format == "mini-swe-agent":
        _MiniReader(builder, doc.path).read(as_list(root.get("messages"), doc.path, "$.messages"))
    else:
        _SweReader(builder, doc.path).read(as_list(root.get("history"), doc.path, "$.history"))
    return builder.build()


def _info_metadata(info: dict[str, Any], builder: TranscriptBuilder) -> None:
    for key in ("exit_status", "mini_version", "swe_agent_version"):
        if isinstance(info.get(key), str):
            builder.metadata[key] = info[key]
    stats = info.get("model_stats")
    if not isinstance(stats, dict):
        return
    # Runs replayed or run without a live model record zeros; zeros are not usage.
    totals: dict[str, Any] = {}
    if int_field(stats.get("tokens_sent")):
        totals["input_tokens"] = int_field(stats.get("tokens_sent"))
        totals["output_tokens"] = int_field(stats.get("tokens_received"))
    if int_field(stats.get("api_calls")):
        totals["api_calls"] = int_field(stats.get("api_calls"))
    cost = stats.get("instance_cost")
    if isinstance(cost, (int, float)) and not isinstance(cost, bool) and cost > 0:
        totals["cost_usd"] = float(cost)
    if totals:
        builder.metadata["usage_totals"] = totals


def command_word(action: str) -> str:
    """Name the tool of a text action after its first word (``edit 15:15`` → ``edit``), ``bash`` if none."""
    first = action.strip().split(maxsplit=1)
    match = _COMMAND_WORD.match(first[0]) if first else None
    return match.group(0) if match else "bash"


class _SweReader:
    def __init__(self, builder: TranscriptBuilder, source: str) -> None:
        self.builder = builder
        self.source = source
        self.pending: str | None = None
        self.step = 0

    def read(self, history: list[Any]) -> None:
        for index, raw in enumerate(history):
            where = f"$.history[{index}]"
            message = as_dict(raw, self.source, where)
            role = opt_str(message, "role", self.source, where)
            text, parts = openai_content(message.get("content"), self.source, where)
            if role == "system":
                self.builder.instruction(text, source="swe-agent system prompt")
            elif role == "assistant":
                self._assistant(message, text, where)
            elif role == "tool":
                self._tool(message, text, where)
            elif role == "user" and message.get("is_demo"):
                self.builder.instruction(text, source="swe-agent demonstration")
            elif role == "user" and self.pending is not None:
                self.builder.tool_result(self.pending, text, parts=parts, where=where)
                self.pending = None
            elif role == "user":
                self.builder.user(text, parts=parts)
            else:
                self.builder.unknown(f"role:{role}")

    def _assistant(self, message: dict[str, Any], text: str, where: str) -> None:
        self.step += 1
        self.pending = None
        calls = openai_tool_calls(message.get("tool_calls"), self.source, where)
        action = message.get("action")
        if not calls and isinstance(action, str) and action.strip():
            thought = message.get("thought")
            text = thought if isinstance(thought, str) else text
            call_id = f"call-{self.step}"
            command = action.strip()
            calls = [ToolCall(id=call_id, name=command_word(command), arguments={"command": command})]
            self.pending = call_id
        self.builder.assistant(text=text, tool_calls=calls)

    def _tool(self, message: dict[str, Any], text: str, where: str) -> None:
        ids = message.get("tool_call_ids")
        if not isinstance(ids, list):
            single = message.get("tool_call_id")
            ids = [single] if isinstance(single, str) else []
        if not ids:
            self.builder.warn(f"dropped a tool message without a call id at {where}")
        # One observation answers the step; further ids of the same step get an empty result.
        for position, call_id in enumerate(i for i in ids if isinstance(i, str)):
            self.builder.tool_result(call_id, text if position == 0 else "", where=where)


class _MiniReader:
    def __init__(self, builder: TranscriptBuilder, source: str) -> None:
        self.builder = builder
        self.source = source
        self.pending: str | None = None
        self.step = 0

    def read(self, messages: list[Any]) -> None:
        for index, raw in enumerate(messages):
            where = f"$.messages[{index}]"
            message = as_dict(raw, self.source, where)
            role = opt_str(message, "role", self.source, where)
            extra = message.get("extra")
            extra = extra if isinstance(extra, dict) else {}
            text, parts = openai_content(message.get("content"), self.source, where)
            at = parse_timestamp(extra.get("timestamp"))
            if role == "exit" or (role == "user" and not text and "exit_status" in extra):
                self.builder.skip("exit")
            elif role == "system":
                self.builder.instruction(text, source="mini-swe-agent system prompt", at=at)
            elif role == "assistant":
                self._assistant(message, extra, text, where, at)
            elif role == "tool":
                call_id = opt_str(message, "tool_call_id", self.source, where)
                self._result(call_id, text, extra, where, at)
            elif role == "user" and self.pending is not None:
                self._result(self.pending, text, extra, where, at)
                self.pending = None
            elif role == "user":
                self.builder.user(text, parts=parts, at=at)
            else:
                self.builder.unknown(f"role:{role}")

    def _assistant(
        self, message: dict[str, Any], extra: dict[str, Any], text: str, where: str, at: float | None
    ) -> None:
        self.step += 1
        self.pending = None
        calls = openai_tool_calls(message.get("tool_calls"), self.source, where)
        if not calls:
            commands = [
                a["command"]
                for a in extra.get("actions") or []
                if isinstance(a, dict) and isinstance(a.get("command"), str)
            ]
            fenced = list(_FENCE.finditer(text))
            if not commands:
                commands = [m.group(1) for m in fenced]
            if commands:
                # The command travels as the tool call, so the fenced copy leaves the text.
                for match in reversed(fenced):
                    text = text[: match.start()] + text[match.end() :]
                text = text.strip()
                calls = [
                    ToolCall(
                        id=f"call-{self.step}" + (f"-{n + 1}" if n else ""),
                        name="bash",
                        arguments={"command": c},
                    )
                    for n, c in enumerate(commands)
                ]
                self.pending = calls[0].id
        response = extra.get("response")
        response = response if isinstance(response, dict) else {}
        model = str(response.get("model") or "")
        self.builder.assistant(text=text, tool_calls=calls, model=model, at=at)
        usage = openai_chat_usage(response.get("usage"))
        if usage is not None:
            self.builder.usage(usage, model=model, request_id=str(response.get("id") or ""))

    def _result(self, call_id: str, text: str, extra: dict[str, Any], where: str, at: float | None) -> None:
        code = extra.get("returncode")
        if not isinstance(code, int):
            match = _RETURN_CODE.search(text[:200])
            code = int(match.group(1)) if match else None
        self.builder.tool_result(
            call_id, text, is_error=code is not None and code != 0, exit_code=code, where=where, at=at
        )
