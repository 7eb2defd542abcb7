"""The Gemini API at the proxy's edge: ``POST /{version}/models/{model}:{method}``.

``generateContent`` and ``streamGenerateContent`` go through the same pipeline as the other formats;
only the path names the model, and a stream is server-sent events only when the client asks for
``alt=sse`` (without it the API streams one JSON array, which the proxy reads whole before passing
it on). ``countTokens`` counts what ``generateContent`` would forward. Every other method, and a
path of no known API version, passes through untouched. The caller's credential is its
``x-goog-api-key`` header, else the ``key`` query parameter.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from ..log.events import AssistantMessage

VERSIONS = frozenset({"v1beta", "v1", "v1alpha"})
"""API versions whose model methods the proxy reads."""

MODEL_METHODS = frozenset({"generateContent", "streamGenerateContent"})
"""Methods that are model calls (projected, forwarded, recorded)."""

COUNT_METHOD = "countTokens"


@dataclass(frozen=True)
class GeminiCall:
    """What a Gemini path and query say about a request (its body names neither)."""

    model: str
    """The model the path names (``gemini-2.5-pro``)."""
    method: str
    """``generateContent``, ``streamGenerateContent`` or ``countTokens``."""
    stream: bool
    """Whether the answer comes as server-sent events (``streamGenerateContent?alt=sse``)."""
    key: str
    """The ``key`` query parameter (empty when the credential travels in a header)."""


def gemini_call(version: str, target: str, query: Mapping[str, str]) -> GeminiCall | None:
    """The call ``/{version}/models/{target}`` makes, or ``None`` when the proxy only passes it through."""
    model, _, method = target.rpartition(":")
    if version not in VERSIONS or not model or method not in (*MODEL_METHODS, COUNT_METHOD):
        return None
    stream = method == "streamGenerateContent" and query.get("alt", "") == "sse"
    return GeminiCall(model=model, method=method, stream=stream, key=query.get("key", ""))


def counted(raw: bytes, count: Callable[[bytes], bytes]) -> bytes:
    """A ``countTokens`` body with its request replaced by ``count`` of it (what would be forwarded).

    The request is either the body itself (``contents``) or its ``generateContentRequest``; the
    latter holds the system instruction and tools, so only it can be matched to a session. A body
    of any other shape is returned as sent.
    """
    body = json.loads(raw)
    if not isinstance(body, dict):
        return raw
    inner = body.get("generateContentRequest")
    if set(body) == {"generateContentRequest"} and isinstance(inner, dict):
        own = json.dumps(inner, separators=(",", ":"), ensure_ascii=False).encode()
        return b'{"generateContentRequest":' + count(own) + b"}"
    if set(body) == {"contents"}:
        return count(raw)
    return raw


def stream_finished(data: Mapping[str, object]) -> bool:
    """Whether one streamed chunk ends the answer (its candidate carries a ``finishReason``)."""
    candidates = data.get("candidates")
    if not isinstance(candidates, list):
        return False
    return any(isinstance(c, Mapping) and c.get("finishReason") for c in candidates)


SKIP_SIGNATURE = "skip_thought_signature_validator"
"""What a client sends where the model gave no signature (Google's documented stand-in): no signature."""


def reading_copy(body: Mapping[str, Any]) -> Mapping[str, Any]:
    """``body`` as the proxy reads it for the log: what clients add to or drop from an echoed model turn removed.

    A Gemini model turn comes back from a client changed: Gemini CLI adds an ``id`` to each
    ``functionCall`` the model sent without one and :data:`SKIP_SIGNATURE` where no signature came,
    and clients may drop thought summaries. The read keeps none of these (a call's id is then its
    place, as for every model turn, and a thought keeps only its signature), so the turn reads the
    same as the answer it echoes (:func:`as_echoed`). Only model turns change, and a path names a
    model turn whole, so every path into the copy is a path into the body; the bytes forwarded are
    the client's.
    """
    contents = body.get("contents")
    if not isinstance(contents, list):
        return body
    return {**body, "contents": [_read_content(c) for c in contents]}


def _read_content(content: Any) -> Any:
    if not isinstance(content, Mapping) or content.get("role") != "model" or not isinstance(content.get("parts"), list):
        return content
    parts = [_read_part(p) for p in content["parts"]]
    return {**content, "parts": [p for p in parts if not _bare_thought(p)]}


def _bare_thought(part: Any) -> bool:
    """A thought summary with no signature: clients may drop it, so the read never holds it."""
    return isinstance(part, Mapping) and bool(part.get("thought")) and not part.get("thoughtSignature")


def _read_part(part: Any) -> Any:
    if not isinstance(part, Mapping):
        return part
    out = dict(part)
    if out.get("thoughtSignature") == SKIP_SIGNATURE:
        del out["thoughtSignature"]
    if out.get("thought"):
        out["text"] = ""
    call = out.get("functionCall")
    if isinstance(call, Mapping) and "id" in call:
        out["functionCall"] = {k: v for k, v in call.items() if k != "id"}
    return out


def as_echoed(assistant: AssistantMessage, client_body: Mapping[str, Any] | None) -> AssistantMessage:
    """A Gemini answer as the session's next request will read it (:func:`reading_copy`).

    Its calls are named by the place the turn takes in the history (``gemini-call-<index>-<n>``,
    the index being the length of the request's ``contents``) and its thoughts keep only their
    signatures.
    """
    contents = client_body.get("contents") if client_body is not None else None
    if not isinstance(contents, list):
        return assistant
    prefix = f"gemini-call-{len(contents)}"
    calls = tuple(replace(c, id=f"{prefix}-{n}") for n, c in enumerate(assistant.tool_calls))
    thinking = tuple(replace(b, text="") for b in assistant.thinking if b.signature not in ("", SKIP_SIGNATURE))
    return replace(assistant, tool_calls=calls, thinking=thinking)
