"""Tool policies and the task presets built from them.

A :class:`ToolPolicy` says, for the tools whose names match its patterns, how their output is
normalized, how far it is truncated at ingestion, how many recent results stay verbatim, and
whether a newer result on the same resource supersedes an older one. :func:`policy_for` picks
the first policy that matches a tool name; a shell call whose command only runs tests, reads
files or searches is classified by its command instead.

Presets are plain tuples, so a new kind of agent is one line away::

    MY_POLICIES = (ToolPolicy(name="sql", patterns=("run_query",), category="search"), *CODING_TOOL_POLICIES)
"""

from __future__ import annotations

import fnmatch
import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal

from ...errors import ConfigError, UsageError
from ...log.events import ToolCall
from ..tiers import Tier
from .bytecut import truncate_bytes
from .normalize import normalize_output, sanitize_output
from .placeholders import Retrievable
from .resources import classify_command, command_of, command_program
from .truncate import Truncation, truncate_output

if TYPE_CHECKING:
    from ...tokens import TokenCounter

__all__ = [
    "BROWSER_TOOL_POLICIES",
    "CODING_BYTES_TOOL_POLICIES",
    "CODING_TOOL_POLICIES",
    "DEFAULT_TOOL_POLICY",
    "RESEARCH_TOOL_POLICIES",
    "TOOL_POLICY_PRESETS",
    "Category",
    "ToolPolicy",
    "apply_policy",
    "policy_for",
    "policy_text",
    "tool_policy_preset",
]

Category = Literal["file_read", "file_edit", "shell", "search", "test", "browser", "fetch", "retrieval", "default"]
CATEGORIES: tuple[str, ...] = (
    "file_read",
    "file_edit",
    "shell",
    "search",
    "test",
    "browser",
    "fetch",
    "retrieval",
    "default",
)


@dataclass(frozen=True, kw_only=True)
class ToolPolicy:
    """How the output of matching tools is normalized, bounded and retained."""

    name: str
    """A label for the decision log and ``inspect``."""
    patterns: tuple[str, ...]
    """Case-insensitive ``fnmatch`` patterns on the tool name (``Read``, ``mcp__*__read_file``)."""
    category: Category
    """What the tool does; decides resource identity and how shell commands are reclassified."""
    max_tokens: int = 10_000
    """Truncation limit at ingestion (the item never grows past it)."""
    head_fraction: float = 0.5
    """Share of the kept lines taken from the head; the rest come from the tail."""
    keep_error_lines: bool = True
    """Keep error-like lines from the cut middle (with their line numbers)."""
    error_line_budget_fraction: float = 0.2
    """Share of the budget reserved for those error lines (unused share goes to head and tail)."""
    keep_recent: int | None = None
    """How many of the most recent results of this policy stay verbatim when older ones are masked: a
    floor on top of the planner's ``keep_recent_tool_results`` (None: only the planner's floor)."""
    tier: Tier = Tier.RECENT_TOOL
    """Priority tier of its results: under pressure higher tiers are masked first."""
    normalize: bool = True
    """Full terminal normalization (ANSI, progress bars, repeats); False keeps the text exact
    except for NUL and undecodable bytes (for file contents that edits must match)."""
    supersedable: bool = False
    """A newer result of this policy on the same resource supersedes the older ones (file reads of the
    same lines, runs of the same test target, the same page); False keeps every one until masked."""
    keep_sources: bool = False
    """When masked, the placeholder keeps the URLs the output cited (research)."""
    odd_lines: int = 2
    """Up to this many lines of a shape a repetitive output says only once (a key, a name, a warning
    in a build log) are kept from a cut middle and quoted by the mask placeholder; 0 quotes none."""
    max_bytes: int | None = None
    """Cut to this many bytes from the middle with a warning header instead (``docs/behaviours.md``, row 51;
    :mod:`.bytecut`); ``max_tokens`` still bounds the result. None: the token cut, with error lines and the
    marker at the cut."""

    def __post_init__(self) -> None:
        if not self.patterns:
            raise ConfigError(f"tool policy {self.name!r} has no patterns")
        if self.category not in CATEGORIES:
            raise ConfigError(f"tool policy {self.name!r}: unknown category {self.category!r}; use one of {CATEGORIES}")
        if self.max_tokens < 1 or (self.keep_recent is not None and self.keep_recent < 0):
            raise ConfigError(f"tool policy {self.name!r}: max_tokens must be >= 1 and keep_recent >= 0")
        if self.max_bytes is not None and self.max_bytes < 2:
            raise ConfigError(f"tool policy {self.name!r}: max_bytes must be >= 2 (or None)")
        if not 0 <= self.head_fraction <= 1 or not 0 <= self.error_line_budget_fraction < 1:
            raise ConfigError(f"tool policy {self.name!r}: fractions must be within [0, 1)")

    def matches(self, tool_name: str) -> bool:
        """Whether the policy applies to ``tool_name`` (case-insensitive)."""
        return _matcher(self.patterns).match(tool_name.lower()) is not None


@functools.lru_cache(maxsize=512)
def _matcher(patterns: tuple[str, ...]) -> re.Pattern[str]:
    """One compiled regex for a policy's patterns (matching runs for every tool result)."""
    return re.compile("|".join(f"(?:{fnmatch.translate(p.lower())})" for p in patterns))


def _reclassified(policies: Sequence[ToolPolicy], command: str) -> ToolPolicy | None:
    """Pick the policy for a shell command that only runs tests, reads files or searches.

    The first policy of that category whose patterns name the program (``grep`` → the search
    policy) wins, else the first of that category.
    """
    kind = classify_command(command)
    if not kind:
        return None
    program = command_program(command).lower()
    same = [p for p in policies if p.category == kind]
    named = next((p for p in same if _matcher(p.patterns).match(program)), None)
    return named or (same[0] if same else None)


def policy_for(tool_name: str, call: ToolCall | None, policies: Sequence[ToolPolicy]) -> ToolPolicy:
    """Return the first policy matching ``tool_name`` (the default policy when none does).

    A shell call whose command only runs tests, reads files or searches gets the ``test``,
    ``file_read`` or ``search`` policy instead.
    """
    lowered = tool_name.lower()
    for policy in policies:
        if _matcher(policy.patterns).match(lowered) is None:
            continue
        if policy.category == "shell" and call is not None:
            command = command_of(call)
            better = _reclassified(policies, command) if command else None
            if better is not None:
                return better
        return policy
    return DEFAULT_TOOL_POLICY


def policy_text(output: str, policy: ToolPolicy) -> str:
    """Return the text ingestion truncates (and ``read_range`` numbers): normalized or only sanitized."""
    return (normalize_output(output) if policy.normalize else sanitize_output(output)).text


def apply_policy(
    output: str,
    policy: ToolPolicy,
    *,
    counter: TokenCounter,
    artifact_id: str,
    max_tokens: int | None = None,
    retrievable: Retrievable = True,
) -> Truncation:
    """Normalize and truncate one tool output under ``policy`` (``max_tokens`` can only lower its cap).

    ``retrievable``: how the model gets omitted lines back (:data:`~.placeholders.Retrievable`), which the marker names.
    """
    limit = policy.max_tokens if max_tokens is None else min(max_tokens, policy.max_tokens)
    text = policy_text(output, policy)
    if policy.max_bytes is not None:
        cut = truncate_bytes(text, max_bytes=policy.max_bytes, counter=counter, artifact_id=artifact_id,
                             retrievable=retrievable)  # fmt: skip
        if not cut.truncated or counter.count(cut.text) <= limit:
            return cut
    return truncate_output(
        text,
        max_tokens=limit,
        counter=counter,
        artifact_id=artifact_id,
        head_fraction=policy.head_fraction,
        keep_error_lines=policy.keep_error_lines,
        error_line_budget_fraction=policy.error_line_budget_fraction,
        retrievable=retrievable,
        odd_lines=policy.odd_lines,
    )


# --------------------------------------------------------------------------- patterns
# fmt: off
_RETRIEVAL = ("read_range", "recall", "mcp__*__read_range", "mcp__*__recall")
_EDITOR = ("str_replace_editor", "str_replace_based_edit_tool", "text_editor", "*text_editor*", "editor")
_FILE_EDIT = (
    "edit", "multiedit", "write", "notebookedit", "apply_patch", "applypatch", "create", "insert", "undo_edit",
    "write_file", "edit_file", "create_file", "delete_file", "move_file", "replace", "str_replace",
    "replace_in_file", "write_to_file", "edit_notebook", "mcp__*__write_file", "mcp__*__edit_file",
    "mcp__*__create_file", "mcp__*__move_file", "*edit_file*", "*write_file*",
)
_FILE_READ = (
    "read", "read_file", "readfile", "view", "view_file", "open", "goto", "scroll_up", "scroll_down",
    "notebookread", "read_notebook", "view_image", "read_many_files", "cat", "head", "tail", "sed", "nl",
    "mcp__*__read_file", "mcp__*__read_text_file", "mcp__*__read_multiple_files", "mcp__*__get_file_contents",
    "*read_file*",
)
_SHELL = (
    "bash", "shell", "sh", "zsh", "local_shell", "exec_command", "write_stdin", "execute_bash", "execute_command",
    "run_command", "run_shell_command", "run_terminal_cmd", "terminal", "cmd", "powershell", "python",
    "execute_ipython_cell", "ipython", "jupyter", "mcp__*__execute_command", "mcp__*__run_command",
    "mcp__*__shell*", "mcp__*__bash*",
)
_TEST = ("run_tests", "run_test", "test", "tests", "pytest", "*run_tests*")
_BROWSER = (
    "browser", "browser_*", "web_browser", "computer", "mcp__playwright__*", "mcp__puppeteer__*",
    "mcp__*browser*", "playwright_*", "puppeteer_*", "*browser*", "*screenshot*",
)
_FETCH = (
    "webfetch", "web_fetch", "fetch", "fetch_url", "read_url", "web_read", "http_get", "url_fetch",
    "mcp__fetch__*", "mcp__*__fetch*", "*scrape*", "*fetch*", "*crawl*",
)
_WEB_SEARCH = (
    "websearch", "web_search", "search_web", "google_search", "bing_search", "brave_search", "tavily*",
    "exa_search", "*web_search*", "mcp__*__*web_search*",
)
_SEARCH = (
    "grep", "glob", "ls", "list_dir", "list_directory", "list_files", "find", "find_file", "search_file",
    "search_dir", "search", "codebase_search", "file_search", "grep_search", "grep_files", "ripgrep", "rg",
    "directory_tree", "tree", "mcp__*__search*", "mcp__*__list_directory", "mcp__*__directory_tree",
    "mcp__*__find*", "mcp__*__grep*", "*search*", "*grep*",
)
_META = (
    "think", "finish", "submit", "update_plan", "todowrite", "todoread", "exit_plan_mode", "task", "agent",
    "attempt_completion", "ask_followup_question", "plan",
)
# fmt: on

DEFAULT_TOOL_POLICY = ToolPolicy(name="default", patterns=("*",), category="default", supersedable=True)
"""Unknown tools: 10,000 tokens, half head half tail, error lines kept, the planner's floor only; a
newer read of the same file (found from a ``path``-like argument) supersedes the older one."""

RETRIEVAL_POLICY = ToolPolicy(
    name="retrieval", patterns=_RETRIEVAL, category="retrieval", keep_recent=5, normalize=False
)
EDITOR_POLICY = ToolPolicy(
    name="editor", patterns=_EDITOR, category="file_edit", head_fraction=0.6, keep_error_lines=False,
    normalize=False, supersedable=True,
)  # fmt: skip
"""Editors that also view files (``str_replace_editor view``): a newer view of the same lines supersedes."""
FILE_EDIT_POLICY = ToolPolicy(
    name="file_edit", patterns=_FILE_EDIT, category="file_edit", max_tokens=4_000, normalize=False
)
FILE_READ_POLICY = ToolPolicy(
    name="file_read", patterns=_FILE_READ, category="file_read", head_fraction=0.6, keep_error_lines=False,
    normalize=False, supersedable=True,
)  # fmt: skip
SHELL_POLICY = ToolPolicy(name="shell", patterns=_SHELL, category="shell", head_fraction=0.4)
TEST_POLICY = ToolPolicy(
    name="test", patterns=_TEST, category="test", head_fraction=0.3, error_line_budget_fraction=0.3,
    supersedable=True,
)  # fmt: skip
SEARCH_POLICY = ToolPolicy(
    name="search", patterns=_SEARCH, category="search", max_tokens=6_000, head_fraction=0.7,
    keep_error_lines=False, supersedable=True, tier=Tier.HISTORY,
)  # fmt: skip
WEB_SEARCH_POLICY = ToolPolicy(
    name="web_search", patterns=_WEB_SEARCH, category="search", max_tokens=6_000, head_fraction=0.8,
    keep_error_lines=False, keep_recent=5, supersedable=True,
)  # fmt: skip
FETCH_POLICY = ToolPolicy(
    name="fetch", patterns=_FETCH, category="fetch", head_fraction=0.7, keep_error_lines=False, keep_recent=5,
    supersedable=True,
)  # fmt: skip
BROWSER_POLICY = ToolPolicy(
    name="browser", patterns=_BROWSER, category="browser", max_tokens=8_000, head_fraction=0.6,
    keep_error_lines=False, keep_recent=3, supersedable=True,
)  # fmt: skip
META_POLICY = ToolPolicy(name="meta", patterns=_META, category="default", max_tokens=4_000, tier=Tier.METADATA)

CODING_TOOL_POLICIES: tuple[ToolPolicy, ...] = (
    RETRIEVAL_POLICY, EDITOR_POLICY, FILE_EDIT_POLICY, FILE_READ_POLICY, SHELL_POLICY, TEST_POLICY,
    WEB_SEARCH_POLICY, BROWSER_POLICY, FETCH_POLICY, SEARCH_POLICY, META_POLICY, DEFAULT_TOOL_POLICY,
)  # fmt: skip
"""Coding agents: file reads exact and superseded by newer reads, shell and test output normalized
with error lines kept (tests keep more and let a newer run supersede), edits short."""

RESEARCH_TOOL_POLICIES: tuple[ToolPolicy, ...] = (
    RETRIEVAL_POLICY,
    ToolPolicy(
        name="research_search", patterns=(*_WEB_SEARCH, "search", "mcp__*__search*"), category="search",
        max_tokens=8_000, head_fraction=0.8, keep_error_lines=False, keep_recent=30, supersedable=True,
        keep_sources=True,
    ),
    ToolPolicy(
        name="research_fetch", patterns=_FETCH, category="fetch", head_fraction=0.8, keep_error_lines=False,
        keep_recent=15, supersedable=True, keep_sources=True,
    ),
    *CODING_TOOL_POLICIES[1:],
)  # fmt: skip
"""Deep research: search and fetch results stay longer and keep their sources (URLs) when masked."""

BROWSER_TOOL_POLICIES: tuple[ToolPolicy, ...] = (
    RETRIEVAL_POLICY,
    ToolPolicy(
        name="browser_state", patterns=_BROWSER, category="browser", max_tokens=8_000, head_fraction=0.7,
        keep_error_lines=False, keep_recent=2, supersedable=True,
    ),
    *CODING_TOOL_POLICIES[1:],
)  # fmt: skip
"""Browser agents: only the newest page states stay; a newer snapshot supersedes the older ones."""

CODING_BYTES_TOOL_POLICIES: tuple[ToolPolicy, ...] = (
    RETRIEVAL_POLICY,
    *(replace(p, max_bytes=10_000) for p in CODING_TOOL_POLICIES[1:]),
)
"""The coding preset cutting by bytes: 10,000 from the middle under a header (``docs/behaviours.md``, row 51)."""

TOOL_POLICY_PRESETS: dict[str, tuple[ToolPolicy, ...]] = {
    "coding": CODING_TOOL_POLICIES,
    "coding-bytes": CODING_BYTES_TOOL_POLICIES,
    "research": RESEARCH_TOOL_POLICIES,
    "browser": BROWSER_TOOL_POLICIES,
}
"""Presets by name."""


def tool_policy_preset(name: str) -> tuple[ToolPolicy, ...]:
    """Return the preset called ``name`` (``coding``, ``coding-bytes``, ``research``, ``browser``)."""
    try:
        return TOOL_POLICY_PRESETS[name]
    except KeyError:
        raise UsageError(f"unknown tool-policy preset {name!r}; choose one of {sorted(TOOL_POLICY_PRESETS)}") from None
