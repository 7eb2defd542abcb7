from __future__ import annotations

import dataclasses

import pytest

from contextwarden.errors import ConfigError, UsageError
from contextwarden.log.events import JSONValue, ToolCall, ToolResult
from contextwarden.tokens import HeuristicCounter
from contextwarden.window.policies.placeholders import (
    extract_sources,
    masked_placeholder,
    render_call,
    stale_placeholder,
    superseded_placeholder,
)
from contextwarden.window.policies.presets import (
    BROWSER_TOOL_POLICIES,
    CODING_TOOL_POLICIES,
    DEFAULT_TOOL_POLICY,
    RESEARCH_TOOL_POLICIES,
    ToolPolicy,
    apply_policy,
    policy_for,
    policy_text,
    tool_policy_preset,
)

COUNTER = HeuristicCounter()


def _call(name: str, **arguments: JSONValue) -> ToolCall:
    return ToolCall(id="call_7", name=name, arguments=arguments)


@pytest.mark.parametrize(
    ("tool", "expected"),
    [
        # Claude Code
        ("Read", "file_read"), ("Edit", "file_edit"), ("MultiEdit", "file_edit"), ("Write", "file_edit"),
        ("NotebookEdit", "file_edit"), ("Bash", "shell"), ("Grep", "search"), ("Glob", "search"),
        ("WebFetch", "fetch"), ("WebSearch", "web_search"), ("TodoWrite", "meta"), ("Task", "meta"),
        # Codex
        ("shell", "shell"), ("local_shell", "shell"), ("exec_command", "shell"), ("apply_patch", "file_edit"),
        ("read_file", "file_read"), ("update_plan", "meta"), ("list_dir", "search"), ("grep_files", "search"),
        # SWE-agent
        ("open", "file_read"), ("goto", "file_read"), ("scroll_up", "file_read"), ("scroll_down", "file_read"),
        ("edit", "file_edit"), ("create", "file_edit"), ("find_file", "search"), ("search_file", "search"),
        ("search_dir", "search"), ("submit", "meta"), ("python", "shell"), ("bash", "shell"),
        ("str_replace_editor", "editor"),
        # OpenHands
        ("execute_bash", "shell"), ("browser", "browser"), ("fetch", "fetch"), ("think", "meta"),
        ("finish", "meta"), ("execute_ipython_cell", "shell"),
        # MCP and browsers
        ("mcp__filesystem__read_file", "file_read"), ("mcp__filesystem__write_file", "file_edit"),
        ("mcp__filesystem__search_files", "search"), ("mcp__playwright__browser_navigate", "browser"),
        ("mcp__playwright__browser_snapshot", "browser"), ("browser_click", "browser"),
        ("mcp__fetch__fetch", "fetch"), ("mcp__brave__brave_web_search", "web_search"),
        ("mcp__github__search_code", "search"), ("puppeteer_screenshot", "browser"),
        # retrieval and unknown
        ("read_range", "retrieval"), ("recall", "retrieval"), ("frobnicate", "default"),
    ],
)  # fmt: skip
def test_coding_preset_matches_common_tool_names(tool: str, expected: str) -> None:
    assert policy_for(tool, None, CODING_TOOL_POLICIES).name == expected


def test_matching_is_case_insensitive() -> None:
    assert policy_for("READ_FILE", None, CODING_TOOL_POLICIES).name == "file_read"
    assert policy_for("Execute_Bash", None, CODING_TOOL_POLICIES).name == "shell"
    assert ToolPolicy(name="x", patterns=("My*Tool",), category="default").matches("mysupertool")


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("pytest -q tests/test_a.py", "test"),
        ("cd repo && python -m pytest 2>&1 | tail -40", "test"),
        ("npm test", "test"),
        ("cat src/a.py", "file_read"),
        ("sed -n '1,50p' src/a.py", "file_read"),
        ("grep -rn foo src", "search"),
        ("make build", "shell"),
        ("cat a.py > b.py", "shell"),
    ],
)
def test_shell_calls_are_classified_by_their_command(command: str, expected: str) -> None:
    for tool in ("Bash", "execute_bash", "shell"):
        call = _call(tool, command=command)
        assert policy_for(tool, call, CODING_TOOL_POLICIES).name == expected


def test_unknown_tool_gets_the_default_policy() -> None:
    assert policy_for("frobnicate", None, ()) is DEFAULT_TOOL_POLICY
    policies = tuple(p for p in CODING_TOOL_POLICIES if p.patterns != ("*",))
    assert policy_for("frobnicate", None, policies) is DEFAULT_TOOL_POLICY


def test_a_prepended_policy_wins() -> None:
    sql = ToolPolicy(name="sql", patterns=("run_query", "mcp__*__query"), category="search", max_tokens=3_000)
    policies = (sql, *CODING_TOOL_POLICIES)
    assert policy_for("run_query", None, policies) is sql
    assert policy_for("mcp__postgres__query", None, policies) is sql
    assert policy_for("Read", None, policies).name == "file_read"


def test_reclassification_falls_back_to_the_shell_policy_without_a_test_policy() -> None:
    policies = tuple(p for p in CODING_TOOL_POLICIES if p.category != "test")
    assert policy_for("Bash", _call("Bash", command="pytest"), policies).name == "shell"


def test_presets_by_name_and_their_retention() -> None:
    assert tool_policy_preset("coding") is CODING_TOOL_POLICIES
    with pytest.raises(UsageError, match="browser"):
        tool_policy_preset("nope")
    research = policy_for("WebSearch", None, RESEARCH_TOOL_POLICIES)
    assert (
        research.keep_sources and research.keep_recent > policy_for("WebSearch", None, CODING_TOOL_POLICIES).keep_recent
    )
    assert policy_for("WebFetch", None, RESEARCH_TOOL_POLICIES).keep_sources
    browser = policy_for("mcp__playwright__browser_snapshot", None, BROWSER_TOOL_POLICIES)
    assert browser.name == "browser_state" and browser.supersedable and browser.keep_recent == 2
    assert policy_for("Bash", None, BROWSER_TOOL_POLICIES).name == "shell"
    for preset in (CODING_TOOL_POLICIES, RESEARCH_TOOL_POLICIES, BROWSER_TOOL_POLICIES):
        assert preset[-1] is DEFAULT_TOOL_POLICY
        assert all(p.max_tokens <= 10_000 for p in preset)


def test_file_reads_supersede_and_stay_exact() -> None:
    read = policy_for("Read", None, CODING_TOOL_POLICIES)
    assert read.supersedable and not read.normalize and not read.keep_error_lines
    assert policy_for("pytest", None, CODING_TOOL_POLICIES).supersedable
    assert not policy_for("Bash", None, CODING_TOOL_POLICIES).supersedable


def test_bad_policies_are_refused() -> None:
    with pytest.raises(ConfigError):
        ToolPolicy(name="x", patterns=(), category="shell")
    with pytest.raises(ConfigError):
        ToolPolicy(name="x", patterns=("*",), category="nonsense")  # type: ignore[arg-type]
    with pytest.raises(ConfigError):
        ToolPolicy(name="x", patterns=("*",), category="shell", max_tokens=0)
    with pytest.raises(ConfigError):
        ToolPolicy(name="x", patterns=("*",), category="shell", head_fraction=2.0)
    policy = dataclasses.replace(DEFAULT_TOOL_POLICY, max_tokens=500)
    assert policy.max_tokens == 500


def test_policy_text_normalizes_shell_but_keeps_file_contents_exact() -> None:
    output = "}\n}\n}\n\x1b[31mred\x1b[0m\x00\n"
    shell = policy_for("Bash", None, CODING_TOOL_POLICIES)
    read = policy_for("Read", None, CODING_TOOL_POLICIES)
    assert policy_text(output, shell) == "}\n[... previous line repeated 2 more times]\nred\\x00\n"
    assert policy_text(output, read) == "}\n}\n}\n\x1b[31mred\x1b[0m\\x00\n"


def test_apply_policy_bounds_by_the_policy_and_an_optional_lower_cap() -> None:
    log = "".join(f"step {i}: compiling module_{i}.c with -O2\n" for i in range(5_000))
    shell = policy_for("Bash", None, CODING_TOOL_POLICIES)
    cut = apply_policy(log, shell, counter=COUNTER, artifact_id="r1")
    assert cut.truncated and COUNTER.count(cut.text) <= shell.max_tokens
    lower = apply_policy(log, shell, counter=COUNTER, artifact_id="r1", max_tokens=1_000)
    assert COUNTER.count(lower.text) <= 1_000
    higher = apply_policy(log, shell, counter=COUNTER, artifact_id="r1", max_tokens=50_000)
    assert COUNTER.count(higher.text) <= shell.max_tokens


# --------------------------------------------------------------------------- placeholders


def _result(call: ToolCall, **kw: object) -> ToolResult:
    return ToolResult(id="evt_123", call_id=call.id, tool_name=call.name, output="x", **kw)  # type: ignore[arg-type]


def test_render_call_puts_identity_first_and_caps() -> None:
    call = _call("Edit", old_string="a" * 5_000, new_string="b", file_path="src/a.py")
    assert render_call(call) == 'Edit(file_path="src/a.py", old_string=<5,000 chars>, new_string=<1 chars>)'
    long = render_call(_call("Bash", command="echo " + "word " * 100))
    assert len(long) <= len("Bash()") + 120 and long.endswith("…)")
    assert render_call(_call("shell", command=["bash", "-lc", "ls"])) == 'shell(command="bash -lc ls")'
    assert render_call(None, "mystery") == "mystery(…)"
    assert render_call(_call("bash", _raw="open a.py\n10")) == 'bash("open a.py\\n10")'


def test_masked_placeholder_is_one_deterministic_line() -> None:
    call = _call("Bash", command="pytest -q\ntests/")
    result = _result(call, exit_code=1)
    text = masked_placeholder(call, result, tokens=4_321, lines=250)
    assert "\n" not in text
    assert text == masked_placeholder(call, result, tokens=4_321, lines=250)
    assert text.startswith('[output of Bash(command="pytest -q\\ntests/") (failed) masked')
    assert "4,321 tokens, 250 lines" in text
    assert 'read_range(artifact_id="evt_123", start_line=1, end_line=250)' in text


def test_masked_placeholder_keeps_sources() -> None:
    call = _call("WebSearch", query="bm25")
    text = masked_placeholder(call, _result(call), tokens=900, lines=40, sources=("https://a.org/x",))
    assert "Sources: https://a.org/x." in text


def test_superseded_and_stale_placeholders_name_the_later_call() -> None:
    call = _call("Read", file_path="src/a.py")
    result = _result(call)
    sup = superseded_placeholder(call, result, tokens=1_000, lines=80, by="Read call toolu_41")
    assert "superseded by the later Read call toolu_41:" in sup and "\n" not in sup and "seq" not in sup
    assert 'artifact_id="evt_123"' in sup
    stale = stale_placeholder(call, result, tokens=1_000, lines=80, by="Edit call toolu_45")
    assert "is stale: the later Edit call toolu_45 changed it" in stale and "\n" not in stale
    assert "read the current version" in stale


def test_placeholder_with_unknown_call_and_undecodable_arguments() -> None:
    orphan = ToolResult(id="evt_9", call_id="missing", tool_name="Bash", output="")
    text = masked_placeholder(None, orphan, tokens=0, lines=0)
    assert text.startswith("[output of Bash(…) masked") and "end_line=1" in text
    weird = _call("Read", file_path="bad\udcffname")
    rendered = masked_placeholder(weird, _result(weird), tokens=1, lines=1)
    rendered.encode("utf-8")


def test_extract_sources() -> None:
    text = "See https://a.org/x. Also (https://b.org/y) and https://a.org/x again, http://c.io/z?q=1,"
    assert extract_sources(text) == ("https://a.org/x", "https://b.org/y", "http://c.io/z?q=1")
    assert extract_sources(text, limit=1) == ("https://a.org/x",)
