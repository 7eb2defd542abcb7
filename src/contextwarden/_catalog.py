"""Skill and subagent catalogs: name, description and path only; bodies are read on demand.

Skills are ``SKILL.md`` files under ``skills/*/`` and agents are ``agents/*.md`` files, in the project's
``.contextwarden/`` and in the contextwarden home; both carry ``name`` and ``description`` in their front
matter. Listing them costs a line each; their full instructions enter the context only when asked for.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from pathlib import Path

from ._files import read_text_file
from .errors import UsageError
from .fragments import DEFAULT_REGISTRY

PROJECT_DIR = ".contextwarden"
"""The per-project configuration directory (relative to the project root)."""

_MAX_DESCRIPTION = 1024
_MAX_DEFINITION_BYTES = 64 * 1024


@dataclass(frozen=True, kw_only=True)
class CatalogEntry:
    """A skill or subagent the model may ask for."""

    kind: str
    """``skill`` or ``agent``."""
    name: str
    """Its name (front matter ``name``, else the directory or file name)."""
    description: str
    """Its front matter ``description``."""
    path: str
    """The file holding its full instructions."""


def parse_front_matter(text: str) -> tuple[dict[str, str], str]:
    """Split ``---``-delimited front matter (simple ``key: value`` lines) from a Markdown body.

    Indented continuation lines join the previous value; quotes around a value are removed. Text
    without front matter returns ``({}, text)``.
    """
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        return {}, text
    end = next((i for i in range(1, len(lines)) if lines[i].strip() in ("---", "...")), None)
    if end is None:
        return {}, text
    meta: dict[str, str] = {}
    key = ""
    for line in lines[1:end]:
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if line[0] in " \t" and key:
            meta[key] = f"{meta[key]} {line.strip()}".strip()
            continue
        name, sep, value = line.partition(":")
        if not sep:
            continue
        key, value = name.strip(), value.strip()
        if value in ("|", ">", "|-", ">-"):
            value = ""
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        meta[key] = value
    return meta, "".join(lines[end + 1 :])


def escape_injected(text: str, *, attribute: bool = False) -> str:
    """Escape project text for the prompt, the one way every injected project text is escaped.

    ``&``, ``<`` and ``>`` become entities, so no file can open or close a tag (``<system>``,
    ``</project_instructions>``) around or inside what it is placed in; with ``attribute=True`` the
    double quote too, for text inside ``path="..."``.
    """
    return html.escape(text, quote=attribute)


def _catalog_files(root: Path, home: Path, trusted: bool, notes: list[str]) -> list[tuple[str, Path, Path | None]]:
    found: list[tuple[str, Path, Path | None]] = []
    for base, within in ((root / PROJECT_DIR, root), (home, None)):
        skills, agents = base / "skills", base / "agents"
        if within is not None and not trusted:
            if skills.is_dir() or agents.is_dir():
                notes.append(
                    f"ignored the skills and agents in {base}: the project {root} is not trusted; run "
                    f"`contextwarden trust {root}` to load its .contextwarden/ files"
                )
            continue
        if skills.is_dir():
            found += [("skill", d / "SKILL.md", within) for d in sorted(skills.iterdir()) if (d / "SKILL.md").exists()]
        if agents.is_dir():
            found += [("agent", f, within) for f in sorted(agents.glob("*.md"))]
    return found


def discover_catalog(root: Path, home: Path, notes: list[str], *, trusted: bool) -> list[CatalogEntry]:
    """Skills and agents from the home and, only when ``trusted``, from the project's ``.contextwarden/``."""
    entries: dict[tuple[str, str], CatalogEntry] = {}
    for kind, path, within in _catalog_files(root, home, trusted, notes):
        read = read_text_file(path, limit=_MAX_DEFINITION_BYTES, within=within)
        if read.text is None:
            notes.append(str(read.note))
            continue
        meta, _ = parse_front_matter(read.text)
        name = meta.get("name") or (path.parent.name if kind == "skill" else path.stem)
        description = " ".join(meta.get("description", "").split())
        if not description:
            notes.append(f"skipped {kind} {path}: its front matter has no description")
            continue
        if len(description) > _MAX_DESCRIPTION:
            description = description[: _MAX_DESCRIPTION - 1] + "…"
        # Project entries come first, so a global entry of the same name does not shadow them.
        entries.setdefault((kind, name), CatalogEntry(kind=kind, name=name, description=description, path=str(path)))
    return sorted(entries.values(), key=lambda e: (e.kind != "skill", e.name, e.path))


def render_catalog(entries: list[CatalogEntry], cap: int) -> str:
    if not entries:
        return ""
    lines = [
        "Skills and agents available on request. Their instructions are not loaded: read a skill's file "
        "before you follow it; start an agent by its name."
    ]
    used = len(lines[0].encode())
    shown = 0
    for kind in ("skill", "agent"):
        group = [e for e in entries if e.kind == kind]
        if group:
            lines.append(f"{kind.capitalize()}s:")
        for entry in group:
            name, description, path = (escape_injected(t) for t in (entry.name, entry.description, entry.path))
            line = f"- {name}: {description} ({path})"
            used += len(line.encode()) + 1
            if used > cap:
                break
            lines.append(line)
            shown += 1
    if shown < len(entries):
        lines.append(f"[contextwarden: {len(entries) - shown} more entries omitted to fit the catalog cap]")
    return DEFAULT_REGISTRY.wrap("skills_catalog", "\n".join(lines))


def read_skill(path: str | Path, *, max_bytes: int = _MAX_DEFINITION_BYTES) -> str:
    """Return the body of a skill (``SKILL.md``) or agent definition, without its front matter.

    Raises :class:`UsageError` when the file cannot be read as text. A body past ``max_bytes`` is cut
    with a marker saying so.
    """
    read = read_text_file(Path(path), limit=max_bytes)
    if read.text is None:
        raise UsageError(str(read.note))
    _, body = parse_front_matter(read.text)
    if read.truncated:
        body += f"\n[contextwarden: cut at {max_bytes} of {read.size} bytes]"
    return body.strip()
