"""Counting tokens behind the proxy: count what the model route would forward, change nothing.

Anthropic's ``count_tokens`` and Gemini's ``countTokens`` are both answered this way.

Counting must not change the session, so this only reads: the session is looked up (never
created), nothing is ingested and nothing is planned. The log's standing reductions are applied to
the client's body, the way :meth:`~.pipeline.Pipeline.prepare` applies them; the new messages at
the end are not reduced yet, as they would not be in the next request either. A window compacted
by the planner is rendered from the log, as ``prepare`` forwards it, followed by the client's
messages the log does not hold yet. A request of no known session, or one whose history no longer
extends the log (a trim or rewind the next request would record), is counted as the client sent it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from ..assemble.manager import ContextManager
from ..context import ModelContext
from ..errors import SessionNotFound
from ..mirror import MIRROR_SUMMARIZER, content_digest, unmirrored
from ..pairing import normalize_pairing
from .identity import SessionIndex, namespace
from .policy import with_recall
from .projected import edited_body, rendered_body
from .suffix import SuffixCache, last_assistant_reach


def counted_body(
    raw: bytes,
    headers: Mapping[str, str],
    credential: str,
    *,
    reader: SuffixCache,
    index: SessionIndex,
    manager: ContextManager,
    fmt: str = "anthropic",
) -> bytes:
    """The body to count for a counting request ``raw`` of wire format ``fmt`` (see the module docstring).

    ``reader``, ``index`` and ``manager`` are the proxy pipeline's (the index's salt names the caller).
    """
    caller = namespace(credential, index.salt)
    loaded = reader.load(fmt, raw, caller)
    body = loaded.body
    if not isinstance(body, dict):
        return raw
    read = reader.read(fmt, body, caller, loaded=loaded)
    identity = index.find(
        credential=credential,
        headers=headers,
        body=body,
        root=read.root,
        chain=read.chain,
        reach=last_assistant_reach(read.parsed.events),
    )
    if identity is None:
        return raw
    try:
        policy = with_recall(manager.policy, read.parsed.tools, read.parsed.instructions)
        projection = manager.projection(identity.session_id, policy=policy)
    except SessionNotFound:
        return raw
    compaction = projection.compaction
    if compaction is not None and compaction.summarizer != MIRROR_SUMMARIZER:
        parsed = read.parsed
        history = [*parsed.instructions, *parsed.events]
        digests = [*(content_digest(i) for i in parsed.instructions), *read.digests]
        new = unmirrored(manager.store, identity.session_id, history, digests)
        if new is None:
            return raw
        added = replace(parsed, instructions=(), events=tuple(new)).to_context().messages
        # paired again as a whole: a call the window ends with is answered by the client's new result
        joined, _ = normalize_pairing([*(i.message for i in projection.list.items), *added])
        ctx = ModelContext(model=parsed.model, system=projection.system, messages=tuple(joined))
        return rendered_body(parsed, raw, body, ctx)[1]
    messages, _, _ = projection.normalized()
    edited = edited_body(fmt, raw, body, messages, projection.decisions, read=read, addressed=loaded.addressed)
    return edited[1] if edited is not None else raw
