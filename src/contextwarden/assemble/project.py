"""A session's project: the system prompt, project rules and catalogs read from disk, kept in the log.

``manager.session(..., project="path/to/cwd")`` opens a session whose log starts with what the project
says (:func:`~contextwarden.instructions.assemble_system`): the system prompt (built in, or the trusted
``SYSTEM.md`` / ``APPEND_SYSTEM.md``), the project rules (the global file, then one file per directory
from the filesystem root down to the working directory, each wrapped with its path) and the catalog of
skills and subagents (names, descriptions and paths; a body is read on demand with
:func:`~contextwarden.instructions.read_skill`).

Before each build the handle reads the rule files again. When they changed, it appends one
``Instruction`` carrying the ``updated_project_rules`` fragment (only the files that changed, and the
names of removed ones) after the conversation so far: the earlier rules are never rewritten, so the
cached prefix survives, and the log records when the model learnt of the change.

Each instruction that carries the rules names their digest in its ``source`` (``rules-sha256:...``),
so a handle reopened later compares the files on disk with what the model was last told.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..fragments import DEFAULT_REGISTRY
from ..instructions import (
    AssembledSystem,
    InstructionOptions,
    assemble_system,
    default_home,
    detect_rule_changes,
    rules_fingerprint,
)
from ..log.events import Event, Instruction
from ..tokens import TokenCounter

__all__ = ["RULES_TAG", "ProjectContext", "ProjectRules", "project_context"]

RULES_TAG = "rules-sha256:"
"""Prefix of the rules digest in the ``source`` of an instruction that told the model the project rules."""

_NO_RULES = AssembledSystem(system="", project_rules="", catalog="", notes=(), sources=())


@dataclass(frozen=True, kw_only=True)
class ProjectContext:
    """Where a session works and how its instruction files are found."""

    cwd: Path
    """The working directory: rule files are read from the filesystem root down to it."""
    home: Path | None = None
    """The contextwarden home holding the global files (default ``$CONTEXTWARDEN_HOME`` or ``~/.contextwarden``)."""
    options: InstructionOptions = field(default_factory=InstructionOptions)
    """Caps, rule file names and the project root markers (see :class:`InstructionOptions`)."""


def project_context(value: str | Path | ProjectContext) -> ProjectContext:
    """A :class:`ProjectContext` from a working directory or an existing one."""
    return value if isinstance(value, ProjectContext) else ProjectContext(cwd=Path(value))


def _source(name: str, assembled: AssembledSystem) -> str:
    return f"{name} {RULES_TAG}{rules_fingerprint(assembled)}"


def told_fingerprint(events: Sequence[Event]) -> str | None:
    """The digest of the project rules the log last told the model, or ``None`` when it never did."""
    for event in reversed(events):
        if isinstance(event, Instruction) and RULES_TAG in event.source:
            return event.source.rsplit(RULES_TAG, 1)[1]
    return None


class ProjectRules:
    """The project's instruction files for one session handle: what to append first, and what changed."""

    def __init__(self, project: ProjectContext, counter: TokenCounter) -> None:
        """Read the project once; :meth:`opening` or :meth:`update` say what the log needs."""
        self.project = project
        self.counter = counter
        self._signature = self._stat()
        self.current = self._assemble()
        self._told: AssembledSystem | None = None

    def _stat(self) -> tuple[tuple[str, int, int], ...]:
        """Size and change time of every place a rule file may be.

        A build re-reads the files only when this changed: a stat per candidate instead of reading and
        counting every file on every build.
        """
        cwd = self.project.cwd.resolve()
        home = (self.project.home or default_home()).expanduser()
        found: list[tuple[str, int, int]] = []
        for directory in (home, *reversed(cwd.parents), cwd):
            for name in self.project.options.rule_file_names:
                try:
                    st = os.stat(directory / name)
                except OSError:
                    continue
                found.append((str(directory / name), st.st_size, st.st_mtime_ns))
        return tuple(found)

    def _assemble(self) -> AssembledSystem:
        return assemble_system(
            self.project.cwd, home=self.project.home, options=self.project.options, counter=self.counter
        )

    @property
    def notes(self) -> tuple[str, ...]:
        """What the last reading skipped, cut or ignored (untrusted files, links outside the project...)."""
        return self.current.notes

    def opening(self) -> list[Instruction]:
        """The instructions a new session starts with: system prompt, project rules, catalog."""
        current = self.current
        self._told = current
        events = [Instruction(text=current.system, source=_source("system_prompt", current))]
        if current.project_rules:
            events.append(Instruction(text=current.project_rules, source="project_instructions"))
        if current.catalog:
            events.append(Instruction(text=current.catalog, source="skills_catalog"))
        return events

    def resume(self, told: str) -> list[Instruction]:
        """For a reopened session whose log last told the rules with digest ``told``: what changed since."""
        self._told = self.current if told == rules_fingerprint(self.current) else None
        return [] if self._told is not None else self._changed()

    def update(self) -> list[Instruction]:
        """Read the rule files again; the instruction to append when they changed, else nothing."""
        signature = self._stat()
        if signature == self._signature and self._told is not None:
            return []
        self._signature = signature
        self.current = self._assemble()
        if self._told is not None and rules_fingerprint(self._told) == rules_fingerprint(self.current):
            return []
        return self._changed()

    def _changed(self) -> list[Instruction]:
        current = self.current
        if self._told is None and not current.rule_files:
            text = DEFAULT_REGISTRY.wrap(
                "updated_project_rules",
                "The project instructions changed during this session: the files given earlier no longer "
                "exist and no longer apply.",
            )
        else:
            text = detect_rule_changes(self._told or _NO_RULES, current) or ""
        self._told = current
        return [Instruction(text=text, role="developer", source=_source("updated_project_rules", current))]
