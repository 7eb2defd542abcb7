"""CPU time of each wire renderer on a 1,000-message coding-agent context (render + ``json.dumps``).

Median of 7 runs of 20 renders each, in CPU seconds of this process (``time.process_time``), so other
work on a shared machine weighs less than in wall time.

    PYTHONPATH=src .venv/bin/python benchmarks/bench_wire.py
"""

from __future__ import annotations

import json
import statistics
import time

from _progress import track

from contextwarden.context import Message, ModelContext, ToolDefinition
from contextwarden.log.events import ToolCall
from contextwarden.wire import FORMATS, get_codec


def context(turns: int = 333) -> ModelContext:
    """A user goal, then ``turns`` rounds of a read_file call, its 40-line result and a user nudge."""
    messages = [Message(role="user", text="Fix the failing test in src/app.py please.")]
    for i in range(turns):
        call = ToolCall(id=f"call_{i}", name="read_file", arguments={"path": f"src/f{i}.py"})
        messages.append(Message(role="assistant", text=f"Step {i}: reading.", tool_calls=(call,)))
        messages.append(Message(role="tool", text="line of code\n" * 40, tool_call_id=call.id, tool_name="read_file"))
        messages.append(Message(role="user", text="go on"))
    tool = ToolDefinition(name="read_file", description="Read a file.", parameters={"type": "object"})
    return ModelContext(
        model="claude-sonnet-4-5",
        system="You are a coding agent. " * 20,
        messages=tuple(messages),
        tools=(tool,),
        cache_breakpoints=(-1, 500, 900),
    )


def main() -> None:
    """Print the median CPU milliseconds per render of each format."""
    ctx = context()
    for fmt in track(FORMATS, "rendering"):
        codec = get_codec(fmt)
        runs = []
        for _ in range(7):
            started = time.process_time()
            for _ in range(20):
                json.dumps(codec.render_request(ctx))
            runs.append((time.process_time() - started) / 20 * 1000)
        print(f"{fmt:18s} {statistics.median(runs):6.2f} ms CPU per render ({len(ctx.messages)} messages)")


if __name__ == "__main__":
    main()
