"""Task presets: what each kind of agent must keep in view, as tiers and tool policies.

One policy does not fit every agent (``docs/behaviours.md``, row 40). A coding agent keeps its working set, diffs,
diagnostics and tests; a deep-research agent keeps claims, evidence, sources and open questions; a
browser agent keeps the current page state, its recent actions, the target and what it extracted.

A :class:`TaskPolicy` lists those as :class:`Keep` entries. Each names the tools that produce it,
the priority :class:`~contextwarden.window.items.Tier` it belongs to, and how it is retained (how many
recent results stay verbatim, whether a newer result supersedes an older one, whether sources
survive masking). :meth:`TaskPolicy.context_policy` turns it into the
:class:`~contextwarden.assemble.manager.ContextPolicy` the manager runs with: one tool policy per entry, in
front of the base preset, so the entries win for the tools they name.

Writing one for a new kind of agent::

    SQL = TaskPolicy(
        name="sql", description="Answers questions from a warehouse.",
        keeps=(Keep(name="schema", tools=("describe_table", "list_tables"), category="file_read",
                    tier=Tier.WORKING_SET, keep_recent=20, supersedable=True),
               Keep(name="results", tools=("run_query",), category="search", tier=Tier.RECENT_TOOL,
                    keep_recent=5, max_tokens=4_000)),
    )
    register_task_policy(SQL)
    manager = ContextManager(store, policy=get_task_policy("sql"))
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field

from ..errors import ConfigError, UsageError
from ..window.items import Tier
from ..window.policies.presets import (
    BROWSER_TOOL_POLICIES,
    CODING_TOOL_POLICIES,
    RESEARCH_TOOL_POLICIES,
    Category,
    ToolPolicy,
)
from .planner import PlannerSettings
from .policy import ContextPolicy
from .protection import Protection

__all__ = [
    "BROWSER",
    "CODING",
    "PROXY",
    "RESEARCH",
    "Keep",
    "TaskPolicy",
    "get_task_policy",
    "get_task_preset",
    "register_task_policy",
    "task_policy_names",
]


@dataclass(frozen=True, kw_only=True)
class Keep:
    """One thing a kind of agent must keep in view, and the tools whose output carries it."""

    name: str
    """What it is (``tests``, ``sources``, ``page_state``)."""
    tools: tuple[str, ...]
    """Tool-name patterns (``fnmatch``, case-insensitive) producing it; empty for state that lives
    in the task state or pins rather than in tool output (the goal, open questions)."""
    category: Category = "default"
    """The tool category (decides resource identity and supersession)."""
    tier: Tier = Tier.RECENT_TOOL
    """Its priority: lower tiers go last under pressure."""
    keep_recent: int = 10
    """How many of its most recent results stay verbatim."""
    max_tokens: int = 10_000
    """Truncation limit of one result at ingestion."""
    supersedable: bool = False
    """A newer result on the same resource replaces an older one."""
    keep_sources: bool = False
    """Masked results keep the URLs they cited."""
    description: str = ""
    """Why it matters, for people."""

    def tool_policy(self, task: str) -> ToolPolicy | None:
        """The tool policy carrying this entry, or ``None`` when it names no tools."""
        if not self.tools:
            return None
        return ToolPolicy(
            name=f"{task}:{self.name}",
            patterns=self.tools,
            category=self.category,
            max_tokens=self.max_tokens,
            keep_recent=self.keep_recent,
            supersedable=self.supersedable,
            keep_sources=self.keep_sources,
            normalize=self.category not in ("file_read", "file_edit"),
        )


@dataclass(frozen=True, kw_only=True)
class TaskPolicy:
    """A preset for one kind of agent: what to keep, over which tool policies, with which planner."""

    name: str
    """The preset's name (``get_task_policy(name)``)."""
    description: str
    """What kind of agent it is for."""
    keeps: tuple[Keep, ...]
    """What the agent must keep in view, most important first."""
    base: tuple[ToolPolicy, ...] = CODING_TOOL_POLICIES
    """Tool policies for every tool the entries do not name."""
    planner: PlannerSettings = field(default_factory=PlannerSettings)
    """When and how much to reduce."""
    retrieval_tools: bool = True
    """Offer ``read_range`` and ``recall`` once something is evicted (``ContextPolicy.retrieval_tools``)."""
    client_window_notes: bool = True
    """Open a window a client's own trim started with the pinned goal and a note
    (``ContextPolicy.client_window_notes``)."""

    def __post_init__(self) -> None:
        if not self.name or not self.name.replace("_", "").replace("-", "").isalnum():
            raise ConfigError(f"task policy name {self.name!r} must be a word (letters, digits, _ or -)")
        names = [k.name for k in self.keeps]
        if len(set(names)) != len(names):
            raise ConfigError(f"task policy {self.name!r} lists a Keep name twice: {names}")

    @property
    def tiers(self) -> Mapping[str, Tier]:
        """Each entry's tier, by entry name."""
        return {k.name: k.tier for k in self.keeps}

    @property
    def focus(self) -> str:
        """What a summary of this kind of session must preserve (a compaction ``focus``)."""
        return "Preserve above all: " + "; ".join(
            f"{k.name.replace('_', ' ')}" + (f" ({k.description})" if k.description else "") for k in self.keeps
        )

    def tool_policies(self) -> tuple[ToolPolicy, ...]:
        """The entries' tool policies, highest priority tier first, then the base preset."""
        ordered = sorted((k for k in self.keeps if k.tools), key=lambda k: k.tier)
        own = tuple(p for k in ordered if (p := k.tool_policy(self.name)) is not None)
        return (*own, *self.base)

    def context_policy(self) -> ContextPolicy:
        """The :class:`ContextPolicy` the manager runs with for this kind of agent."""
        return ContextPolicy(
            name=self.name,
            tool_policies=self.tool_policies(),
            planner=self.planner,
            retrieval_tools=self.retrieval_tools,
            client_window_notes=self.client_window_notes,
        )


_FILE_READS = ("read", "read_file", "view", "view_file", "open", "cat", "*read_file*", "mcp__*__read_file")
_EDITS = (
    "edit",
    "multiedit",
    "write",
    "apply_patch",
    "str_replace_editor",
    "str_replace_based_edit_tool",
    "edit_file",
    "write_file",
    "create_file",
    "*edit_file*",
    "*write_file*",
    "git_diff",
    "diff",
)
_DIAGNOSTICS = ("*diagnostic*", "*lint*", "get_errors", "problems", "typecheck", "mypy", "ruff", "eslint", "tsc")
_TESTS = ("run_tests", "run_test", "test", "tests", "pytest", "*run_tests*")

CODING = TaskPolicy(
    name="coding",
    description="Coding agents: change a repository and prove it with tests.",
    keeps=(
        Keep(
            name="tests",
            tools=_TESTS,
            category="test",
            tier=Tier.TASK_STATE,
            keep_recent=5,
            supersedable=True,
            description="the latest run of each test target, failures verbatim",
        ),
        Keep(
            name="diagnostics",
            tools=_DIAGNOSTICS,
            category="test",
            tier=Tier.TASK_STATE,
            keep_recent=5,
            max_tokens=6_000,
            supersedable=True,
            description="current compiler, type and lint errors",
        ),
        Keep(
            name="diffs",
            tools=_EDITS,
            category="file_edit",
            tier=Tier.WORKING_SET,
            keep_recent=12,
            max_tokens=4_000,
            description="what was changed, file by file",
        ),
        Keep(
            name="working_set",
            tools=_FILE_READS,
            category="file_read",
            tier=Tier.WORKING_SET,
            keep_recent=12,
            supersedable=True,
            description="the files being worked on, newest read only",
        ),
    ),
    base=CODING_TOOL_POLICIES,
    planner=PlannerSettings(keep_recent_tool_results=10),
)
"""Working set, diffs, diagnostics and tests."""

_SEARCHES = ("websearch", "web_search", "search_web", "search", "*web_search*", "tavily*", "mcp__*__search*")
_FETCHES = ("webfetch", "web_fetch", "fetch", "fetch_url", "read_url", "*fetch*", "*scrape*", "mcp__fetch__*")
_NOTES = ("*note*", "*claim*", "record_*", "save_finding", "*finding*")

RESEARCH = TaskPolicy(
    name="research",
    description="Deep-research agents: answer a question from many sources, with evidence.",
    keeps=(
        Keep(
            name="claims",
            tools=_NOTES,
            category="default",
            tier=Tier.TASK_STATE,
            keep_recent=50,
            max_tokens=2_000,
            description="what has been established so far",
        ),
        Keep(
            name="evidence",
            tools=_FETCHES,
            category="fetch",
            tier=Tier.WORKING_SET,
            keep_recent=15,
            max_tokens=8_000,
            supersedable=True,
            keep_sources=True,
            description="the passages that support or refute the claims",
        ),
        Keep(
            name="sources",
            tools=_SEARCHES,
            category="search",
            tier=Tier.RECENT_TOOL,
            keep_recent=30,
            max_tokens=6_000,
            supersedable=True,
            keep_sources=True,
            description="every URL consulted, kept even when the text is masked",
        ),
        Keep(
            name="open_questions",
            tools=(),
            tier=Tier.TASK_STATE,
            description="what is still unanswered (pin it, or state it in the summary)",
        ),
    ),
    base=RESEARCH_TOOL_POLICIES,
    planner=PlannerSettings(keep_recent_tool_results=20),
)
"""Claims, evidence, sources and open questions."""

_SNAPSHOTS = (
    "browser_snapshot",
    "*snapshot*",
    "*screenshot*",
    "get_page*",
    "*accessibility*",
    "page_state",
    "browser",
    "computer",
    "mcp__playwright__browser_snapshot",
)
_ACTIONS = (
    "browser_*",
    "click",
    "type",
    "navigate",
    "goto",
    "scroll",
    "press*",
    "select*",
    "hover",
    "mcp__playwright__*",
    "mcp__puppeteer__*",
    "playwright_*",
    "puppeteer_*",
)
_EXTRACTS = ("*extract*", "get_text", "*evaluate*", "read_page", "*get_content*", "*table*")

BROWSER = TaskPolicy(
    name="browser",
    description="Browser agents: reach a target on the web by acting on pages.",
    keeps=(
        Keep(name="target", tools=(), tier=Tier.GOAL, description="what the user wants reached (pinned goal)"),
        Keep(
            name="extracted_data",
            tools=_EXTRACTS,
            category="default",
            tier=Tier.TASK_STATE,
            keep_recent=30,
            max_tokens=4_000,
            description="data already pulled from pages",
        ),
        Keep(
            name="page_state",
            tools=_SNAPSHOTS,
            category="browser",
            tier=Tier.WORKING_SET,
            keep_recent=2,
            max_tokens=8_000,
            supersedable=True,
            description="the current page, newest snapshot only",
        ),
        Keep(
            name="recent_actions",
            tools=_ACTIONS,
            category="browser",
            tier=Tier.RECENT_TOOL,
            keep_recent=10,
            max_tokens=2_000,
            description="the last clicks, inputs and navigations",
        ),
    ),
    base=BROWSER_TOOL_POLICIES,
    planner=PlannerSettings(keep_recent_tool_results=8),
)
"""Current page state, recent actions, target and extracted data."""

PROXY = TaskPolicy(
    name="proxy",
    description="Behind the HTTP proxy: the client keeps its own tools and thinking, nothing is added.",
    keeps=(),
    planner=PlannerSettings(
        keep_recent_tool_results=3,
        drop_old_thinking=False,
        horizon_share=1 / 3,
        uncovered_payback_turns=4.0,
        protection=Protection(exploration_reads=False),
    ),
    retrieval_tools=False,
    client_window_notes=False,
)
"""The default policy as the proxy runs it (``contextwarden proxy`` plans with it; a ``--policy`` preset
gets the same planner changes, :func:`contextwarden.proxy.policy.proxy_policy`).

The proxy forwards the client's own tools (no retrieval tools of ours) and its thinking blocks with
their signatures, so the planner must not count on dropping them, and a client's trim of its own
history is its whole history. The rest is measured with the proxy's matched A/B
(``docs/benchmarks.md``, "Planner defaults and why"): its first batch adds no tool list, so it looks
cheap and comes early unless 3 results stay; a batch the session does not live to pay back costs more
than going direct, so it expects a session to run a third as long again, and one the window's saving
does not cover must pay back within 4 turns (with 8, 3 and 1 of the 99 real SWE-bench sessions cost
more than 1.01x raw under gpt-5 and Claude prices; with 4, none, for 0.5 points of the total); and
holding back an exploring session's reads costs more than it keeps there."""

_PRESETS: dict[str, TaskPolicy] = {p.name: p for p in (CODING, RESEARCH, BROWSER, PROXY)}
_ALIASES = {"deep_research": "research", "deep-research": "research", "web": "browser", "code": "coding"}
_LOCK = threading.Lock()


def register_task_policy(policy: TaskPolicy, *, replace_existing: bool = False) -> None:
    """Make ``policy`` selectable by its name; refuses to replace a preset unless asked."""
    with _LOCK:
        if policy.name in _PRESETS and not replace_existing:
            raise UsageError(f"a task policy named {policy.name!r} exists; pass replace_existing=True")
        _PRESETS[policy.name] = policy


def task_policy_names() -> list[str]:
    """Names of every selectable task policy."""
    with _LOCK:
        return sorted(_PRESETS)


def get_task_preset(name: str) -> TaskPolicy:
    """The :class:`TaskPolicy` called ``name`` (``coding``, ``research``, ``browser`` or one registered)."""
    key = _ALIASES.get(name.lower(), name.lower()) if isinstance(name, str) else ""
    with _LOCK:
        preset = _PRESETS.get(key)
    if preset is None:
        raise UsageError(f"unknown task policy {name!r}; choose one of {task_policy_names()}")
    return preset


def get_task_policy(name: str) -> ContextPolicy:
    """The :class:`ContextPolicy` of the task preset ``name``; vary it with ``dataclasses.replace``."""
    return get_task_preset(name).context_policy()
