"""Each framework's long run side by side: no context management, the framework's own tools, contextwarden.

The same scripted agent run for every arm (``_long_run.py``: 8 user turns of 5 tool calls, outputs
growing from 1.5K to 60K characters, planted facts said by the user, near the top of early tool
outputs and in the middle of long ones). The framework's own scripted model records every request it
receives; each is measured as OpenAI Chat messages (tools included) with the exact o200k_base counter
and priced by :mod:`contextwarden.replay.costmodel` under an Anthropic-style profile
(``claude-sonnet-4-5``: breakpoints on the tools and the last message, 5-minute cache) and an
OpenAI-style one (``gpt-4o``: automatic prefix cache), one call every 10 seconds. contextwarden
plans for the profile it is priced under.

Arms per framework (``_arms_<framework>.py``):

- LangChain: none, ``ContextEditingMiddleware(ClearToolUsesEdit(trigger=30_000))``,
  ``SummarizationMiddleware(trigger=("tokens", 30_000))`` (default ``keep``), contextwarden;
- Agents SDK: none, ``ToolOutputTrimmer()``, ``SQLiteSession(session_settings=SessionSettings(limit=20))``,
  contextwarden;
- pydantic-ai: none, ``ProcessHistory`` with a pairing-safe keep-the-last-10 processor, contextwarden;
- ADK: none, ``EventsCompactionConfig(compaction_interval=3, overlap_size=1)`` with ADK's
  ``LlmEventSummarizer``, contextwarden.

The summarizing arms summarize with a scripted oracle that writes every planted fact it is shown
verbatim (a real model can only do worse); the summarizer's own calls are priced with the rest.

Retention of the planted facts, by kind (user / head of an output / middle of an output): how many
the model was ever shown ("ever shown": in any request after it was planted); how many the *last*
request shows verbatim ("in context"); how many the model can still get ("reachable": in
context, or returned by a retrieval tool it was offered, for contextwarden ``recall`` over the
store); and how many the framework's own history still holds at the end ("history").

    PYTHONHASHSEED=0 CONTEXTWARDEN_QUIET=1 python benchmarks/bench_integrations.py \
        [--frameworks langchain,agents,pydantic_ai,adk] [--arms NAME,...] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import _arms_adk
import _arms_agents
import _arms_langchain
import _arms_pydantic_ai
from _long_run import FACT_KINDS, FACTS, Arm, tool_output, unpaired

from contextwarden.log.store import SQLiteStore
from contextwarden.models import get_profile
from contextwarden.replay.costmodel import BlockMeter, CacheSimulator
from contextwarden.tokens import best_counter

PROFILES = {"anthropic": "claude-sonnet-4-5", "openai": "gpt-4o"}
FRAMEWORKS: dict[str, ModuleType] = {
    "langchain": _arms_langchain,
    "agents": _arms_agents,
    "pydantic_ai": _arms_pydantic_ai,
    "adk": _arms_adk,
}


def _price(requests: list[dict[str, Any]], profile_name: str) -> tuple[list[int], float, int]:
    profile = get_profile(profile_name)
    meter = BlockMeter(best_counter())
    sim = CacheSimulator(profile)
    tokens, cost, read = [], 0.0, 0
    for n, body in enumerate(requests):
        blocks = meter.blocks(body)
        priced = sim.observe(blocks, at=10.0 * n, output_tokens=30, breakpoints=(0, len(blocks) - 1))
        tokens.append(priced.input_tokens)
        cost += priced.cost_usd
        read += priced.cache_read_tokens
    return tokens, cost, read


def _by_kind(found: Callable[[str], bool]) -> str:
    """``user/head/middle`` counts of the planted facts ``found`` holds."""
    return "/".join(str(sum(1 for kind, fact in FACTS.values() if kind == k and found(fact))) for k in FACT_KINDS)


def measure(arm: Arm, profile_name: str) -> dict[str, Any]:
    """Tokens, cost, validity and retention of one run, priced under ``profile_name``."""
    window = get_profile(profile_name).input_window
    tokens, cost, read = _price(arm.requests, profile_name)
    _, side_cost, _ = _price(arm.side_requests, profile_name)
    sent = [json.dumps(body["messages"], ensure_ascii=False) for body in arm.requests]
    last = sent[-1]
    recall = arm.recall

    def reachable(fact: str) -> bool:
        return fact in last or bool(recall and fact in recall(fact.split(": ", 1)[1][:24]))

    return {
        "calls": len(tokens),
        "mean_tokens_per_call": round(sum(tokens) / len(tokens)),
        "max_tokens_per_call": max(tokens),
        "total_input_tokens": sum(tokens),
        "cache_read_share": round(read / max(sum(tokens), 1), 3),
        "calls_over_window": sum(1 for t in tokens if t > (window or t)),
        "unpaired_requests": sum(1 for body in arm.requests if unpaired(body["messages"])),
        "summarizer_calls": len(arm.side_requests),
        "cost_usd": round(cost + side_cost, 4),
        "facts_ever_shown": _by_kind(lambda fact: any(fact in text for text in sent)),
        "facts_in_context": _by_kind(lambda fact: fact in last),
        "facts_reachable": _by_kind(reachable),
        "facts_in_history": _by_kind(lambda fact: fact in arm.history),
    }


def bench_mirror(messages: int = 2_000) -> dict[str, float]:
    """Milliseconds to mirror a ``messages``-long history: first time, again unchanged, one more, fresh process."""
    from contextwarden.log.events import AssistantMessage, Event, ToolCall, ToolResult, UserMessage
    from contextwarden.mirror import mirror_history

    def history(n: int) -> list[Event]:
        out: list[Event] = [UserMessage(text="Fix the build.")]
        for k in range(n // 2):
            call = ToolCall(id=f"c{k}", name="read_log", arguments={"path": f"b-{k}.log"})
            out += [
                AssistantMessage(tool_calls=(call,)),
                ToolResult(call_id=call.id, tool_name="read_log", output=tool_output(k % 5)),
            ]
        return out

    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        store = SQLiteStore(Path(tmp) / "m.db")
        for label, events, target in (
            ("first", history(messages), store),
            ("unchanged", history(messages), store),
            ("one_more", [*history(messages), UserMessage(text="next")], store),
            (
                "fresh_process",
                [*history(messages), UserMessage(text="next"), UserMessage(text="again")],
                SQLiteStore(Path(tmp) / "m.db"),
            ),
        ):
            start = time.perf_counter()
            mirror_history(target, "m", events)
            out[label] = round((time.perf_counter() - start) * 1000, 1)
    return out


def table(results: dict[str, dict[str, Any]]) -> str:
    """The results as the Markdown table of docs/integrations.md (token columns from the Anthropic-style runs)."""
    rows = [
        "| framework | arm | mean tokens/call | max | over window (A / O) | unpaired | cost A | cost O "
        "| facts ever shown | in context | reachable | in framework history |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for key, a in results.items():
        framework, style, arm = key.split("/", 2)
        if style != "anthropic":
            continue
        o = results.get(f"{framework}/openai/{arm}", a)
        rows.append(
            f"| {framework} | {arm} | {a['mean_tokens_per_call']:,} | {a['max_tokens_per_call']:,} | "
            f"{a['calls_over_window']} / {o['calls_over_window']} | {a['unpaired_requests']} | ${a['cost_usd']:.2f} | "
            f"${o['cost_usd']:.2f} | {a['facts_ever_shown']} | {a['facts_in_context']} | {a['facts_reachable']} | "
            f"{a['facts_in_history']} |"
        )
    return "\n".join(rows)


def main() -> None:
    """Run the arms asked for and print one line per run, then the table."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--frameworks", default=",".join(FRAMEWORKS))
    parser.add_argument("--arms", default="", help="comma-separated arm names to run (default: all)")
    parser.add_argument("--json", default="")
    parser.add_argument("--mirror", action="store_true", help="time mirror_history on a 2,000-message history")
    args = parser.parse_args()
    if args.mirror:
        print("mirror_history ms:", bench_mirror())
        return
    logging.getLogger("google_adk").setLevel(logging.ERROR)  # one "missing usage" line per scripted call
    only = set(filter(None, args.arms.split(",")))
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for framework in args.frameworks.split(","):
            module = FRAMEWORKS[framework]
            for arm in module.ARMS:
                if only and arm not in only:
                    continue
                for style, profile in PROFILES.items():
                    ran = module.run(arm, profile, Path(tmp) / f"{framework}-{style}-{len(results)}.db")
                    row = measure(ran, profile)
                    results[f"{framework}/{style}/{arm}"] = row
                    print(
                        f"{framework:11} {style:9} {arm:28} " + " ".join(f"{k}={v}" for k, v in row.items()), flush=True
                    )
    print(table(results))
    if args.json:
        Path(args.json).write_text(json.dumps({"python": sys.version.split()[0], "results": results}, indent=2))


if __name__ == "__main__":
    main()
