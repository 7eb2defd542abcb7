"""The policy the proxy plans with: the chosen task preset, with what a proxy must keep."""

from __future__ import annotations

from dataclasses import replace

from ..plan.policy import ContextPolicy
from ..plan.taskpolicies import get_task_policy

PROXY_HORIZON = 1 / 3
"""A batch the session does not live to pay back costs more than going direct, so the proxy expects
a session to run a third as long again, not half (docs/proxy.md, "Measured")."""


PROXY_KEEP_RECENT = 3
PROXY_MIN_BATCH_SHARE = 0.4
"""The proxy plans with the planner's earlier floors (one batch share under either cache): without
retrieval tools of its own, its first batch does not rewrite the tool list, and the matched A/B
(docs/proxy.md, "Measured") was tuned on these."""


def proxy_policy(preset: str | None = None) -> ContextPolicy:
    """The policy of a proxy planning under the task preset ``preset`` (``None``: the default policy).

    The proxy keeps the client's tools as they are (no retrieval tools of ours) and leaves thinking
    blocks with their signatures alone, so the planner must not count on dropping them. Keeping an
    exploring session's reads took the matched A/B over issue 12's 0.80x of going direct (0.802x /
    0.806x), so that protection is off here. An unknown preset is a ``UsageError`` that lists the known ones.
    """
    base = get_task_policy(preset) if preset is not None else ContextPolicy()
    planner = replace(
        base.planner,
        keep_recent_tool_results=max(base.planner.keep_recent_tool_results, PROXY_KEEP_RECENT),
        min_batch_share=PROXY_MIN_BATCH_SHARE,
        min_batch_share_automatic=PROXY_MIN_BATCH_SHARE,
        drop_old_thinking=False,
        horizon_share=PROXY_HORIZON,
        protect_exploration_reads=False,
    )
    return replace(base, retrieval_tools=False, planner=planner)
