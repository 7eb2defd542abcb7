from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextwarden.log.events import JSONValue, ToolCall
from contextwarden.window.policies._shell import PIPED_PART as PIPED
from contextwarden.window.policies.resources import (
    Resource,
    affects,
    classify_command,
    command_of,
    covers,
    normalize_path,
    normalize_url,
    opened_file,
    resources_of,
)


def _call(name: str, **arguments: JSONValue) -> ToolCall:
    return ToolCall(id="call_1", name=name, arguments=arguments)


def _r(kind: str, key: str, access: str, part: str = "") -> Resource:
    return Resource(kind=kind, key=key, access=access, part=part)  # type: ignore[arg-type]


def _shell(command: str, **kw: str) -> tuple[Resource, ...]:
    return resources_of(_call("Bash", command=command), "shell", **kw)


@pytest.mark.parametrize(
    ("path", "cwd", "expected"),
    [
        ("./src//a.py", "", "src/a.py"),
        ("src/pkg/../a.py", "", "src/a.py"),
        ("../up.py", "", "../up.py"),
        ("/repo/./src/../b.py", "", "/repo/b.py"),
        ("/../etc/x", "", "/etc/x"),
        ("a.py", "/repo", "/repo/a.py"),
        ("/abs/a.py", "/repo", "/abs/a.py"),
        (".", "", "."),
        ("src/", "", "src"),
        ("file:///repo/a.py", "", "/repo/a.py"),
        ("~/notes.md", "/repo", "~/notes.md"),
    ],
)
def test_normalize_path(path: str, cwd: str, expected: str) -> None:
    assert normalize_path(path, cwd) == expected


def test_normalize_url() -> None:
    assert normalize_url("HTTPS://Example.COM/Docs/Page?q=1#section") == "https://example.com/Docs/Page?q=1"
    assert normalize_url("https://example.com/") == "https://example.com"
    assert normalize_url("not a url") == "not a url"


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("cat ./src//a.py", [("file", "src/a.py", "read", "")]),
        ("cat a.py b.py | grep foo", [("file", "a.py", "read", PIPED), ("file", "b.py", "read", PIPED)]),
        ("head -n 50 src/a.py", [("file", "src/a.py", "read", "lines 1-50")]),
        ("head -20 a.py", [("file", "a.py", "read", "lines 1-20")]),
        ("head a.py", [("file", "a.py", "read", "lines 1-10")]),
        ("tail -n 30 log.txt", [("file", "log.txt", "read", "last 30 lines")]),
        ("tail -n +100 log.txt", [("file", "log.txt", "read", "from line 100")]),
        ("sed -n '10,20p' src/a.py", [("file", "src/a.py", "read", "lines 10-20")]),
        ("sed -n 5p a.py", [("file", "a.py", "read", "lines 5-5")]),
        ("sed -n '100,$p' a.py", [("file", "a.py", "read", "from line 100")]),
        ("nl -ba src/a.py | sed -n '1,40p'", [("file", "src/a.py", "read", PIPED)]),
        ("less README.md", [("file", "README.md", "read", "")]),
        ("cd src && cat pkg/mod.py", [("file", "src/pkg/mod.py", "read", "")]),
        ("cd /repo; cd lib && cat ../x.py", [("file", "/repo/x.py", "read", "")]),
        ("sed -i 's/old/new/g' src/a.py", [("file", "src/a.py", "write", "")]),
        ("sed -i.bak -e 's/a/b/' x.py y.py", [("file", "x.py", "write", ""), ("file", "y.py", "write", "")]),
        ("echo hello > out.txt", [("file", "out.txt", "write", "")]),
        ("printf 'x' >> log.txt 2>&1", [("file", "log.txt", "write", "")]),
        ("python run.py 2> err.log", [("file", "err.log", "write", "")]),
        ("make build > /dev/null 2>&1", []),
        ("python - < input.txt", [("file", "input.txt", "read", "")]),
        ("echo x | tee a.txt", [("file", "a.txt", "write", "")]),
        ("echo x | tee -a a.txt b.txt", [("file", "a.txt", "write", ""), ("file", "b.txt", "write", "")]),
        ("rm -rf build/ dist", [("file", "build", "write", ""), ("file", "dist", "write", "")]),
        ("mv old.py new.py", [("file", "old.py", "write", ""), ("file", "new.py", "write", "")]),
        ("cp a.py b.py", [("file", "a.py", "read", ""), ("file", "b.py", "write", "")]),
        ("touch new.py", [("file", "new.py", "write", "")]),
        ("git checkout -- src/a.py src/b.py", [("file", "src/a.py", "write", ""), ("file", "src/b.py", "write", "")]),
        ("git restore src/a.py", [("file", "src/a.py", "write", "")]),
        ("git restore --staged src/a.py", []),
        ("git reset --hard HEAD", [("file", ".", "write", "")]),
        ("git diff && git status", []),
        ("patch -p1 src/a.py < fix.diff", [("file", "fix.diff", "read", ""), ("file", "src/a.py", "write", "")]),
        ("perl -pi -e 's/a/b/' conf.ini", [("file", "conf.ini", "write", "")]),
        ("grep -rn 'def foo' src/", [("search", "grep -rn def foo src/", "read", "")]),
        ("rg TODO", [("search", "rg TODO", "read", "")]),
        ("find . -name '*.py'", [("search", "find . -name *.py", "read", "")]),
        ("git grep -n parse", [("search", "git grep -n parse", "read", "")]),
        ("ls -la", [("search", "ls -la", "read", "")]),
        ("pytest", [("test", "pytest:all", "run", "")]),
        ("pytest -q tests/test_a.py::test_x", [("test", "pytest:tests/test_a.py::test_x", "run", "")]),
        ("python -m pytest -x -k 'foo and not bar' tests/", [("test", "pytest:tests -k foo and not bar", "run", "")]),
        ("python3 -m pytest tests/test_b.py tests/test_a.py -p no:cacheprovider",
         [("test", "pytest:tests/test_a.py", "run", ""), ("test", "pytest:tests/test_b.py", "run", "")]),
        ("cd sub && pytest ./tests/../tests/t.py", [("test", "pytest:sub/tests/t.py", "run", "")]),
        ("FOO=1 timeout 300 uv run pytest -q 2>&1 | tail -50", [("test", "pytest:all", "run", "")]),
        ("python -m unittest tests.test_x", [("test", "unittest:tests.test_x", "run", "")]),
        ("python manage.py test auth", [("test", "django:auth", "run", "")]),
        ("./tests/runtests.py queries -v 2", [("test", "runtests:queries", "run", "")]),
        ("npm test", [("test", "npm:all", "run", "")]),
        ("npm run test -- src/a.test.ts", [("test", "npm:src/a.test.ts", "run", "")]),
        ("yarn test", [("test", "yarn:all", "run", "")]),
        ("npx jest src/x.test.js", [("test", "jest:src/x.test.js", "run", "")]),
        ("cargo test parse_header -- --nocapture", [("test", "cargo:parse_header", "run", "")]),
        ("cargo test", [("test", "cargo:all", "run", "")]),
        ("go test ./... -run TestParse", [("test", "go:./... -run TestParse", "run", "")]),
        ("go test", [("test", "go:.", "run", "")]),
        ("tox -e py311", [("test", "tox:py311", "run", "")]),
        ("tox", [("test", "tox:all", "run", "")]),
        ("make test", [("test", "make:test", "run", "")]),
        ("make -j4 test-unit", [("test", "make:test-unit", "run", "")]),
        ("make build", []),
        ("bundle exec rspec spec/a_spec.rb", [("test", "rspec:spec/a_spec.rb", "run", "")]),
        ("mvn -q test", [("test", "mvn:all", "run", "")]),
        ("bash -lc 'cat src/a.py'", [("file", "src/a.py", "read", "")]),
        ("sh -c \"pytest tests\"", [("test", "pytest:tests", "run", "")]),
        ("cat > new.py <<'EOF'\nimport os\nprint(os.getcwd())\nEOF\npython new.py", [("file", "new.py", "write", "")]),
        ("git apply <<'EOF'\ndiff --git a/src/x.py b/src/x.py\n--- a/src/x.py\n+++ b/src/x.py\n"
         "@@ -1 +1 @@\n-a\n+b\nEOF",
         [("file", "src/x.py", "write", "")]),
        ("apply_patch <<'PATCH'\n*** Begin Patch\n*** Update File: a.py\n@@\n-x\n+y\n*** Add File: b.py\n+z\n"
         "*** Delete File: c.py\n*** End Patch\nPATCH",
         [("file", "a.py", "write", ""), ("file", "b.py", "write", ""), ("file", "c.py", "write", "")]),
        ("# just a comment\ncat a.py  # trailing words", [("file", "a.py", "read", "")]),
        ("cat 'my file.py'", [("file", "my file.py", "read", "")]),
        ("echo 'unbalanced", []),
        ("cat <<< 'hello'\ncat a.py", [("file", "a.py", "read", "")]),
        ("", []),
    ],
)  # fmt: skip
def test_shell_command_shapes(command: str, expected: list[tuple[str, str, str, str]]) -> None:
    assert _shell(command) == tuple(_r(*e) for e in expected)


def test_codex_shell_argv_with_workdir() -> None:
    call = _call("shell", command=["bash", "-lc", "sed -n '1,80p' src/lib.rs"], workdir="/work/repo")
    assert command_of(call) == "sed -n '1,80p' src/lib.rs"
    assert resources_of(call, "shell") == (_r("file", "/work/repo/src/lib.rs", "read", "lines 1-80"),)


def test_codex_shell_plain_argv_and_local_shell_action() -> None:
    assert command_of(_call("shell", command=["cat", "my file.txt"])) == "cat 'my file.txt'"
    local = _call("local_shell", action={"command": ["pytest", "-q"], "working_directory": "/r"})
    assert resources_of(local, "shell") == (_r("test", "pytest:all", "run"),)
    assert resources_of(_call("exec_command", cmd="cat a.py", workdir="/r"), "shell") == (
        _r("file", "/r/a.py", "read"),
    )


def test_cwd_argument_joins_relative_paths() -> None:
    assert _shell("cat a.py", cwd="/repo") == (_r("file", "/repo/a.py", "read"),)


def test_claude_code_tools() -> None:
    read = _call("Read", file_path="/repo/src/a.py", offset=120, limit=40)
    assert resources_of(read, "file_read") == (_r("file", "/repo/src/a.py", "read", "lines 120-159"),)
    assert resources_of(_call("Read", file_path="/repo/a.py"), "file_read") == (_r("file", "/repo/a.py", "read"),)
    for name in ("Edit", "MultiEdit", "Write"):
        assert resources_of(_call(name, file_path="./a.py", content="x"), "file_edit") == (_r("file", "a.py", "write"),)
    assert resources_of(_call("NotebookEdit", notebook_path="nb.ipynb"), "file_edit") == (
        _r("file", "nb.ipynb", "write"),
    )
    grep = resources_of(_call("Grep", pattern="def foo", path="src", output_mode="content"), "search")
    assert grep == (_r("search", "grep output_mode=content path=src pattern=def foo", "read"),)
    assert resources_of(_call("WebFetch", url="https://Docs.python.org/3/#top", prompt="x"), "fetch") == (
        _r("url", "https://docs.python.org/3/", "read"),
    )
    assert resources_of(_call("WebSearch", query="bm25 parameters"), "search") == (
        _r("search", "websearch query=bm25 parameters", "read"),
    )
    assert resources_of(_call("TodoWrite", todos=[]), "default") == ()


def test_codex_tools() -> None:
    read = _call("read_file", file_path="src/main.rs", offset=1, limit=200)
    assert resources_of(read, "file_read") == (_r("file", "src/main.rs", "read", "lines 1-200"),)
    patch = _call("apply_patch", input="*** Begin Patch\n*** Update File: src/main.rs\n@@\n-a\n+b\n*** End Patch")
    assert resources_of(patch, "file_edit") == (_r("file", "src/main.rs", "write"),)
    raw = _call("apply_patch", _raw="*** Begin Patch\n*** Add File: new.rs\n+x\n*** End Patch")
    assert resources_of(raw, "file_edit") == (_r("file", "new.rs", "write"),)
    assert resources_of(_call("update_plan", plan=[]), "default") == ()


def test_editor_tools_view_reads_and_other_commands_write() -> None:
    view = _call("str_replace_editor", command="view", path="/testbed/a.py", view_range=[10, 30])
    assert resources_of(view, "file_edit") == (_r("file", "/testbed/a.py", "read", "lines 10-30"),)
    to_end = _call("str_replace_editor", command="view", path="/testbed/a.py", view_range=[10, -1])
    assert resources_of(to_end, "file_edit") == (_r("file", "/testbed/a.py", "read", "from line 10"),)
    for command in ("create", "str_replace", "insert", "undo_edit"):
        edit = _call("str_replace_based_edit_tool", command=command, path="/testbed/a.py")
        assert resources_of(edit, "file_edit") == (_r("file", "/testbed/a.py", "write"),)


def test_swe_agent_commands_by_tool_name() -> None:
    assert resources_of(_call("open", path="src/a.py", line_number=120), "file_read") == (
        _r("file", "src/a.py", "read", "window at line 120"),
    )
    assert resources_of(_call("goto", line_number=300), "file_read", open_file="src/a.py") == (
        _r("file", "src/a.py", "read", "window at line 300"),
    )
    assert resources_of(_call("scroll_down"), "file_read", open_file="src/a.py") == (
        _r("file", "src/a.py", "read", "window (scroll_down)"),
    )
    assert resources_of(_call("scroll_up"), "file_read") == ()  # no file open yet
    assert resources_of(_call("edit", start_line=3, end_line=5, replacement="x"), "file_edit", open_file="a.py") == (
        _r("file", "a.py", "write"),
    )
    assert resources_of(_call("create", filename="new.py"), "file_edit") == (_r("file", "new.py", "write"),)
    assert resources_of(_call("search_dir", search_term="parse", dir="src"), "search") == (
        _r("search", "search_dir parse src", "read"),
    )


def test_swe_agent_commands_in_a_bash_string() -> None:
    assert _shell("open src/a.py 30") == (_r("file", "src/a.py", "read", "window at line 30"),)
    assert _shell("goto 80", open_file="src/a.py") == (_r("file", "src/a.py", "read", "window at line 80"),)
    assert _shell("edit 10:12\n    return x\nend_of_edit", open_file="src/a.py")[:1] == (
        _r("file", "src/a.py", "write"),
    )
    assert _shell("create tests/test_new.py") == (_r("file", "tests/test_new.py", "write"),)
    assert _shell("search_file parse", open_file="a.py") == (_r("search", "search_file parse a.py", "read"),)
    assert _shell("find_file setup.py") == (_r("search", "find_file setup.py", "read"),)
    assert _shell("str_replace_editor view /testbed/x.py") == (_r("file", "/testbed/x.py", "read"),)


def test_opened_file() -> None:
    assert opened_file(_call("open", path="./src/a.py", line_number=3)) == "src/a.py"
    assert opened_file(_call("bash", command="open src/b.py 40")) == "src/b.py"
    assert opened_file(_call("open", command="open main.py")) == "main.py"  # SWE-agent's own trajectories
    assert opened_file(_call("bash", command="ls")) == ""


def test_openhands_tools() -> None:
    bash = _call("execute_bash", command="cd /workspace && python -m pytest tests/test_x.py")
    assert resources_of(bash, "shell") == (_r("test", "pytest:/workspace/tests/test_x.py", "run"),)
    browse = _call("browser", code='goto("https://github.com/org/repo")')
    assert resources_of(browse, "browser") == (
        _r("page", "current", "read"),
        _r("url", "https://github.com/org/repo", "read"),
    )
    assert resources_of(_call("browser", code="click('a51')"), "browser") == (_r("page", "current", "read"),)
    assert resources_of(_call("fetch", url="https://x.org/a"), "fetch") == (_r("url", "https://x.org/a", "read"),)
    assert resources_of(_call("think", thought="hmm"), "default") == ()
    assert resources_of(_call("finish", message="done"), "default") == ()


def test_playwright_and_mcp_tools() -> None:
    nav = _call("mcp__playwright__browser_navigate", url="https://example.com/login")
    assert resources_of(nav, "browser") == (
        _r("page", "current", "read"),
        _r("url", "https://example.com/login", "read"),
    )
    click = _call("browser_click", element="Submit", ref="e12")
    assert resources_of(click, "browser") == (_r("page", "current", "read"),)
    tabs = _call("browser_snapshot", tab_id=2)
    assert resources_of(tabs, "browser") == (_r("page", "2", "read"),)
    mcp_read = _call("mcp__filesystem__read_file", path="/data/report.csv")
    assert resources_of(mcp_read, "file_read") == (_r("file", "/data/report.csv", "read"),)
    mcp_write = _call("mcp__filesystem__write_file", path="/data/out.csv", content="x")
    assert resources_of(mcp_write, "file_edit") == (_r("file", "/data/out.csv", "write"),)


def test_unknown_tools_use_argument_names() -> None:
    assert resources_of(_call("fs_delete_file", path="a.txt"), "default") == (_r("file", "a.txt", "write"),)
    assert resources_of(_call("load_doc", path="a.txt"), "default") == (_r("file", "a.txt", "read"),)
    assert resources_of(_call("get_page", url="https://a.b/c"), "default") == (_r("url", "https://a.b/c", "read"),)
    assert resources_of(_call("lookup", query="x"), "default") == (_r("search", "lookup query=x", "read"),)
    assert resources_of(_call("noop"), "default") == ()


def test_test_category_without_a_command() -> None:
    assert resources_of(_call("run_tests", path="tests/test_a.py"), "test") == (
        _r("test", "run_tests:tests/test_a.py", "run"),
    )
    assert resources_of(_call("run_tests"), "test") == (_r("test", "run_tests:all", "run"),)


def test_classify_command() -> None:
    assert classify_command("pytest -q 2>&1 | tail -30") == "test"
    assert classify_command("cd src && cat a.py") == "file_read"
    assert classify_command("sed -n '1,40p' a.py") == "file_read"
    assert classify_command("open a.py 10") == "file_read"
    assert classify_command("grep -rn foo . | head") == "search"
    assert classify_command("cat a.py | grep foo") == "search"
    assert classify_command("cat a.py > b.py") == ""
    assert classify_command("python setup.py build") == ""
    assert classify_command("echo hi") == ""


def test_covers_and_affects() -> None:
    whole = _r("file", "a.py", "read")
    part = _r("file", "a.py", "read", "lines 1-50")
    other = _r("file", "a.py", "read", "lines 51-90")
    assert covers(whole, part) and covers(part, part)
    assert not covers(part, whole) and not covers(other, part)
    assert not covers(_r("file", "b.py", "read"), part)
    write = _r("file", "a.py", "write")
    assert affects(write, part)
    assert affects(_r("file", "src", "write"), _r("file", "src/a.py", "read"))
    assert not affects(_r("file", "src", "write"), _r("file", "srcx/a.py", "read"))
    assert affects(_r("file", ".", "write"), _r("file", "src/a.py", "read"))
    assert not affects(whole, part)


@given(st.text(max_size=200))
@settings(max_examples=500, deadline=None)
def test_any_command_text_parses_without_error(command: str) -> None:
    for resource in _shell(command):
        assert resource.key
        assert resource.access in ("read", "write", "run")
