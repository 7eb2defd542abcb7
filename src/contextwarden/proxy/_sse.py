"""The scripted upstream's answers in each provider's wire shape, whole and as SSE events."""

from __future__ import annotations

import json
from typing import Any

from ..replay.costmodel import RequestCost
from ._reply import TOOL_SEARCH, Reply


def _usage(fmt: str, cost: RequestCost) -> dict[str, Any]:
    if fmt == "anthropic":
        return {
            "input_tokens": cost.uncached_tokens,
            "cache_creation_input_tokens": cost.cache_write_tokens,
            "cache_read_input_tokens": cost.cache_read_tokens,
            "output_tokens": cost.output_tokens,
        }
    if fmt == "openai_chat":
        return {
            "prompt_tokens": cost.input_tokens,
            "completion_tokens": cost.output_tokens,
            "total_tokens": cost.input_tokens + cost.output_tokens,
            "prompt_tokens_details": {"cached_tokens": cost.cache_read_tokens},
        }
    if fmt == "gemini":
        usage = {"promptTokenCount": cost.input_tokens, "candidatesTokenCount": cost.output_tokens}
        if cost.cache_read_tokens:
            usage["cachedContentTokenCount"] = cost.cache_read_tokens
        return {**usage, "totalTokenCount": cost.input_tokens + cost.output_tokens}
    return {
        "input_tokens": cost.input_tokens,
        "input_tokens_details": {"cached_tokens": cost.cache_read_tokens},
        "output_tokens": cost.output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": cost.input_tokens + cost.output_tokens,
    }


def _anthropic_content(reply: Reply) -> list[dict[str, Any]]:
    content: list[dict[str, Any]] = []
    if reply.thinking is not None:
        content.append({"type": "thinking", "thinking": reply.thinking[0], "signature": reply.thinking[1]})
    if reply.text:
        content.append({"type": "text", "text": reply.text})
    content += [{"type": "tool_use", "id": i, "name": n, "input": a} for i, n, a in reply.tool_calls]
    return content


def _responses_output(reply: Reply) -> list[dict[str, Any]]:
    output: list[dict[str, Any]] = []
    if reply.thinking is not None:
        output.append(
            {"type": "reasoning", "id": f"rs_{reply.ident or 1}", "summary": [], "encrypted_content": reply.thinking[1]}
        )
    if reply.text:
        output.append(
            {
                "type": "message",
                "id": f"msg_{reply.ident or 1}",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": reply.text, "annotations": []}],
            }
        )
    for i, n, a in reply.tool_calls:
        if n == TOOL_SEARCH and not isinstance(a, str):
            search = {"type": "tool_search_call", "id": f"tsc_{i}", "call_id": i, "execution": "client"}
            output.append({**search, "arguments": a, "status": "completed"})
        elif isinstance(a, str):
            output.append(
                {
                    "type": "custom_tool_call",
                    "id": f"ctc_{i}",
                    "status": "completed",
                    "call_id": i,
                    "name": n,
                    "input": a,
                }
            )
        else:
            namespace, _, name = n.rpartition(".")
            call = {"type": "function_call", "id": f"fc_{i}", "call_id": i, "name": name}
            output.append(
                {
                    **call,
                    **({"namespace": namespace} if namespace else {}),
                    "arguments": json.dumps(a),
                    "status": "completed",
                }
            )
    return output


def _gemini_parts(reply: Reply) -> list[dict[str, Any]]:
    """The model's parts; a reasoning block's signature rides on the first call (else the text), as Gemini sends it."""
    parts: list[dict[str, Any]] = []
    if reply.thinking is not None and reply.thinking[0]:
        parts.append({"text": reply.thinking[0], "thought": True})
    if reply.text:
        parts.append({"text": reply.text})
    parts += [{"functionCall": {"name": n, "args": a}} for _, n, a in reply.tool_calls]  # Gemini 2.5 names no ids
    if reply.thinking is not None and parts:
        carrier = next((p for p in parts if "functionCall" in p), parts[-1])
        carrier["thoughtSignature"] = reply.thinking[1]
    return parts


def _gemini_body(
    model: str, parts: list[dict[str, Any]], finish: str | None, usage: dict[str, Any] | None
) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    body: dict[str, Any] = {"candidates": [candidate], "modelVersion": model, "responseId": "scripted"}
    if usage is not None:
        body["usageMetadata"] = usage
    return body


def _stop(fmt: str, reply: Reply) -> str:
    if fmt == "anthropic":
        return "tool_use" if reply.tool_calls else "end_turn"
    return "tool_calls" if reply.tool_calls else "stop"


def complete(fmt: str, model: str, reply: Reply, cost: RequestCost) -> dict[str, Any]:
    """The non-streamed response body."""
    usage = _usage(fmt, cost)
    if fmt == "anthropic":
        return {
            "id": f"msg_{reply.ident or 'scripted'}",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": _anthropic_content(reply),
            "stop_reason": _stop(fmt, reply),
            "stop_sequence": None,
            "usage": usage,
        }
    if fmt == "gemini":
        return _gemini_body(model, _gemini_parts(reply), "STOP", usage)
    if fmt == "openai_chat":
        message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
        if reply.tool_calls:
            message["tool_calls"] = [
                {"id": i, "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
                for i, n, a in reply.tool_calls
            ]
        return {
            "id": "chatcmpl-scripted",
            "object": "chat.completion",
            "created": 0,
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": _stop(fmt, reply)}],
            "usage": usage,
        }
    return {
        "id": f"resp_{reply.ident or 'scripted'}",
        "object": "response",
        "created_at": 0,
        "status": "completed",
        "model": model,
        "output": _responses_output(reply),
        "usage": usage,
    }


def _event(name: str | None, data: dict[str, Any] | str) -> bytes:
    text = data if isinstance(data, str) else json.dumps(data)
    head = f"event: {name}\n" if name else ""
    return f"{head}data: {text}\n\n".encode()


def stream(fmt: str, model: str, reply: Reply, cost: RequestCost, *, include_usage: bool) -> list[bytes]:
    """The streamed response as SSE events (Chat reports usage only when asked to)."""
    if fmt == "anthropic":
        return _anthropic_stream(model, reply, cost)
    if fmt == "openai_chat":
        return _chat_stream(model, reply, cost, include_usage=include_usage)
    if fmt == "gemini":  # one whole response per event, CRLF-framed; the last carries the finish and the usage
        parts = _gemini_parts(reply) or [{"text": ""}]
        chunks = [_gemini_body(model, [part], None, None) for part in parts[:-1]]
        chunks.append(_gemini_body(model, parts[-1:], "STOP", _usage(fmt, cost)))
        return [f"data: {json.dumps(chunk)}\r\n\r\n".encode() for chunk in chunks]
    return _responses_stream(model, reply, cost)


def _anthropic_stream(model: str, reply: Reply, cost: RequestCost) -> list[bytes]:
    usage = _usage("anthropic", cost)
    start = {**complete("anthropic", model, reply, cost), "content": [], "stop_reason": None}
    start["usage"] = {**usage, "output_tokens": 1}
    out = [_event("message_start", {"type": "message_start", "message": start})]
    for index, block in enumerate(_anthropic_content(reply)):
        opening: dict[str, Any]
        if block["type"] == "thinking":
            opening = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [
                {"type": "thinking_delta", "thinking": block["thinking"]},
                {"type": "signature_delta", "signature": block["signature"]},
            ]
        elif block["type"] == "text":
            opening = {"type": "text", "text": ""}
            half = len(block["text"]) // 2
            deltas = [
                {"type": "text_delta", "text": block["text"][:half]},
                {"type": "text_delta", "text": block["text"][half:]},
            ]
        else:
            opening = {**block, "input": {}}
            deltas = [{"type": "input_json_delta", "partial_json": json.dumps(block["input"])}]
        out.append(
            _event("content_block_start", {"type": "content_block_start", "index": index, "content_block": opening})
        )
        out += [
            _event("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d}) for d in deltas
        ]
        out.append(_event("content_block_stop", {"type": "content_block_stop", "index": index}))
    out.append(
        _event(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": _stop("anthropic", reply), "stop_sequence": None},
                "usage": {"output_tokens": cost.output_tokens},
            },
        )
    )
    out.append(_event("message_stop", {"type": "message_stop"}))
    return out


def _chat_stream(model: str, reply: Reply, cost: RequestCost, *, include_usage: bool) -> list[bytes]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        body = {
            "id": "chatcmpl-scripted",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": model,
            "choices": [choice],
        }
        return _event(None, body)

    out = [chunk({"role": "assistant", "content": ""})]
    if reply.text:
        out.append(chunk({"content": reply.text}))
    for index, (call_id, name, args) in enumerate(reply.tool_calls):
        call = {"index": index, "id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}
        out.append(chunk({"tool_calls": [call]}))
        out.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": json.dumps(args)}}]}))
    out.append(chunk({}, _stop("openai_chat", reply)))
    if include_usage:
        usage = {
            "id": "chatcmpl-scripted",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": model,
            "choices": [],
        }
        out.append(_event(None, {**usage, "usage": _usage("openai_chat", cost)}))
    out.append(_event(None, "[DONE]"))
    return out


def _responses_stream(model: str, reply: Reply, cost: RequestCost) -> list[bytes]:
    final = complete("openai_responses", model, reply, cost)
    created = {**final, "status": "in_progress", "output": [], "usage": None}
    out = [_event("response.created", {"type": "response.created", "sequence_number": 0, "response": created})]
    seq = 1
    for index, item in enumerate(final["output"]):
        out.append(
            _event(
                "response.output_item.added",
                {"type": "response.output_item.added", "sequence_number": seq, "output_index": index, "item": item},
            )
        )
        seq += 1
        if item["type"] in ("function_call", "custom_tool_call"):
            out += _call_deltas(item, index, seq)
            seq += 2
        if item["type"] == "message":
            delta = {
                "type": "response.output_text.delta",
                "sequence_number": seq,
                "item_id": item["id"],
                "output_index": index,
                "content_index": 0,
                "delta": item["content"][0]["text"],
                "logprobs": [],
            }
            out.append(_event("response.output_text.delta", delta))
            seq += 1
        done = {"type": "response.output_item.done", "sequence_number": seq, "output_index": index, "item": item}
        out.append(_event("response.output_item.done", done))
        seq += 1
    out.append(_event("response.completed", {"type": "response.completed", "sequence_number": seq, "response": final}))
    return out


def _call_deltas(item: dict[str, Any], index: int, seq: int) -> list[bytes]:
    """A tool call's argument (or freeform input) delta and done events, as the Responses API streams them."""
    custom = item["type"] == "custom_tool_call"
    kind = "response.custom_tool_call_input" if custom else "response.function_call_arguments"
    text = item["input"] if custom else item["arguments"]
    field = "input" if custom else "arguments"
    delta = {
        "type": f"{kind}.delta",
        "sequence_number": seq,
        "item_id": item["id"],
        "output_index": index,
        "delta": text,
    }
    done = {
        "type": f"{kind}.done",
        "sequence_number": seq + 1,
        "item_id": item["id"],
        "output_index": index,
        field: text,
    }
    return [_event(f"{kind}.delta", delta), _event(f"{kind}.done", done)]
