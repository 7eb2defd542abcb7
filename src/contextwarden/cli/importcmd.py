"""``contextwarden import``: store agent transcripts as sessions.

Every file is read (and its format detected) before anything is stored, so a malformed file stops the
command with nothing half-imported. Each transcript becomes one new session named after the file (made
unique with ``-2``, ``-3``...) or after ``--session NAME`` (``NAME``, ``NAME-2``... for several files).

A file is imported once: its content's SHA-256 is kept in the session's metadata, and a file whose
content is already stored reports that session and changes nothing. ``--as NAME`` stores a copy on
purpose, under ``NAME``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from ..errors import SessionExists, SessionNotFound, UsageError
from ..importers import TRANSCRIPT_FORMATS, Transcript, file_sha256, load_transcript
from ..log.events import JSONValue
from ..log.store import SessionStore, check_new_session_id, open_store
from ._common import echo_json, json_options, progress, store_option

_NAME_MAX = 120


def _session_id(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """A session id given on the command line, held to the stores' rule for new sessions."""
    if value is None:
        return None
    try:
        return check_new_session_id(value, f"{param.opts[0]} name")
    except UsageError as exc:
        raise click.BadParameter(str(exc)) from None


@click.command(name="import")
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--session",
    "session_name",
    default=None,
    callback=_session_id,
    help="Session id (several files: NAME, NAME-2, ...).",
)
@click.option(
    "--format",
    "format_name",
    type=click.Choice(list(TRANSCRIPT_FORMATS)),
    default=None,
    help="Read every file as this format instead of detecting it.",
)
@click.option(
    "--as",
    "copy_name",
    default=None,
    callback=_session_id,
    help="Store a copy under this session id even if the same content was imported before (one file only).",
)
@json_options()
@store_option
def command(
    files: tuple[Path, ...],
    session_name: str | None,
    format_name: str | None,
    copy_name: str | None,
    as_json: bool,
    store_url: str | None,
) -> None:
    """Import agent transcripts (Claude Code, Codex, SWE-agent, mini-swe-agent, OpenHands, chat logs)."""
    if copy_name is not None and (len(files) != 1 or session_name is not None):
        raise click.UsageError("--as NAME copies one file; give exactly one file and no --session")
    transcripts: list[Transcript] = []
    with progress(len(files), "reading", minimum=2) as advance:
        for path in files:
            # A copy gets ids of its own (salted with its name): event ids are unique across sessions.
            transcripts.append(load_transcript(path, format=format_name, id_salt=copy_name or ""))
            advance(1)
    hashes = [t.content_sha256 for t in transcripts]
    store = open_store(store_url)
    try:
        known = {} if copy_name is not None else _imported_hashes(store)
        fresh = [n for n, h in enumerate(hashes) if h not in known and h not in hashes[:n]]
        flag = "--as" if copy_name is not None else "--session"
        names = _session_names(store, [files[n] for n in fresh], copy_name or session_name, flag=flag)
        stored = {n: _store_one(store, name, transcripts[n], hashes[n]) for n, name in zip(fresh, names, strict=True)}
    finally:
        store.close()
    reports = []
    for n, digest in enumerate(hashes):
        if n in stored:
            reports.append(stored[n])
            continue
        # The same content as an earlier session, or as an earlier file of this command.
        first = known.get(digest) or stored[hashes.index(digest)]["session_id"]
        reports.append(
            {
                "file": transcripts[n].source,
                "session_id": first,
                "format": transcripts[n].format,
                "already_imported": True,
            }
        )
    if as_json:
        echo_json({"sessions": reports})
        return
    for report in reports:
        if report.get("already_imported"):
            click.echo(
                f"{report['file']}: already imported as session {report['session_id']}; nothing changed "
                "(--as NAME stores a copy)"
            )
            continue
        counts = ", ".join(f"{kind} {n}" for kind, n in sorted(report["counts"].items()))
        click.echo(
            f"{report['file']}: session {report['session_id']} ({report['format']}), "
            f"{report['events']} events: {counts or 'none'}"
        )
        for warning in report["warnings"]:
            click.echo(f"  warning: {warning}")
    fresh_reports = [r for r in reports if not r.get("already_imported")]
    if len(fresh_reports) > 1:
        click.echo(f"imported {len(fresh_reports)} files, {sum(r['events'] for r in fresh_reports)} events")


def _session_names(store: SessionStore, files: Sequence[Path], explicit: str | None, *, flag: str) -> list[str]:
    """Pick one new session id per file; an explicit name (given by ``flag``) that is taken is an error."""
    taken: set[str] = set()
    names: list[str] = []
    for index, path in enumerate(files):
        if explicit is not None:
            name = explicit if index == 0 else f"{explicit}-{index + 1}"
            if _exists(store, name):
                raise SessionExists(f"session {name!r} already exists; choose another {flag} name")
        else:
            base = _clean(path.stem) or "transcript"
            name, number = base, 1
            while name in taken or _exists(store, name):
                number += 1
                name = f"{base}-{number}"
        taken.add(name)
        names.append(name)
    return names


def _exists(store: SessionStore, session_id: str) -> bool:
    try:
        store.get_session(session_id)
    except SessionNotFound:
        return False
    return True


def _clean(stem: str) -> str:
    # File names can hold characters a session id may not (control characters, lone surrogates, a
    # backslash, surrounding spaces, nothing but dots): see ``check_new_session_id``.
    name = "".join(c if c.isprintable() and c != "\\" else "_" for c in stem)[:_NAME_MAX].strip()
    return name if name.strip(".") else ""


def content_hash(path: Path) -> str:
    """SHA-256 of the file's bytes: what "the same transcript" means for import-once."""
    return file_sha256(path)


def _imported_hashes(store: SessionStore) -> dict[str, str]:
    """Content hash → the first session imported from it."""
    found: dict[str, str] = {}
    for info in sorted(store.list_sessions(), key=lambda i: i.created_at):
        digest = info.metadata.get("content_sha256")
        if isinstance(digest, str):
            found.setdefault(digest, info.id)
    return found


def _store_one(
    store: SessionStore, session_id: str, transcript: Transcript, digest: str | None = None
) -> dict[str, Any]:
    metadata: dict[str, JSONValue] = {
        "source": str(Path(transcript.source).resolve()),
        "format": transcript.format,
        "content_sha256": digest or transcript.content_sha256 or content_hash(Path(transcript.source)),
        "transcript": transcript.metadata,
    }
    store.create_session(session_id, metadata=metadata)
    try:
        store.append(session_id, list(transcript.events), expected_last_seq=0)
    except BaseException:
        # An empty husk would take the name and look imported; remove it before reporting the error.
        store.delete_session(session_id)
        raise
    return {
        "file": transcript.source,
        "session_id": session_id,
        "format": transcript.format,
        "events": len(transcript.events),
        "counts": dict(Counter(e.kind for e in transcript.events)),
        "warnings": list(transcript.warnings),
    }
