"""The 30-tool registry the budget and tool-exposure experiments offer: realistic schemas in capability groups."""

from __future__ import annotations

from typing import Any

from contextwarden.context import ToolDefinition
from contextwarden.tools import ToolRegistry


def _schema(**props: str) -> dict[str, Any]:
    required = [k for k in props if not k.startswith("opt_")]
    properties = {k.removeprefix("opt_"): {"type": "string", "description": v} for k, v in props.items()}
    return {"type": "object", "properties": properties, "required": required}


_TOOLS: tuple[tuple[str, str, str, dict[str, Any]], ...] = (
    (
        "read_file",
        "explore",
        "Read a file from the repository. Returns the contents with line numbers. Use offset "
        "and limit for large files; prefer reading whole files you are about to edit.",
        _schema(
            path="Path relative to the repository root.",
            opt_offset="First line (1-based).",
            opt_limit="Number of lines.",
        ),
    ),
    (
        "grep",
        "explore",
        "Search file contents with a regular expression (ripgrep syntax). Returns matching lines "
        "with file names and line numbers. Narrow the search with a path or a glob.",
        _schema(pattern="The regular expression.", opt_path="Directory or file to search.", opt_glob="File glob."),
    ),
    (
        "list_dir",
        "explore",
        "List the entries of a directory, with sizes, directories first.",
        _schema(path="Directory path."),
    ),
    (
        "glob",
        "explore",
        "Find files whose paths match a glob pattern such as src/**/*.py, newest first.",
        _schema(pattern="The glob."),
    ),
    ("view_image", "explore", "Show an image file from the repository to the model.", _schema(path="Image path.")),
    (
        "edit_file",
        "edit",
        "Replace an exact string in a file with another. The old string must occur exactly once "
        "unless replace_all is set; read the file first so the match is exact.",
        _schema(
            path="File path.",
            old_string="Exact text to replace.",
            new_string="Replacement text.",
            opt_replace_all="Replace every occurrence.",
        ),
    ),
    (
        "write_file",
        "edit",
        "Create or overwrite a file with the given content.",
        _schema(path="File path.", content="The full new content."),
    ),
    (
        "apply_patch",
        "edit",
        "Apply a unified diff to the working tree. Fails without changing anything if a hunk does not apply.",
        _schema(patch="The unified diff."),
    ),
    ("delete_file", "edit", "Delete a file from the working tree.", _schema(path="File path.")),
    ("move_file", "edit", "Move or rename a file.", _schema(source="Current path.", destination="New path.")),
    (
        "bash",
        "execute",
        "Run a shell command in the repository and return its output and exit code. Commands time "
        "out after 120 seconds; do not start interactive programs.",
        _schema(command="The command line.", opt_timeout="Seconds before it is stopped."),
    ),
    (
        "run_tests",
        "execute",
        "Run the project's test suite, or a subset selected by a pytest node id or -k "
        "expression, and return the summary with failures.",
        _schema(opt_selector="Node id or -k expression."),
    ),
    (
        "python",
        "execute",
        "Run a Python snippet in a fresh interpreter and return stdout and stderr.",
        _schema(code="The Python source."),
    ),
    (
        "install_package",
        "execute",
        "Install a Python package into the project's virtual environment.",
        _schema(name="Package name.", opt_version="Version specifier."),
    ),
    (
        "git_status",
        "execute",
        "Show the working tree status and the diff of staged and unstaged changes.",
        _schema(opt_path="Limit to a path."),
    ),
    ("git_commit", "release", "Commit the staged changes with a message.", _schema(message="Commit message.")),
    ("git_push", "release", "Push the current branch to its remote.", _schema(opt_remote="Remote name.")),
    (
        "create_pull_request",
        "release",
        "Open a pull request from the current branch with a title and a body.",
        _schema(title="Title.", body="Description in Markdown.", opt_base="Target branch."),
    ),
    (
        "deploy",
        "release",
        "Deploy the current build to an environment (staging or production).",
        _schema(environment="staging or production."),
    ),
    (
        "publish_package",
        "release",
        "Build and upload the package to the package index.",
        _schema(opt_repository="Index name."),
    ),
    (
        "web_search",
        "web",
        "Search the web and return the top results with titles, URLs and snippets.",
        _schema(query="Search query.", opt_count="Number of results."),
    ),
    ("fetch_url", "web", "Fetch a web page and return its main text as Markdown.", _schema(url="The URL.")),
    (
        "browser_navigate",
        "browser",
        "Open a URL in the browser session and return the page's accessibility tree.",
        _schema(url="The URL."),
    ),
    (
        "browser_click",
        "browser",
        "Click an element of the current page by its reference from the accessibility tree.",
        _schema(ref="Element reference."),
    ),
    ("browser_screenshot", "browser", "Take a screenshot of the current page.", _schema(opt_full_page="Whole page.")),
    (
        "sql_query",
        "data",
        "Run a read-only SQL query against the development database and return up to 200 rows.",
        _schema(query="The SQL."),
    ),
    (
        "send_slack_message",
        "comms",
        "Post a message to a Slack channel.",
        _schema(channel="Channel name.", text="Message text."),
    ),
    (
        "create_issue",
        "comms",
        "Create an issue in the tracker with a title, a body and labels.",
        _schema(title="Title.", body="Body.", opt_labels="Comma-separated labels."),
    ),
    (
        "todo_write",
        "meta",
        "Replace the task list with the given items and their statuses.",
        _schema(items="JSON list of {content, status}."),
    ),
    ("ask_user", "meta", "Ask the user a question and wait for the answer.", _schema(question="The question.")),
)

NEEDED_TOOLS: tuple[str, ...] = ("read_file", "grep", "list_dir", "edit_file", "bash")
"""The five tools the scripted coding session actually uses (list_dir stands in for the exploration it may do)."""


def tool_registry() -> ToolRegistry:
    """A registry of 30 realistic tools in capability groups (no built-in tools)."""
    registry = ToolRegistry(include_builtins=False)
    for name, group, description, parameters in _TOOLS:
        registry.register(ToolDefinition(name=name, description=description, parameters=parameters, group=group))
    return registry
