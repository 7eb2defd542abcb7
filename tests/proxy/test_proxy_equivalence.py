"""The proxy and the offline replay measure the same thing: a real transcript costs the same through both.

A real SWE-agent trajectory (MIT, shipped in ``contextwarden/data``) is sent turn by turn by the
official OpenAI client through the proxy to the cache-simulating upstream, and replayed offline with
the ``contextwarden`` strategy under the proxy's own policy. Both sides are measured by the one block
meter and priced by the one cache model, so the billed input cost, the tokens and the requests that
reduce must agree. The comparison must cover an edit, not only pass-through: the proxy's short horizon
(a third of the turns so far) never batches on a transcript this short, so both sides plan here with
the library's horizon, under which the planner batches late in the session.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from _paths import ROOT
from _proxy import rig
from contextwarden.importers import load_transcript
from contextwarden.log.events import Instruction
from contextwarden.models import ModelProfile, get_profile
from contextwarden.plan.planner import PlannerSettings
from contextwarden.proxy import Reply, ScriptedUpstream
from contextwarden.replay import ReplaySettings, load_inputs, replay_file
from contextwarden.replay.engine import reference_of
from contextwarden.replay.warden import ContextWardenStrategy
from contextwarden.tokens import best_counter
from contextwarden.wire import ParsedRequest, get_codec
from contextwarden.wire.blocks import BlockMeter

TRAJECTORY = (ROOT / "src/contextwarden/data/trajectories/swe-agent/ctf__i_got_id_demo.traj").resolve()
MODEL = "gpt-5"


def _client_messages() -> list[dict[str, Any]]:
    """The transcript as the OpenAI Chat history its agent resends on every call."""
    events = [
        e for e in load_transcript(TRAJECTORY).events if e.kind in ("instruction", "user", "assistant", "tool_result")
    ]
    lead = next(i for i, e in enumerate(events) if not isinstance(e, Instruction))
    parsed = ParsedRequest(
        format="openai_chat", model=MODEL, instructions=tuple(events[:lead]), events=tuple(events[lead:])
    )  # type: ignore[arg-type]
    return list(get_codec("openai_chat").render_request(parsed.to_context(), model=MODEL)["messages"])


def _reply(message: dict[str, Any]) -> Reply:
    calls = tuple(
        (c["id"], c["function"]["name"], json.loads(c["function"]["arguments"] or "{}"))
        for c in message.get("tool_calls") or ()
    )
    return Reply(text=message.get("content") or "", tool_calls=calls)


def _input_cost(profile: ModelProfile, total: int, read: int, write: int) -> float:
    return profile.cost(input_tokens=total, output_tokens=0, cache_read_tokens=read, cache_write_tokens=write) or 0.0


def test_a_real_transcript_costs_the_same_through_the_proxy_and_in_the_offline_replay(tmp_path: Path) -> None:
    profile, counter = get_profile(MODEL), best_counter()
    messages = _client_messages()
    upstream = ScriptedUpstream(counter=counter)
    with rig(str(tmp_path / "s.db"), upstream=upstream) as r:
        manager = r.proxy.pipeline.manager
        # the library's horizon and bound, so the planner batches in this short transcript
        library = PlannerSettings()
        library_horizon = dataclasses.replace(
            manager.policy.planner,
            horizon_share=library.horizon_share,
            uncovered_payback_turns=library.uncovered_payback_turns,
        )
        manager.policy = dataclasses.replace(manager.policy, planner=library_horizon)
        client = r.openai()
        for i, message in enumerate(messages):
            if message["role"] == "assistant" and i > 0:
                upstream.push(_reply(message))
                client.chat.completions.create(model=MODEL, messages=messages[:i])  # type: ignore[arg-type]
        policy = r.proxy.pipeline.manager.policy
    billed = [rec.usage for rec in upstream.received if rec.usage is not None]
    proxied = [
        (u.input_tokens, _input_cost(profile, u.input_tokens, u.cache_read_tokens, u.cache_write_tokens))
        for u in billed
    ]

    settings = ReplaySettings(model=MODEL, optimum=False)
    (inp,) = load_inputs([str(TRAJECTORY)])
    reference = reference_of(inp, settings, counter)
    assert reference.hidden_prefix.tokens == 0  # nothing estimated on top of what the proxy sees
    strategy = ContextWardenStrategy(name="contextwarden (proxy policy)", policy=policy, compact=False)
    result = replay_file(inp, strategy, reference=reference, meter=BlockMeter(counter), settings=settings)
    offline = [
        (q.input_tokens, _input_cost(profile, q.input_tokens, q.cache_read_tokens, q.cache_write_tokens))
        for q in result.requests
    ]

    assert len(proxied) == len(offline) >= 20
    sent = [messages[:i] for i, m in enumerate(messages) if m["role"] == "assistant" and i > 0]
    edited = [n for n, body in enumerate(r.forwarded()) if body["messages"] != sent[n]]
    batches = [n for n, q in enumerate(result.requests) if q.window_event]
    assert batches, "the planner must batch in this transcript, or the test compares pass-through only"
    assert edited[0] == batches[0]  # the same request starts reducing
    tokens_proxy, tokens_offline = sum(t for t, _ in proxied), sum(t for t, _ in offline)
    cost_proxy, cost_offline = sum(c for _, c in proxied), sum(c for _, c in offline)
    assert tokens_proxy == pytest.approx(tokens_offline, rel=0.01)
    assert cost_proxy == pytest.approx(cost_offline, rel=0.01)
