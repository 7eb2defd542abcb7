"""Textual path normalization (the filesystem is never touched)."""

from __future__ import annotations


def norm_path(path: str, cwd: str = "") -> str:
    """Normalize a path textually: strip ``./``, collapse ``//``, resolve ``..``, prefix ``cwd`` if relative."""
    p = path.strip()
    if p.startswith("file://"):
        p = p[len("file://") :]
    if not p:
        return ""
    if cwd and not p.startswith(("/", "~")):
        p = f"{cwd}/{p}"
    absolute = p.startswith("/")
    parts: list[str] = []
    for seg in p.split("/"):
        if seg in ("", "."):
            continue
        if seg == "..":
            if parts and parts[-1] != "..":
                parts.pop()
            elif not absolute:
                parts.append("..")
        else:
            parts.append(seg)
    joined = "/".join(parts)
    return "/" + joined if absolute else (joined or ".")
