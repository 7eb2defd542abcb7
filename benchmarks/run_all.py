"""Run every benchmark once, in turn, writing each one's JSON under ``out/bench/`` (``make bench``).

Each script also runs alone; see its docstring and the matching section of docs/benchmarks.md.
PostgreSQL figures need ``CONTEXTWARDEN_PG_DSN`` (``export CONTEXTWARDEN_PG_DSN="$(bash scripts/pg.sh start)"``).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from _progress import track

HERE = Path(__file__).resolve().parent
BENCHMARKS = ("bench_tokens.py", "bench_store.py", "bench_build.py", "bench_replay.py", "bench_drift.py")


def main() -> int:
    out = HERE.parent / "out" / "bench"
    out.mkdir(parents=True, exist_ok=True)
    failed = []
    for script in track(BENCHMARKS, "benchmarks"):
        print(f"== {script}", flush=True)
        result = subprocess.run([sys.executable, str(HERE / script), "--json", str(out / f"{Path(script).stem}.json")])
        if result.returncode:
            failed.append(script)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
