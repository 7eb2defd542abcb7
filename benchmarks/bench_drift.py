"""Summary drift and compaction cost.

**Drift** (experiment 6, ``docs/experiments/summary_drift.md``). A long generated coding session plants
eight user constraints at its start (four in the task, four as steering) and changes one file per work
round. It is compacted five times in a row. Arms:

- ``summary-on-summary``: each summary is the summarizer's update of the previous one, nothing
  pinned, nothing checked (what most agents do);
- ``anchors``: contextwarden's window (goal, constraints and steering pinned verbatim from the task
  state), verification and re-grounding off;
- ``anchors+verify``: plus the post-compaction check that appends what a summary left out;
- ``anchors+verify+reground``: plus re-grounding from raw events every 2nd compaction and after a repair.

Counted after the fifth compaction, in the text of the request the model would see next:
constraints lost (of 8) and changed files lost (of all files changed before the last kept tail).

The summarizer is a simulated lossy model by default: it rewrites the previous notes plus the new
messages and drops each remembered line with probability ``--drop`` (seeded, so every arm sees the
same model). ``--llm-url`` uses a real OpenAI-compatible model instead (slow on a CPU).

**Cost**. A scripted agent runs a long session through ``run_agent_loop`` with an LLM summarizer
(scripted answers of realistic size, usage = request size) and reports the summarizer's tokens as
a share of all tokens of the session, for a few windows and session lengths.

**Real transcripts** (``benchmarks/_real_drift.py``): five successive compactions of every long
bundled transcript, summary-on-summary against re-grounding every 2nd compaction, counting the
constraints, modified files and unresolved errors lost at each step, for the structured summarizer
and (with ``--local-url``) the local model under constrained JSON decoding; plus the share of
accepted summaries and the retention probes after each compaction with the library's defaults.

    .venv/bin/python benchmarks/bench_drift.py [--json out.json] [--drop 0.2] [--llm-url URL]
        [--skip-cost] [--skip-real] [--local-url URL --local-transcripts ctf__i_got_id --local-arms ARM,ARM]
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import random
import re
import time
from pathlib import Path

from _real_drift import STEPS, TRIGGER, local_factory, make_structured, run_real

from contextwarden.assemble.manager import ContextManager, ContextPolicy
from contextwarden.context import Message, ModelContext, ToolDefinition
from contextwarden.log.events import (
    AssistantMessage,
    Event,
    Instruction,
    Steering,
    ToolCall,
    ToolResult,
    UsageReport,
    UserMessage,
)
from contextwarden.log.store.memory import MemoryStore
from contextwarden.loop import AgentTool, run_agent_loop
from contextwarden.models import ModelProfile, get_profile
from contextwarden.plan.compaction import (
    CompactionSettings,
    LLMSummarizer,
    SummaryInput,
    SummaryOptions,
    SummaryResult,
    WindowCompactor,
    compact,
    entries_from_events,
)
from contextwarden.plan.compaction.prompts import build_prompt
from contextwarden.plan.compaction.serialize import fit_transcript
from contextwarden.plan.planner import PlannerSettings
from contextwarden.providers import CallOptions, ModelReply, OpenAICompatProvider
from contextwarden.testing import ScriptedProvider, estimate_request_tokens, make_response
from contextwarden.tokens import HeuristicCounter

COUNTER = HeuristicCounter()
TASK = "Port the billing service in services/billing to the new payments API and keep every test green."
TASK_RULES = (
    "Do not change the public signature of charge_customer.",
    "Never commit secrets or API keys to the repository.",
    "Keep Python 3.9 compatibility in every module.",
    "Always run the full test suite before declaring a step done.",
)
STEERING = (
    "Never edit the generated file billing/schema_pb2.py by hand.",
    "Use Decimal, not float, for every money amount.",
    "Do not add new third-party dependencies.",
    "Keep log messages free of customer email addresses.",
)
CONSTRAINTS = TASK_RULES + STEERING
PHASES = 5
ROUNDS_PER_PHASE = 8


def profile(window: int, name: str = "bench-model") -> ModelProfile:
    return dataclasses.replace(get_profile("gpt-4o"), name=name, context_window=window, max_output_tokens=8_000)


# ----------------------------------------------------------------------------- the session


class Session:
    def __init__(self, store: MemoryStore, sid: str = "drift") -> None:
        self.store, self.sid, self.n = store, sid, 0
        store.create_session(sid)
        self.changed: list[str] = []

    def add(self, *events: Event) -> None:
        self.store.append(self.sid, list(events), expected_last_seq=self.store.get_session(self.sid).last_seq)

    def start(self) -> None:
        self.add(Instruction(text="You are a careful coding agent working in a Python monorepo."))
        self.add(UserMessage(text=f"{TASK} " + " ".join(TASK_RULES)))
        for rule in STEERING:
            self.add(Steering(text=rule))

    def call(self, name: str, output: str, text: str = "", error: bool = False, **args: str) -> None:
        self.n += 1
        cid = f"call_{self.n}"
        self.add(AssistantMessage(text=text, tool_calls=(ToolCall(id=cid, name=name, arguments=dict(args)),)))
        self.add(ToolResult(call_id=cid, tool_name=name, output=output, is_error=error, exit_code=1 if error else 0))

    def phase(self, k: int) -> None:
        for r in range(ROUNDS_PER_PHASE):
            path = f"services/billing/module_{k}_{r}.py"
            body = "\n".join(f"def helper_{k}_{r}_{i}(amount):\n    return amount * {i}" for i in range(40))
            self.call("read_file", body, text=f"Reading {path} to port its calls.", path=path)
            self.call(
                "write_file",
                f"wrote {path}",
                text="Switching to the new client because the old one is deprecated.",
                path=path,
                content="...",
            )
            self.changed.append(path)
            self.call("bash", "412 passed in 9.1s", command="pytest -q")


# ----------------------------------------------------------------------------- a lossy model

_RULE = re.compile(r"\b(?:do not|don't|never|always|keep|use)\b", re.IGNORECASE)


class LossyModel:
    """A simulated summarizer: rewrites notes + new messages, dropping each remembered line with
    probability ``drop`` (the same line in the same pass drops the same way in every arm)."""

    name = "lossy-model"

    def __init__(self, drop: float, seed: int = 7) -> None:
        self.drop, self.seed, self.passes = drop, seed, 0

    def _keep(self, line: str) -> bool:
        digest = hashlib.sha256(f"{self.seed}:{self.passes}:{line}".encode()).digest()
        return random.Random(digest).random() >= self.drop

    def summarize(self, data: SummaryInput, *, options: SummaryOptions) -> SummaryResult:
        self.passes += 1
        remembered = [ln[2:].strip() for ln in data.previous_summary.splitlines() if ln.startswith("- ")]
        for e in data.entries:
            if e.label in ("user", "steering"):
                remembered += [s.strip() for s in re.split(r"(?<=[.!?])\s+", e.text) if _RULE.search(s)]
            elif e.label == "tool call" and e.name == "write_file":
                m = re.search(r'"path":\s*"([^"]+)"', e.text)
                if m:
                    remembered.append(f"Changed {m.group(1)}")
        kept = [ln for ln in dict.fromkeys(remembered) if self._keep(ln)]
        goal = next((e.text for e in data.entries if e.label == "user"), "") or _section(data.previous_summary, "Goal")
        text = "\n".join(
            [
                "## Goal",
                goal[:200] or "(port the billing service)",
                "## Constraints & Preferences",
                *[f"- {ln}" for ln in kept if not ln.startswith("Changed ")],
                "## Progress",
                "### Done",
                *[f"- {ln}" for ln in kept if ln.startswith("Changed ")],
                "## Next Steps",
                "1. Continue porting the next module.",
            ]
        )
        return SummaryResult(
            text=text,
            summarizer=self.name,
            model=self.name,
            calls=1,
            input_tokens=COUNTER.count(data.previous_summary) + sum(COUNTER.count(e.text) for e in data.entries),
            output_tokens=COUNTER.count(text),
        )


def _section(text: str, title: str) -> str:
    m = re.search(rf"^## {title}\n(.*?)(?=^## |\Z)", text, re.MULTILINE | re.DOTALL)
    return m.group(1).strip() if m else ""


class RawLLM:
    """A real model as a summary-on-summary baseline: its answer is taken as it is, unvalidated."""

    name = "raw-llm"

    def __init__(self, url: str, model: str, window: int) -> None:
        self.provider = OpenAICompatProvider(url, timeout=600, max_retries=1)
        self.model, self.window = model, window

    def summarize(self, data: SummaryInput, *, options: SummaryOptions) -> SummaryResult:
        transcript = fit_transcript(data.entries, budget=self.window // 2, counter=COUNTER)
        prompt = build_prompt(transcript=transcript.text, purpose="history", previous_summary=data.previous_summary)
        request = ModelContext(
            model=self.model, system=prompt.system, messages=(Message(role="user", text=prompt.user),)
        )
        response = self.provider.complete(request, options=CallOptions(max_tokens=200, temperature=0.0))
        return SummaryResult(
            text=response.text,
            summarizer=self.name,
            model=self.model,
            calls=1,
            input_tokens=response.usage.input_tokens,
            output_tokens=response.usage.output_tokens,
        )


# ----------------------------------------------------------------------------- drift arms


def visible_after(store: MemoryStore, manager: ContextManager, model: ModelProfile) -> str:
    ctx = manager.build("drift", model=model)
    return "\n".join([ctx.system, *(m.text for m in ctx.messages)])


def count_lost(visible: str, changed: list[str]) -> tuple[int, int]:
    flat = " ".join(visible.split())
    lost_constraints = sum(1 for c in CONSTRAINTS if c not in flat)
    lost_files = sum(1 for f in changed if f not in flat)
    return lost_constraints, lost_files


def arm_summary_on_summary(make_model: object, keep: int) -> dict[str, object]:
    store = MemoryStore()
    session = Session(store)
    session.start()
    model = make_model()  # type: ignore[operator]
    summary, seen, used = "", 0, [0, 0]
    for k in range(PHASES):
        session.phase(k)
        events = store.read("drift")
        # the same cut as contextwarden's: the newest `keep` tokens stay; everything older leaves
        tail_tokens, cut = 0, len(events)
        while cut > 0 and tail_tokens < keep:
            cut -= 1
            tail_tokens += COUNTER.count(getattr(events[cut], "output", "") or getattr(events[cut], "text", ""))
        leaving = [e for e in events[seen:cut]]
        seen = cut
        data = SummaryInput(entries=tuple(entries_from_events(leaving)), state=_empty_state(), previous_summary=summary)
        result = model.summarize(data, options=SummaryOptions())
        summary = result.text
        used[0] += result.input_tokens
        used[1] += result.output_tokens
    tail = "\n".join(e.text for e in entries_from_events(store.read("drift")[seen:]))
    changed_before_tail = [f for f in session.changed if f not in tail]
    lost_c, lost_f = count_lost(summary + "\n" + tail, changed_before_tail)
    return {
        "arm": "summary-on-summary",
        "constraints_lost": lost_c,
        "files_lost": lost_f,
        "files_checked": len(changed_before_tail),
        "summarizer_calls": PHASES,
        "summarizer_tokens": used[0] + used[1],
    }


def _empty_state():  # type: ignore[no-untyped-def]
    from contextwarden.window.state import TaskState

    return TaskState()


def arm_contextwarden(name: str, make_model: object, keep: int, *, verify: bool, reground: bool) -> dict[str, object]:
    store = MemoryStore()
    session = Session(store)
    session.start()
    settings = CompactionSettings(
        keep_recent_tokens=keep, verify=verify, reground_every=2 if reground else 0, reground_after_repair=reground
    )
    compactor = WindowCompactor(store, summarizer=make_model(), counter=COUNTER, settings=settings)  # type: ignore[operator]
    manager = ContextManager(store, counter=COUNTER, compactor=compactor)
    model = profile(200_000)
    events: list[object] = []
    for k in range(PHASES):
        session.phase(k)
        event = compact(manager, "drift", model=model)
        assert event is not None, f"phase {k}: nothing to compact"
        events.append(event)
    visible = visible_after(store, manager, model)
    last = events[-1]
    tail = "\n".join(
        e.text for e in entries_from_events([e for e in store.read("drift") if e.seq >= last.first_kept_seq])
    )  # type: ignore[attr-defined]
    changed_before_tail = [f for f in session.changed if f not in tail]
    lost_c, lost_f = count_lost(visible, changed_before_tail)
    return {
        "arm": name,
        "constraints_lost": lost_c,
        "files_lost": lost_f,
        "files_checked": len(changed_before_tail),
        "summarizer_calls": sum(int(e.details.get("summarizer_calls", 0)) for e in events),  # type: ignore[attr-defined]
        "summarizer_tokens": sum(
            e.summarizer_input_tokens + e.summarizer_output_tokens  # type: ignore[attr-defined]
            for e in events
        ),
        "repairs": sum(1 for e in events if e.verification.get("repaired")),  # type: ignore[attr-defined]
        "missing_at_last": sum(len(v) for v in last.verification.get("missing", {}).values()),  # type: ignore[attr-defined]
        "regrounds": sum(1 for e in events if e.details.get("reground")),
    }  # type: ignore[attr-defined]


def run_drift(args: argparse.Namespace) -> list[dict[str, object]]:
    keep = 1_500
    if args.llm_url:
        window = args.llm_window
        llm_profile = dataclasses.replace(profile(window, name=args.llm_model), max_output_tokens=200)

        def raw() -> object:
            return RawLLM(args.llm_url, args.llm_model, window)

        def make() -> object:
            return LLMSummarizer(
                OpenAICompatProvider(args.llm_url, timeout=600, max_retries=1), model=llm_profile, counter=COUNTER
            )
    else:

        def raw() -> object:
            return LossyModel(args.drop)

        make = raw
    rows = [arm_summary_on_summary(raw, keep)]
    rows.append(arm_contextwarden("anchors", make, keep, verify=False, reground=False))
    rows.append(arm_contextwarden("anchors+verify", make, keep, verify=True, reground=False))
    rows.append(arm_contextwarden("anchors+verify+reground", make, keep, verify=True, reground=True))
    return rows


# ----------------------------------------------------------------------------- cost


SUMMARY_BODY = "\n".join(
    [
        "## Goal",
        TASK,
        "## Constraints & Preferences",
        *[f"- {c}" for c in CONSTRAINTS],
        "## Progress",
        "### Done",
        *[f"- [x] ported services/billing/module_{i}.py" for i in range(60)],
        "### In Progress",
        "- [ ] the refunds module",
        "## Next Steps",
        "1. port refunds",
    ]
)


def summarizer_answer(request: ModelContext) -> ModelReply:
    return make_response(
        SUMMARY_BODY,
        model="summarizer",
        usage=UsageReport(input_tokens=estimate_request_tokens(request), output_tokens=COUNTER.count(SUMMARY_BODY)),
    )


def agent_script(turns: int) -> list[object]:
    script: list[object] = []
    for i in range(turns):
        name = ("read_file", "write_file", "run")[i % 3]
        call = ToolCall(id=f"t{i}", name=name, arguments={"path": f"services/billing/m{i // 3}.py"})

        def respond(request: ModelContext, call: ToolCall = call) -> ModelReply:
            return make_response(
                "Next step.",
                tool_calls=(call,),
                model="agent",
                usage=UsageReport(input_tokens=estimate_request_tokens(request), output_tokens=60),
            )

        script.append(respond)
    script.append(
        lambda request: make_response(
            "Done.", model="agent", usage=UsageReport(input_tokens=estimate_request_tokens(request), output_tokens=5)
        )
    )
    return script


def cost_tools() -> list[AgentTool]:
    code = "\n".join(f"def f{i}(amount):\n    return Decimal(amount) * {i}  # billing rule {i}" for i in range(120))
    schema = {"type": "object", "properties": {"path": {"type": "string"}}}
    return [
        AgentTool(
            definition=ToolDefinition(name="read_file", description="Read a file.", parameters=schema),
            run=lambda args: code,
        ),
        AgentTool(
            definition=ToolDefinition(name="write_file", description="Write a file.", parameters=schema),
            run=lambda args: f"wrote {args.get('path')}",
        ),
        AgentTool(
            definition=ToolDefinition(name="run", description="Run the tests.", parameters=schema),
            run=lambda args: "\n".join(f"tests/test_m{i}.py ........ [{i}%]" for i in range(40)),
        ),
    ]


def run_cost(window: int, turns: int, *, mask: bool, reground: bool) -> dict[str, object]:
    store = MemoryStore()
    store.create_session("cost")
    store.append("cost", [Instruction(text="You are a coding agent."), UserMessage(text=TASK)], expected_last_seq=0)
    summarizer_provider = ScriptedProvider([summarizer_answer] * 400)
    model = profile(window)
    summarizer = LLMSummarizer(summarizer_provider, model=profile(128_000, "summarizer"), counter=COUNTER)
    policy = ContextPolicy(planner=PlannerSettings(mask=mask))
    settings = CompactionSettings(reground_every=4 if reground else 0, reground_after_repair=reground)
    compactor = WindowCompactor(store, summarizer=summarizer, counter=COUNTER, settings=settings)
    manager = ContextManager(store, counter=COUNTER, policy=policy, compactor=compactor)
    started = time.perf_counter()
    result = run_agent_loop(
        ScriptedProvider(agent_script(turns)), cost_tools(), manager, "cost", model=model, max_turns=turns + 1
    )
    seconds = time.perf_counter() - started
    summ = sum(c.summarizer_input_tokens + c.summarizer_output_tokens for c in result.compactions)
    agent = result.input_tokens + result.output_tokens
    return {
        "window": window,
        "masking": "on" if mask else "off",
        "reground": "on" if reground else "off",
        "turns": result.turns,
        "compactions": len(result.compactions),
        "regrounds": sum(1 for c in result.compactions if c.details.get("reground")),
        "agent_tokens": agent,
        "summarizer_tokens": summ,
        "summarizer_share": summ / (agent + summ),
        "seconds": round(seconds, 2),
    }


# ----------------------------------------------------------------------------- main


def table(rows: list[dict[str, object]], columns: list[str]) -> str:
    def fmt(v: object, column: str) -> str:
        if isinstance(v, float):  # shares as percentages, anything else (seconds) as a number
            return f"{v:.1%}" if column.endswith("share") else f"{v:.2f}"
        return f"{v:,}" if isinstance(v, int) else str(v)

    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(fmt(r.get(c, ""), c) for c in columns) + " |" for r in rows]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument("--drop", type=float, default=0.2, help="per-pass line drop rate of the simulated model")
    parser.add_argument("--llm-url", default="", help="an OpenAI-compatible server to summarize with instead")
    parser.add_argument("--llm-model", default="local")
    parser.add_argument("--llm-window", type=int, default=2_048)
    parser.add_argument("--skip-cost", action="store_true")
    parser.add_argument("--skip-real", action="store_true", help="skip the bundled real transcripts")
    parser.add_argument(
        "--local-url",
        default="",
        help="also run the real transcripts with the local model server "
        "(constrained JSON decoding) at this OpenAI-compatible URL",
    )
    parser.add_argument("--local-model", default="local")
    parser.add_argument("--local-window", type=int, default=2_048)
    parser.add_argument(
        "--local-transcripts",
        default="ctf__i_got_id",
        help="comma-separated name prefixes of the real transcripts the local model summarizes (a CPU model "
        "takes one to five minutes a summary on a shared machine)",
    )
    parser.add_argument(
        "--local-arms",
        default="",
        help="comma-separated arms the local model runs (default: all of them)",
    )
    args = parser.parse_args()
    drift = run_drift(args)
    print(
        f"Summary drift: {PHASES} compactions, {len(CONSTRAINTS)} constraints planted at the start, "
        f"summarizer: {'real model at ' + args.llm_url if args.llm_url else f'simulated, drop {args.drop}'}"
    )
    print(
        table(
            drift,
            [
                "arm",
                "constraints_lost",
                "files_lost",
                "files_checked",
                "repairs",
                "missing_at_last",
                "regrounds",
                "summarizer_calls",
                "summarizer_tokens",
            ],
        )
    )
    cost: list[dict[str, object]] = []
    if not args.skip_cost:
        cost = [
            run_cost(w, t, mask=m, reground=r)
            for w, t in ((32_000, 300), (128_000, 900))
            for m in (True, False)
            for r in (True, False)
        ]
        print("\nCompaction cost: summarizer tokens as a share of all tokens of the session")
        print(
            table(
                cost,
                [
                    "window",
                    "masking",
                    "reground",
                    "turns",
                    "compactions",
                    "regrounds",
                    "agent_tokens",
                    "summarizer_tokens",
                    "summarizer_share",
                    "seconds",
                ],
            )
        )
    real: list[dict[str, object]] = []
    if not args.skip_real:
        summarizers: dict[str, object] = {"structured": make_structured}
        only: dict[str, tuple[str, ...]] = {}
        if args.local_url:
            summarizers["local model (JSON schema)"] = local_factory(
                args.local_url, args.local_model, args.local_window
            )
            only["local model (JSON schema)"] = tuple(args.local_transcripts.split(","))
        arms = tuple(a for a in args.local_arms.split(",") if a)
        real = run_real(summarizers, only=only, arms=arms)
        print(
            f"\nReal transcripts: up to {STEPS} successive compactions of each bundled transcript (before a request "
            f"whose window passed {TRIGGER} tokens); lost@k = constraints/modified files/unresolved errors known at "
            "the cut that the next request no longer shows, summed over the transcripts; accepted = summaries not "
            "replaced by the structured fallback (rejected: why); probes = retention probes kept in the request "
            "right after each compaction; next_action = next_action_evidence for the turn that follows"
        )
        print(
            table(
                real,
                [
                    "summarizer",
                    "arm",
                    "transcripts",
                    "per_transcript",
                    "facts_checked",
                    *[f"lost@{k + 1}" for k in range(STEPS)],
                    "accepted",
                    "rejected",
                    "probes",
                    "next_action",
                    "seconds",
                ],
            )
        )
        for row in real:
            for run in row["runs"]:  # type: ignore[attr-defined]
                for miss in run["misses"]:
                    print(f"  miss: {row['summarizer']} / {row['arm']} / {run['transcript']}: {miss}")
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "drift": drift,
                    "cost": cost,
                    "real": real,
                    "drop": args.drop,
                    "llm_url": args.llm_url,
                    "local_url": args.local_url,
                },
                indent=2,
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
