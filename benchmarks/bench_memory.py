"""Peak memory of ``import`` and ``replay --report`` on large single-line transcripts.

Command (sizes in MB; ``--base`` runs another checkout's ``src`` side by side, e.g. main's)::

    .venv/bin/python benchmarks/bench_memory.py --sizes 10,50,200 [--base /work/main/src]

Each size is an OpenAI Chat transcript written on the fly to a temporary directory as one JSON
line: a user prompt, then turns whose tool outputs share the size between them (a few large
outputs, as a log dump or a big file read makes). Each command runs in its own subprocess; its peak
resident set comes from ``os.wait4`` (that child's own ``ru_maxrss``, not the largest child so far).
The target: peak under 2x the input size plus 200 MB.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from _progress import track

MB = 1024 * 1024
TURNS = 4
"""Tool calls in a generated transcript; the size is split evenly between their outputs."""


def write_transcript(path: Path, size_mb: int) -> int:
    """Write a single-line OpenAI Chat transcript of about ``size_mb`` MB; return its size in bytes."""
    chunk = (size_mb * MB) // TURNS
    line = "2026-01-01T00:00:00 worker-3 INFO processed item 12345 in 4 ms status=ok\n"
    output = (line * (chunk // len(line) + 1))[:chunk]
    messages: list[dict[str, object]] = [{"role": "user", "content": "Find why the worker is slow."}]
    for n in range(TURNS):
        call = {"id": f"call_{n}", "type": "function", "function": {"name": "shell", "arguments": '{"cmd": "cat log"}'}}
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": f"call_{n}", "content": output})
    messages.append({"role": "assistant", "content": "Every item takes 4 ms; the slowness is elsewhere."})
    with path.open("w", encoding="utf-8") as f:
        json.dump({"model": "gpt-5", "messages": messages}, f)
    return path.stat().st_size


def peak_rss(args: list[str], *, src: str, cwd: Path) -> tuple[int, int]:
    """Run ``python -m contextwarden ARGS`` with ``src`` first on the path; (exit code, peak RSS bytes)."""
    env = {**os.environ, "PYTHONPATH": src, "PYTHONHASHSEED": "0"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "contextwarden", "--quiet", *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
        print(f"  {' '.join(args[:1])} failed ({proc.returncode}): {err.strip()[-300:]}", file=sys.stderr)
    return proc.returncode, usage.ru_maxrss * 1024  # Linux reports kilobytes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="10,50,200", help="Input sizes in MB, comma-separated.")
    parser.add_argument("--base", default=None, help="Another checkout's src directory to measure alongside.")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    here = str(Path(__file__).resolve().parents[1] / "src")
    codes = {"this": here, **({"base": args.base} if args.base else {})}
    print(f"{'input MB':>9} {'command':<16} {'code':<5} {'peak MB':>8} {'target MB':>10}  result")
    with tempfile.TemporaryDirectory(prefix="cw-bench-memory-") as tmp:
        work = Path(tmp)
        for size in track(sizes, "measuring"):
            path = work / f"big-{size}mb.json"
            size_bytes = write_transcript(path, size)
            target = 2 * size_bytes + 200 * MB
            for name, src in codes.items():
                runs = {
                    "import": ["import", "--store", str(work / f"{name}-{size}.db"), str(path)],
                    "replay --report": ["replay", str(path), "--report", str(work / f"{name}-{size}.html")],
                }
                for label, cmd in runs.items():
                    code, peak = peak_rss(cmd, src=src, cwd=work)
                    verdict = "error" if code else ("pass" if peak < target else "FAIL")
                    figures = f"{peak / MB:>8.0f} {target / MB:>10.0f}"
                    print(f"{size_bytes / MB:>9.1f} {label:<16} {name:<5} {figures}  {verdict}", flush=True)
            path.unlink()


if __name__ == "__main__":
    main()
