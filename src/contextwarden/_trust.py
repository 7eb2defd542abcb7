"""Trust records: which projects may load their own ``.contextwarden/`` system prompt files.

A project's ``SYSTEM.md`` can replace the whole system prompt, so a repository cloned from someone else
must not do that silently. The user grants trust per absolute project path (``contextwarden trust``);
records live in ``trust.json`` in the contextwarden home.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from .errors import ConfigError

HOME_ENV = "CONTEXTWARDEN_HOME"
TRUST_FILE = "trust.json"
_VERSION = 1


def default_home() -> Path:
    """Return the contextwarden home: ``$CONTEXTWARDEN_HOME`` or ``~/.contextwarden``."""
    env = os.environ.get(HOME_ENV)
    return Path(env) if env else Path.home() / ".contextwarden"


def find_project_root(start: str | Path, markers: tuple[str, ...] = (".git",)) -> Path:
    """Return the nearest directory at or above ``start`` holding a marker (else ``start``)."""
    here = Path(start).resolve()
    for directory in (here, *here.parents):
        if any(os.path.lexists(directory / marker) for marker in markers):
            return directory
    return here


@dataclass(frozen=True, kw_only=True)
class TrustRecord:
    """One trusted project."""

    path: str
    """The project's absolute, resolved path."""
    trusted_at: float
    """When trust was granted (Unix time; bookkeeping only)."""


def _trust_file(home: Path | None) -> Path:
    return (home or default_home()).expanduser() / TRUST_FILE


def _load(home: Path | None) -> dict[str, TrustRecord]:
    path = _trust_file(home)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"cannot read the trust records in {path}: {exc}; fix or delete the file") from None
    projects = raw.get("projects") if isinstance(raw, dict) else None
    if not isinstance(projects, dict):
        raise ConfigError(f"{path} is not a trust file (no 'projects' object); fix or delete it")
    records: dict[str, TrustRecord] = {}
    for key, value in projects.items():
        when = value.get("trusted_at", 0.0) if isinstance(value, dict) else 0.0
        records[key] = TrustRecord(path=key, trusted_at=float(when) if isinstance(when, (int, float)) else 0.0)
    return records


def _save(home: Path | None, records: dict[str, TrustRecord]) -> None:
    path = _trust_file(home)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {
        "version": _VERSION,
        "projects": {k: {"trusted_at": r.trusted_at} for k, r in sorted(records.items())},
    }
    # Write then rename, so a crash never leaves a half-written file that would revoke every trust.
    fd, tmp = tempfile.mkstemp(prefix=".trust-", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=2)
            fh.write("\n")
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def _key(path: str | Path) -> str:
    return str(Path(path).expanduser().resolve())


def trust_project(path: str | Path, *, home: Path | None = None) -> TrustRecord:
    """Trust the project at ``path`` (resolved to an absolute path); returns the record.

    Trusting an already trusted project keeps its original record.
    """
    key = _key(path)
    records = _load(home)
    if key not in records:
        records[key] = TrustRecord(path=key, trusted_at=time.time())
        _save(home, records)
    return records[key]


def revoke_trust(path: str | Path, *, home: Path | None = None) -> bool:
    """Remove the trust record of ``path``; returns whether there was one."""
    key = _key(path)
    records = _load(home)
    if key not in records:
        return False
    del records[key]
    _save(home, records)
    return True


def list_trusted(*, home: Path | None = None) -> tuple[TrustRecord, ...]:
    """Every trusted project, sorted by path."""
    return tuple(sorted(_load(home).values(), key=lambda r: r.path))


def is_trusted(path: str | Path, *, home: Path | None = None) -> bool:
    """Whether exactly this project path is trusted (trust does not extend to other directories)."""
    return _key(path) in _load(home)
