"""Render a :class:`~contextwarden.context.ModelContext` as a Gemini ``generateContent`` request body.

The model goes in the URL (``models/{model}:generateContent``), so the body has no ``model`` field.

- Roles are ``user`` and ``model``; consecutive messages of the same role share one content, so the
  ``functionResponse`` parts answering parallel calls sit together in one user content, in call order.
- A tool result is ``{"output": text}``, or ``{"error": text}`` when the tool failed; its images follow
  as ``inlineData`` parts of the same content.
- Call ids are not sent: Gemini pairs responses to calls by name and order, and ids made by other
  providers (or synthesized by the parser) would mean nothing to it.
- Thought signatures are replayed the way Gemini 3 requires: the first signature of a model message on
  its first ``functionCall`` part, or on its last text part when it made no call. Thought text is not
  sent back. OpenAI Responses signatures are never sent.
- System and developer messages before the conversation join ``systemInstruction``; later ones are user
  text.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...context import Message, ModelContext
from ...pairing import normalize_pairing
from .._common import (
    REDACTED_PREFIX,
    arguments_payload,
    b64,
    clean_text,
    is_foreign_to_anthropic_or_gemini,
    join_text,
    own_tools,
    split_parts,
    with_opaque,
)
from .._render_args import OPENING_TEXT, finish, function_spec

__all__ = ["render_gemini"]

_OWN_FIELDS = frozenset({"systemInstruction", "contents", "tools"})
_FORMAT = "gemini"


def render_gemini(
    ctx: ModelContext,
    *,
    model: str | None = None,
    max_tokens: int | None = None,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Return ``{"systemInstruction"?, "contents", "tools"?, "generationConfig"?}`` for ``generateContent``.

    ``model`` is not part of the body (it goes in the URL) and is accepted for a uniform call.
    ``max_tokens`` is sent as ``generationConfig.maxOutputTokens``; ``extra`` adds settings, its
    ``generationConfig`` merged with that limit.
    """
    del model  # the URL names it
    messages, _ = normalize_pairing(ctx.messages)
    system: list[dict[str, Any]] = [{"text": clean_text(ctx.system)}] if ctx.system else []
    contents: list[dict[str, Any]] = []
    names: dict[str, str] = {}
    leading = True
    for message in messages:
        if leading and message.role in ("system", "developer"):
            text = join_text(message.text, split_parts(message.parts)[1])
            if text:
                system.append({"text": text})
            continue
        leading = False
        role = "model" if message.role == "assistant" else "user"
        if role == "model":
            names = {call.id: call.name for call in message.tool_calls}
            parts = _model_parts(message)
        else:
            parts = _user_parts(message, names.get(message.tool_call_id, ""))
        if not parts:
            continue
        if not contents or contents[-1]["role"] != role:
            contents.append({"role": role, "parts": []})
        _add_parts(contents[-1]["parts"], parts)
    body: dict[str, Any] = {}
    if system:
        body["systemInstruction"] = {"parts": system}
    if not contents or contents[0]["role"] != "user":
        contents.insert(0, {"role": "user", "parts": [{"text": OPENING_TEXT}]})
    body["contents"] = contents
    settings = dict(extra or {})
    config = dict(settings.pop("generationConfig", None) or {})
    if max_tokens is not None:
        config["maxOutputTokens"] = max_tokens
    if config:
        settings["generationConfig"] = config
    return finish(body, settings, protected=_OWN_FIELDS, tools=_tools(ctx))


def _tools(ctx: ModelContext) -> list[dict[str, Any]]:
    # Every function tool is one declaration of a single ``functionDeclarations`` tool.
    functions, provided = own_tools(ctx.tools, _FORMAT)
    declarations = [function_spec(tool, empty_schema=False) for tool in functions]
    return [{"functionDeclarations": declarations}, *provided] if declarations else provided


def _add_parts(into: list[dict[str, Any]], parts: list[dict[str, Any]]) -> None:
    # The responses to parallel calls must stay together at the start of the content, so a result's
    # images (and any text) go after every functionResponse.
    responses = sum(1 for part in into if "functionResponse" in part)
    for part in parts:
        if "functionResponse" in part:
            into.insert(responses, part)
            responses += 1
        else:
            into.append(part)


def _user_parts(message: Message, call_name: str) -> list[dict[str, Any]]:
    images, notes = split_parts(message.parts)
    text = join_text(message.text, notes)
    parts: list[dict[str, Any]] = []
    if message.role == "tool":
        key = "error" if message.is_error else "output"
        # The response must name the function; the call's own name is the one Gemini checks.
        name = call_name or message.tool_name
        parts.append({"functionResponse": {"name": name, "response": {key: text}}})
    elif text:
        parts.append({"text": text})
    parts.extend({"inlineData": {"mimeType": image.media_type, "data": b64(image.data)}} for image in images)
    return with_opaque(parts, message.opaque, _FORMAT) if message.role != "tool" else parts


def _model_parts(message: Message) -> list[dict[str, Any]]:
    text = join_text(message.text, split_parts(message.parts)[1])
    parts: list[dict[str, Any]] = [{"text": text}] if text else []
    parts.extend({"functionCall": {"name": call.name, "args": arguments_payload(call)}} for call in message.tool_calls)
    signature = next(
        (
            block.signature
            for block in message.thinking
            if block.signature
            and not block.signature.startswith(REDACTED_PREFIX)
            and not is_foreign_to_anthropic_or_gemini(block.signature)
        ),
        "",
    )
    if signature and parts:
        target = parts[len(parts) - len(message.tool_calls)] if message.tool_calls else parts[-1]
        target["thoughtSignature"] = signature
    return with_opaque(parts, message.opaque, _FORMAT)
