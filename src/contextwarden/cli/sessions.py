"""``contextwarden sessions``: list, show, export, import and delete stored sessions."""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import re
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any

import click
from rich.table import Table
from rich.text import Text

from ..log.events import (
    AssistantMessage,
    Compaction,
    ContextEditBatch,
    Event,
    ForkMarker,
    SettingChange,
    ToolResult,
    ToolSetChange,
    UsageReport,
)
from ..log.store import SessionInfo, SessionStore, count_kinds, export_jsonl, import_jsonl, open_store
from ._common import console as make_console
from ._common import (
    display_text,
    echo_json,
    json_options,
    missing_store,
    open_existing_store,
    print_table,
    store_option,
)

_SUMMARY_WIDTH = 100
_SURROGATE = re.compile("[\ud800-\udfff]")


@contextmanager
def _opened(store_url: str | None, *, create: bool = False) -> Iterator[SessionStore]:
    # Only `sessions import` writes; every other subcommand must not create a store by looking.
    store = open_store(store_url) if create else open_existing_store(store_url)
    try:
        yield store
    finally:
        store.close()


def _no_surrogates(text: str) -> str:
    # undecodable bytes are kept as lone surrogates, which no terminal or UTF-8 stream accepts
    return _SURROGATE.sub("\ufffd", text)


def _displayable(value: Any) -> Any:
    if isinstance(value, str):
        return _no_surrogates(value)
    if isinstance(value, dict):
        return {_displayable(k): _displayable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_displayable(v) for v in value]
    return value


def _when(timestamp: float) -> str:
    return dt.datetime.fromtimestamp(timestamp, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%SZ")


def _title(info: SessionInfo) -> str:
    for key in ("title", "source", "agent"):
        value = info.metadata.get(key)
        if isinstance(value, str) and value:
            return display_text(value)
    return ""


def _lineage(info: SessionInfo) -> str:
    if info.parent_session_id is None:
        return ""
    if info.fork_seq:
        return f"{info.parent_session_id}@{info.fork_seq}"
    return info.parent_session_id


def summarize(event: Event) -> str:
    """One line saying what an event holds, for listings."""
    if isinstance(event, AssistantMessage):
        calls = ", ".join(c.name for c in event.tool_calls)
        text = event.text
        if calls:
            text = f"{text} [calls {calls}]" if text else f"calls {calls}"
    elif isinstance(event, ToolResult):
        status = "error" if event.is_error else "ok"
        text = f"{event.tool_name} {status}, {len(event.output)} chars: {event.output[:200]}"
    elif isinstance(event, UsageReport):
        text = (
            f"in {event.input_tokens}, out {event.output_tokens}, "
            f"cache read {event.cache_read_tokens}, cache write {event.cache_write_tokens}"
        )
    elif isinstance(event, Compaction):
        text = f"window from seq {event.first_kept_seq}; summary: {event.summary[:200]}"
    elif isinstance(event, ContextEditBatch):
        text = f"{len(event.edits)} edit(s): {event.reason}"
    elif isinstance(event, ToolSetChange):
        text = "tools: " + ", ".join(event.exposed)
    elif isinstance(event, ForkMarker):
        text = f"forked from {event.source_session_id} at seq {event.at_seq}"
    elif isinstance(event, SettingChange):
        text = f"model {event.model or '(unchanged)'} {event.settings or ''}"
    else:
        text = str(getattr(event, "text", ""))
    text = display_text(" ".join(text.split()))
    return text if len(text) <= _SUMMARY_WIDTH else text[: _SUMMARY_WIDTH - 1] + "…"


def _info_json(info: SessionInfo) -> dict[str, Any]:
    data: dict[str, Any] = _displayable(dataclasses.asdict(info))
    return data


# --------------------------------------------------------------------------- commands


@click.group(name="sessions")
def command() -> None:
    """Manage stored sessions: ls, show, export, import, rm."""


@command.command(name="ls")
@store_option
@json_options()
def ls_command(store_url: str | None, as_json: bool) -> None:
    """List sessions, oldest first."""
    infos: list[SessionInfo] = []
    if missing_store(store_url) is None:
        with _opened(store_url) as store:
            infos = list(store.list_sessions())
    if as_json:
        echo_json([_info_json(i) for i in infos])
        return
    if not infos:
        click.echo("no sessions")
        return
    table = Table("id", "created (UTC)", "events", "window from", "parent", "title")
    for info in infos:
        table.add_row(
            Text(info.id),
            _when(info.created_at),
            str(info.last_seq),
            str(info.window_start_seq),
            Text(_lineage(info)),
            Text(_title(info)),
        )
    print_table(make_console(), table)


@command.command(name="show")
@click.argument("session_id")
@store_option
@click.option("--last", "last_n", default=10, show_default=True, type=click.IntRange(min=0), help="Events to list.")
@json_options()
def show_command(session_id: str, store_url: str | None, last_n: int, as_json: bool) -> None:
    """Show a session: header, events per kind, and its last events."""
    with _opened(store_url) as store:
        info = store.get_session(session_id)
        counts = count_kinds(store, session_id)
        recent = store.read(session_id, since_seq=max(0, info.last_seq - last_n)) if last_n else []
    if as_json:
        echo_json(
            {
                "session": _info_json(info),
                "kinds": dict(sorted(counts.items())),
                "last_events": [
                    {
                        "seq": e.seq,
                        "kind": e.kind,
                        "id": e.id,
                        "session_id": e.session_id,
                        "summary": summarize(e),
                    }
                    for e in recent
                ],
            }
        )
        return
    console = make_console()
    header = Table.grid(padding=(0, 2))
    header.add_row("session", Text(info.id))
    header.add_row("created", _when(info.created_at))
    header.add_row("events", str(info.last_seq))
    header.add_row("window from seq", str(info.window_start_seq))
    if info.parent_session_id is not None:
        header.add_row("parent", Text(_lineage(info)))
    for key, value in sorted(info.metadata.items()):
        header.add_row(Text(display_text(key)), Text(display_text(str(value))))
    console.print(header)
    kinds = Table("kind", "count", title="events by kind")
    for kind, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        kinds.add_row(kind, str(n))
    console.print(kinds)
    if recent:
        last = Table("seq", "kind", "summary", title=f"last {len(recent)} events")
        for event in recent:
            last.add_row(str(event.seq), event.kind, Text(summarize(event)))
        console.print(last)


@command.command(name="export")
@click.argument("session_id")
@store_option
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None, help="Write here (default stdout).")
def export_command(session_id: str, store_url: str | None, output: str | None) -> None:
    """Export a session as JSON Lines (a header line, then one event per line)."""
    with _opened(store_url) as store:
        if output is None:
            export_jsonl(store, session_id, sys.stdout)
            return
        with _atomic_text(output) as fp:
            count = export_jsonl(store, session_id, fp)
    click.echo(f"exported {count} events of session {session_id} to {output}", err=True)


@command.command(name="import")
@click.argument("file", type=click.File("rb"))
@store_option
@click.option("--session", "session_id", default=None, help="Store under this id (default: the file's).")
@json_options()
def import_command(file: IO[bytes], store_url: str | None, session_id: str | None, as_json: bool) -> None:
    """Import a session from a JSON Lines file made by `sessions export` (all or nothing)."""
    with _opened(store_url, create=True) as store:
        info = import_jsonl(store, file, session_id=session_id)
    if as_json:
        echo_json(_info_json(info))
    else:
        click.echo(f"imported {info.last_seq} events into session {info.id}")


@command.command(name="rm")
@click.argument("session_id")
@store_option
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
def rm_command(session_id: str, store_url: str | None, yes: bool) -> None:
    """Delete a session and its events (a session that forks still share must wait for them)."""
    with _opened(store_url) as store:
        info = store.get_session(session_id)
        if not yes:
            click.confirm(f"delete session {session_id} and its {info.last_seq} events?", abort=True, err=True)
        store.delete_session(session_id)
    click.echo(f"deleted session {session_id}")


@contextmanager
def _atomic_text(path: str) -> Iterator[IO[str]]:
    """Write a file so that a failure half-way leaves no truncated export behind."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".export-", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="ascii", newline="\n") as fp:
            yield fp
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


__all__ = ["command", "summarize"]
