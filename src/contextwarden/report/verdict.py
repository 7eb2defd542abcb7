"""The one sentence a replay comes to: what contextwarden cost against raw and the other strategies.

The demo prints it under its table and the HTML report opens with it, so a reader learns the result
before reading a figure. It is built from the replay's own figures; nothing in it is fixed text about
a particular transcript.
"""

from __future__ import annotations

from ..replay.results import ReplayResults


def verdict(results: ReplayResults, *, default: str = "contextwarden") -> str:
    """One sentence on ``default``'s cost against raw and each other strategy, and the probes it kept.

    Empty when ``default`` or raw did not run (or cost nothing).
    """
    ran = {s.name: s.figures() for s in results.strategies if not s.skipped}
    ours, raw = ran.get(default), ran.get("raw")
    if ours is None or raw is None or not raw["cost_usd"]:
        return ""
    requests = ours["requests"]
    against = [f"{ours['cost_usd'] / raw['cost_usd']:.2f}x the raw history"]
    against += [
        f"{ours['cost_usd'] / f['cost_usd']:.2f}x {name}"
        for name, f in ran.items()
        if name not in (default, "raw") and f["cost_usd"]
    ]
    probes = ours["probe_retention"]
    kept = min([ours["retention"], *probes.values()]) if probes else ours["retention"]
    held = "keeping every probe" if kept >= 1.0 else f"keeping {kept:.0%} of the probes on its worst one"
    cheaper = ours["cost_usd"] < raw["cost_usd"]
    lead = "costs" if cheaper else "saves nothing here and costs"
    return (
        f"Over {requests:,} model calls {default} {lead} ${ours['cost_usd']:.4f}: {', '.join(against)}, {held} "
        f"(task, constraints, latest tool result, failing evidence, modified files, next-action evidence)."
    )
