"""Read a Gemini ``generateContent`` request body into request messages.

- ``systemInstruction.parts`` text: one instruction per part.
- ``model`` contents: ``text`` parts join into the message text, ``functionCall`` parts become tool
  calls (a call without an ``id`` gets ``gemini-call-<content>-<n>``, from its place in the body),
  a ``thoughtSignature`` becomes a signature-only thinking block and a thought part
  (``thought: true``) a thinking block with its text and signature; any other part
  (``executableCode``, ``fileData``, types newer than this code) is kept as an
  :class:`~contextwarden.log.events.OpaquePart` at its position.
- ``user`` contents: each ``functionResponse`` part becomes a ``tool`` message answering the model's
  call of that name, in order (Gemini pairs by name and order); its ``response.output`` (or
  ``response.error``, marked as an error) is the text, any other response object its JSON. ``text``
  parts join into one user message, ``inlineData`` parts become its binary parts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ...context import Message
from ...errors import ImportFormatError
from ...log.events import BinaryPart, Instruction, OpaquePart, ThinkingBlock, ToolCall
from .._codec import ToolEntry, function_tool, provider_tool
from .._common import arguments_object, dumps_compact, from_b64
from .._messages import SYSTEM_FIELD
from .._types import RawSpan

__all__ = ["model_content", "parse_contents", "parse_system", "tool_entries"]

_FORMAT = "gemini"


def parse_system(system: object, spans: list[RawSpan] | None = None) -> tuple[Instruction, ...]:
    """The instructions of a ``systemInstruction`` content (one per text part; ``spans``: where each came from)."""
    parts = system.get("parts") if isinstance(system, Mapping) else None
    out: list[Instruction] = []
    for index, part in enumerate(parts if isinstance(parts, list) else ()):
        if isinstance(part, Mapping) and isinstance(part.get("text"), str):
            out.append(Instruction(text=str(part["text"]), source=SYSTEM_FIELD))
            if spans is not None:
                spans.append(RawSpan(f"systemInstruction.parts[{index}]", (part,)))
    return tuple(out)


def tool_entries(tool: Mapping[str, Any]) -> list[ToolEntry]:
    """The definitions of one ``tools`` entry: one per function declaration, or the tool verbatim (``googleSearch``)."""
    declarations = tool.get("functionDeclarations")
    if set(tool) == {"functionDeclarations"} and isinstance(declarations, list):
        return [
            (f".functionDeclarations[{number}]", declaration, function_tool(declaration))
            for number, declaration in enumerate(declarations)
            if isinstance(declaration, Mapping)
        ]
    return [("", tool, provider_tool(next(iter(tool), ""), _FORMAT, tool))]


def parse_contents(contents: object, spans: list[RawSpan] | None = None) -> list[Message]:
    """The request messages of a ``contents`` list (raises :class:`ImportFormatError` when it is none).

    ``spans``, when given, gets one :class:`RawSpan` per message: a whole model content, each
    ``functionResponse`` part, and a user content's other parts together.
    """
    if not isinstance(contents, list):
        raise ImportFormatError("Gemini request body has no 'contents' list")
    out: list[Message] = []
    calls: list[ToolCall] = []
    for index, raw in enumerate(contents):
        if not isinstance(raw, Mapping) or not isinstance(raw.get("parts"), list):
            raise ImportFormatError(f"contents[{index}] is not an object with a 'parts' list")
        parts = [p for p in raw["parts"] if isinstance(p, Mapping)]
        if raw.get("role") == "model":
            message = model_content(parts, f"gemini-call-{index}")
            calls = list(message.tool_calls)
            out.append(message)
            if spans is not None:
                spans.append(RawSpan(f"contents[{index}]", (raw,)))
        else:
            out.extend(_user(parts, calls, spans, f"contents[{index}]", raw))
    return out


def model_content(parts: Sequence[Mapping[str, Any]], id_prefix: str) -> Message:
    """The assistant message of a model content's parts (a request turn or a response candidate)."""
    texts: list[str] = []
    thinking: list[ThinkingBlock] = []
    calls: list[ToolCall] = []
    opaque: list[OpaquePart] = []
    for position, part in enumerate(parts):
        signature = part.get("thoughtSignature")
        known = set(part) - {"thoughtSignature"}
        if part.get("thought"):
            thinking.append(ThinkingBlock(text=str(part.get("text", "")), signature=str(signature or "")))
            continue
        if known == {"text"}:
            texts.append(str(part["text"]))
        elif known == {"functionCall"} and isinstance(part["functionCall"], Mapping):
            call = part["functionCall"]
            calls.append(
                ToolCall(
                    id=str(call.get("id") or f"{id_prefix}-{len(calls)}"),
                    name=str(call.get("name", "")),
                    arguments=arguments_object(call.get("args")),
                )
            )
        else:
            opaque.append(
                OpaquePart(
                    format=_FORMAT, raw_json=dumps_compact(dict(part)), position=position, kind=next(iter(known), "")
                )
            )
            continue
        if isinstance(signature, str) and signature:
            thinking.append(ThinkingBlock(text="", signature=signature))
    return Message(
        role="assistant", text="".join(texts), thinking=tuple(thinking), tool_calls=tuple(calls), opaque=tuple(opaque)
    )


def _user(
    parts: list[Mapping[str, Any]], calls: list[ToolCall], spans: list[RawSpan] | None, path: str, whole: object
) -> list[Message]:
    out: list[Message] = []
    texts: list[str] = []
    binary: list[BinaryPart] = []
    opaque: list[OpaquePart] = []
    rest: list[Mapping[str, Any]] = []
    position = 0
    for index, part in enumerate(parts):
        response = part.get("functionResponse")
        if isinstance(response, Mapping):
            out.append(_result(response, calls))
            if spans is not None:
                spans.append(RawSpan(f"{path}.parts[{index}]", (part,)))
            continue
        rest.append(part)
        data = part.get("inlineData")
        decoded = None
        if isinstance(data, Mapping) and set(part) == {"inlineData"}:
            decoded = from_b64(str(data.get("mimeType", "")), str(data.get("data", "")))
        if set(part) == {"text"}:
            texts.append(str(part["text"]))
        elif decoded is not None:
            binary.append(decoded)
        else:
            opaque.append(
                OpaquePart(
                    format=_FORMAT, raw_json=dumps_compact(dict(part)), position=position, kind=next(iter(part), "")
                )
            )
        position += 1
    if texts or binary or opaque:
        out.append(Message(role="user", text="\n\n".join(texts), parts=tuple(binary), opaque=tuple(opaque)))
        if spans is not None:  # the parts that are no results, as one item
            spans.append(RawSpan(path, (whole,)) if len(rest) == len(parts) else RawSpan(f"{path}.parts", tuple(rest)))
    return out


def _result(response: Mapping[str, Any], calls: list[ToolCall]) -> Message:
    name = str(response.get("name", ""))
    call = next((c for c in calls if c.name == name), None)
    if call is not None:
        calls.remove(call)  # the next response of that name answers the next call
    body = response.get("response")
    body = body if isinstance(body, Mapping) else {}
    is_error = set(body) == {"error"}
    value = body.get("error" if is_error else "output", body if set(body) - {"output"} else "")
    text = value if isinstance(value, str) else dumps_compact(value)
    call_id = call.id if call is not None else str(response.get("id", ""))
    return Message(
        role="tool", text=text, tool_call_id=call_id, tool_name=name, is_error=is_error, section="tool_output"
    )
