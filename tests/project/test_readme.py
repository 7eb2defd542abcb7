"""Every Python example in the README runs, and the Quick start holds exactly two one-line commands."""

from __future__ import annotations

import re

from _paths import ROOT

README = ROOT / "README.md"


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)


def test_readme_python_examples_run(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    blocks = _blocks("python")
    assert blocks, "the README must show a library example"
    for block in blocks:
        exec(compile(block, str(README), "exec"), {"__name__": "readme_example"})


def test_quick_start_is_two_single_line_commands() -> None:
    text = README.read_text(encoding="utf-8")
    quick = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"```bash\n(.*?)```", quick, flags=re.S)
    assert len(commands) == 2
    assert all(c.strip() and "\n" not in c.strip() for c in commands)
    ci = (README.parent / ".ci" / "run").read_text(encoding="utf-8")
    assert commands[1].strip() in ci


def test_readme_library_example_uses_only_the_public_api() -> None:
    import contextwarden

    imports = [
        line.strip()
        for block in _blocks("python")
        for line in block.splitlines()
        if line.lstrip().startswith(("from ", "import "))
    ]
    assert imports, "the library example imports something"
    for line in imports:
        assert line.startswith("from contextwarden import "), f"not a top-level import: {line}"
        names = [n.strip() for n in line.removeprefix("from contextwarden import ").split(",")]
        missing = [n for n in names if n not in contextwarden.__all__]
        assert not missing, f"{missing} used by the README but not in contextwarden.__all__"


def test_every_public_name_resolves() -> None:
    import contextwarden

    assert len(set(contextwarden.__all__)) == len(contextwarden.__all__)
    for name in contextwarden.__all__:
        assert getattr(contextwarden, name) is not None, name
    # ``render`` is the entry taking a format name, whatever package holds the codecs.
    assert callable(contextwarden.render)
