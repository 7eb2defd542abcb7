"""Matched A/B on billed usage: each transcript replayed by an official SDK client, direct and through the proxy.

Both arms run against the same cache-simulating scripted upstream (``contextwarden.proxy.scripted``),
under separate API keys so their caches never mix. The client behaves like Claude Code: it resends the
whole history on every call and, in Anthropic format, marks the last block with ``cache_control``
(so the direct arm gets its cache too; the proxy has nothing to gain from adding one). The upstream
answers each call with the transcript's own next assistant message and bills it with the provider's
cache rules, so both arms pay for exactly the same output and the comparison is the input side:
prompt size and cache reads/writes as billed.

Corpora: the real MIT trajectories in ``/work/shared/data`` (SWE-agent, OpenHands; 5-21 requests) and
long generated coding sessions (``generate_sessions.py``, 50-70 requests, calibrated against the
Complexity Trap figures). Cache rules: Anthropic-style (``claude-sonnet-4-5``, explicit breakpoints)
and OpenAI-style (``gpt-5``, automatic prefix caching from 1,024 tokens in 128-token steps).
Thinking blocks are left out of the replayed histories (both arms alike): the scripted upstream
answers with one reasoning block at most.

Targets: through the proxy at most 0.80x direct in total, and never above direct on any
transcript by more than 1%.

    PYTHONPATH=src .venv/bin/python benchmarks/bench_proxy_ab.py [--generated 4] [--json out/ab.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anthropic
import openai

sys.path.insert(0, str(Path(__file__).resolve().parent))

from generate_sessions import generate

from contextwarden.importers import load_transcript
from contextwarden.models import get_profile
from contextwarden.proxy.app import Proxy
from contextwarden.proxy.demo import conversation, reply_of, with_cached_tail
from contextwarden.proxy.scripted import ScriptedUpstream
from contextwarden.proxy.serve import BackgroundServer
from contextwarden.proxy.settings import ProxySettings
from contextwarden.tokens import best_counter
from contextwarden.wire import get_codec

DATA = Path("/work/shared/data")
MODELS = {"anthropic": "claude-sonnet-4-5", "openai_chat": "gpt-5"}


def _sources(generated: int) -> list[tuple[str, list[Any]]]:
    out = []
    for path in sorted(DATA.glob("swe-agent/*.traj")) + sorted(DATA.glob("openhands/*.json")):
        out.append((path.stem, list(load_transcript(path).events)))
    codec = get_codec("anthropic")
    for seed in range(generated):
        doc = generate(seed)
        parsed = codec.parse_request({"model": "x", "max_tokens": 1, **doc})
        out.append((f"generated-{seed}", [*parsed.instructions, *parsed.events]))
    return out


def _history(fmt: str, events: list[Any]) -> tuple[Any, list[dict[str, Any]]]:
    """The transcript rendered once in ``fmt``: (system, messages). Thinking left out."""
    return conversation(events, MODELS[fmt], fmt=fmt)


def _arm(
    fmt: str, url: str, key: str, system: Any, messages: list[dict[str, Any]], upstream: ScriptedUpstream, count: Any
) -> dict[str, Any]:
    profile = get_profile(MODELS[fmt])
    cost = 0.0
    totals = {"requests": 0, "input": 0, "cache_read": 0, "cache_write": 0, "output": 0}
    if fmt == "anthropic":
        client: Any = anthropic.Anthropic(base_url=url, api_key=key, max_retries=0)
    else:
        client = openai.OpenAI(base_url=url + "/v1", api_key=key, max_retries=0)
    try:
        for i, message in enumerate(messages):
            if message["role"] != "assistant" or i == 0:
                continue
            upstream.push(reply_of(message, count, fmt=fmt))
            if fmt == "anthropic":
                r = client.messages.create(
                    model=MODELS[fmt], max_tokens=1024, system=system, messages=with_cached_tail(messages[:i])
                )
                read, write = r.usage.cache_read_input_tokens or 0, r.usage.cache_creation_input_tokens or 0
                total, output = r.usage.input_tokens + read + write, r.usage.output_tokens
            else:
                r = client.chat.completions.create(model=MODELS[fmt], messages=messages[:i])
                read, write = r.usage.prompt_tokens_details.cached_tokens or 0, 0
                total, output = r.usage.prompt_tokens, r.usage.completion_tokens
            cost += (
                profile.cost(input_tokens=total, output_tokens=output, cache_read_tokens=read, cache_write_tokens=write)
                or 0.0
            )
            for k, v in (
                ("requests", 1),
                ("input", total),
                ("cache_read", read),
                ("cache_write", write),
                ("output", output),
            ):
                totals[k] += v
    finally:
        client.close()
    return {**totals, "cost_usd": cost}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--generated", type=int, default=4, help="Generated long sessions to add (default 4).")
    parser.add_argument("--json", default=None, help="Also write the results here.")
    args = parser.parse_args()
    counter = best_counter()
    upstream = ScriptedUpstream(counter=counter)
    results: list[dict[str, Any]] = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp, BackgroundServer(upstream.app) as up:
        settings = ProxySettings(anthropic_upstream=up.url, openai_upstream=up.url, store_url=str(Path(tmp) / "s.db"))
        proxy = Proxy(settings)
        try:
            with BackgroundServer(proxy.app) as px:
                for name, events in _sources(args.generated):
                    for fmt in MODELS:
                        system, messages = _history(fmt, events)
                        direct = _arm(fmt, up.url, f"direct-{name}-{fmt}", system, messages, upstream, counter.count)
                        seen = len(proxy.pipeline.ledger.rows())
                        via = _arm(fmt, px.url, f"proxy-{name}-{fmt}", system, messages, upstream, counter.count)
                        proxy.settle()
                        rows = proxy.pipeline.ledger.rows()[seen:]
                        # the ledger's own account of this arm: billed, and its estimate of going direct
                        ledger = {
                            "billed_usd": sum(r.cost_usd for r in rows),
                            "direct_estimate_usd": sum(r.client_cost_usd for r in rows),
                        }
                        ratio = via["cost_usd"] / direct["cost_usd"] if direct["cost_usd"] else 1.0
                        estimate = ledger["direct_estimate_usd"] / direct["cost_usd"] if direct["cost_usd"] else 1.0
                        results.append(
                            {
                                "transcript": name,
                                "cache_rules": fmt,
                                "direct": direct,
                                "proxy": via,
                                "ratio": ratio,
                                "ledger": ledger,
                            }
                        )
                        print(
                            f"{name:<38}{fmt:<12}{direct['requests']:>4} req  direct ${direct['cost_usd']:.4f}"
                            f"  proxy ${via['cost_usd']:.4f}  {ratio:.3f}x"
                            f"  ledger: direct estimated at {estimate:.3f}x measured",
                            flush=True,
                        )
            fallbacks = sum(1 for row in proxy.pipeline.ledger.rows() if row.outcome == "fallback")
        finally:
            proxy.close()
    print()
    for fmt in MODELS:
        rows = [r for r in results if r["cache_rules"] == fmt]
        d = sum(r["direct"]["cost_usd"] for r in rows)
        p = sum(r["proxy"]["cost_usd"] for r in rows)
        worst = max(r["ratio"] for r in rows)
        total_ok, each_ok = p <= 0.80 * d, worst <= 1.01
        estimated = sum(r["ledger"]["direct_estimate_usd"] for r in rows)
        print(
            f"{fmt:<12} total direct ${d:.4f}  proxy ${p:.4f}  {p / d:.3f}x"
            f"  [{'PASS' if total_ok else 'FAIL'} <= 0.80x]"
            f"  worst transcript {worst:.3f}x  [{'PASS' if each_ok else 'FAIL'} <= 1.01x]"
            f"  ledger's direct estimate {estimated / d:.3f}x measured direct"
        )
    print(f"fall-backs: {fallbacks}; {time.perf_counter() - started:.0f} s")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps({"results": results, "fallbacks": fallbacks}, indent=2))


if __name__ == "__main__":
    main()
