"""The live page: ``GET /contextwarden/`` and the JSON it polls.

The page itself holds no data, so a browser loads it without credentials. It asks for the key the
viewer's agent uses (or the operator token), keeps it in the tab's ``sessionStorage`` and sends it
as an ``x-api-key`` header on each poll; :mod:`.access` decides which sessions that key may read.

- ``/contextwarden/live/sessions``: the stats of ``/contextwarden/stats`` (the same figures as
  ``contextwarden proxy stats --json``), and per session its window events with their cause and its
  warnings (an unknown model, a window restarted by the client, fall-backs).
- ``/contextwarden/live/session?id=...``: one session's ledger rows (tokens and cost per request) and
  its current window as ``contextwarden inspect`` shows it: composition by section and tier and the
  reductions in effect, each with the event id to recall it by.

Transcript text reaches the page only as JSON strings; the script puts it in the DOM as text, and
the page's Content-Security-Policy allows no script but its own file.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from importlib import resources
from typing import TYPE_CHECKING, Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ..errors import ContextWardenError, SessionNotFound
from ..governance.inspection import inspect_session
from ..log.events import Compaction, ContextEditBatch, Event, ToolSetChange
from ..mirror import MIRROR_SUMMARIZER

if TYPE_CHECKING:
    from ..log.store import SessionStore
    from ..tokens import TokenCounter
    from .access import Access
    from .ledger import Ledger, LedgerRow

POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
"""The page's Content-Security-Policy: nothing runs or loads but the page's own files."""

PREVIEW_CHARS = 160
"""How much of a reduced message the page shows beside its decision."""

_ASSETS = {
    "": ("live.html", "text/html"),
    "live.js": ("live.js", "text/javascript"),
    "live.css": ("live.css", "text/css"),
}


def _asset(name: str) -> bytes:
    return resources.files("contextwarden").joinpath(f"data/live/{name}").read_bytes()


def window_event(event: Event) -> dict[str, Any] | None:
    """A window event as the page lists it (``None`` for other events): seq, kind, cause, tokens."""
    if isinstance(event, Compaction):
        restart = event.summarizer == MIRROR_SUMMARIZER
        how = event.details.get("mirror") if restart else event.details.get("trigger")
        kind = f"restart ({how})" if restart else "compaction"
        cause = (
            event.summary
            if restart
            else f"compacted by {event.summarizer or 'a summarizer'}" + (f" ({how})" if how else "")
        )
    elif isinstance(event, ContextEditBatch):
        actions = sorted({e.action for e in event.edits})
        kind, cause = f"edit batch ({len(event.edits)}: {', '.join(actions)})", event.reason
    elif isinstance(event, ToolSetChange):
        kind, cause = "tool set", event.reason or f"tools now: {', '.join(event.exposed)}"
    else:
        return None
    return {
        "seq": event.seq,
        "kind": kind,
        "cause": cause,
        "tokens_before": getattr(event, "tokens_before", 0),
        "tokens_after": getattr(event, "tokens_after", 0),
    }


class LiveView:
    """The page's routes over one proxy; window events and inspections are cached per session."""

    def __init__(
        self,
        *,
        access: Access,
        ledger: Ledger,
        store: SessionStore,
        counter: TokenCounter,
        settle: Callable[[], None],
    ) -> None:
        """Serve the proxy's ``ledger`` and ``store`` to the readers ``access`` admits.

        ``settle`` waits until every answer so far is in the ledger; ``counter`` is the proxy's.
        """
        self.access, self.ledger, self.store, self.counter, self.settle = access, ledger, store, counter, settle
        self._lock = threading.Lock()
        self._events: dict[str, tuple[int, list[dict[str, Any]]]] = {}
        self._inspections: dict[str, tuple[int, dict[str, Any]]] = {}

    def routes(self) -> list[Route]:
        """The page, its two files and its two JSON endpoints."""
        return [
            *(Route(f"/contextwarden/{name}", self._page, methods=["GET"]) for name in _ASSETS),
            Route("/contextwarden/live/sessions", self._sessions, methods=["GET"]),
            Route("/contextwarden/live/session", self._session, methods=["GET"]),
        ]

    async def _page(self, request: Request) -> Response:
        found = _ASSETS[request.url.path.removeprefix("/contextwarden/")]
        headers = {"content-security-policy": POLICY, "x-content-type-options": "nosniff", "cache-control": "no-store"}
        return Response(_asset(found[0]), media_type=found[1], headers=headers)

    async def _sessions(self, request: Request) -> Response:
        viewer = self.access.viewer(request.headers.items())
        await run_in_threadpool(self.settle)
        stats = await run_in_threadpool(self.ledger.stats, None, visible=viewer.sees)
        notes = await run_in_threadpool(self._notes, stats["sessions"])
        return _json({"stats": stats, "notes": notes, "operator": viewer.everyone})

    async def _session(self, request: Request) -> Response:
        session_id = request.query_params.get("id", "")
        viewer = self.access.viewer(request.headers.items())
        if not viewer.sees(session_id):  # another caller's session looks like no session at all
            return _json({"error": f"no session {session_id!r} for this key"}, status=404)
        await run_in_threadpool(self.settle)
        rows = await run_in_threadpool(self.ledger.rows, session_id)
        window = await run_in_threadpool(self._inspection, session_id)
        return _json({"session_id": session_id, "rows": [_row(r) for r in rows], "window": window})

    def _notes(self, sessions: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
        notes: dict[str, dict[str, Any]] = {}
        for s in sessions:
            events = self._window_events(s["session_id"])
            warnings = [f"{e['kind']}: {e['cause']}" for e in events if e["kind"].startswith("restart")]
            if s.get("model_note"):
                warnings.insert(0, s["model_note"])
            if s["fallbacks"]:
                warnings.append(f"{s['fallbacks']} request(s) fell back to pass-through")
            notes[s["session_id"]] = {"window_events": events, "warnings": warnings}
        return notes

    def _window_events(self, session_id: str) -> list[dict[str, Any]]:
        """The session's window events, read incrementally (only events newer than the last read)."""
        store = self.store
        with self._lock:
            since, known = self._events.get(session_id, (0, []))
        try:
            new = list(store.iter_events(session_id, since_seq=since))
        except SessionNotFound:
            return []
        found = [w for w in map(window_event, new) if w is not None]
        events = [*known, *found]
        with self._lock:
            self._events[session_id] = (new[-1].seq if new else since, events)
        return events

    def _inspection(self, session_id: str) -> dict[str, Any] | None:
        """The window the next request would see, rebuilt when the session has grown."""
        store = self.store
        try:
            last = store.get_session(session_id).last_seq
        except SessionNotFound:
            return None
        with self._lock:
            cached = self._inspections.get(session_id)
        if cached is not None and cached[0] == last:
            return cached[1]
        try:
            view = inspect_session(store, session_id, counter=self.counter).to_dict()
            # the page shows the composition and what each reduction hit, not every message
            previews = {item["source"]: item["preview"] for item in view.pop("items")}
            for decision in view["decisions"]:
                decision["what"] = " ".join(previews.get(decision["target"], "").split())[:PREVIEW_CHARS]
        except ContextWardenError as exc:
            view = {"error": str(exc)}
        with self._lock:
            self._inspections[session_id] = (last, view)
        return view


def _row(row: LedgerRow) -> dict[str, Any]:
    return {
        "at": row.at,
        "outcome": row.outcome,
        "status": row.status,
        "client_tokens": row.client_tokens,
        "forwarded_tokens": row.forwarded_tokens,
        "input_tokens": row.input_tokens,
        "cache_read_tokens": row.cache_read_tokens,
        "cache_write_tokens": row.cache_write_tokens,
        "output_tokens": row.output_tokens,
        "effective_cost_usd": row.effective_cost_usd,
        "client_cost_usd": row.client_cost_usd,
        "note": row.note,
    }


def _json(data: Any, status: int = 200) -> Response:
    return JSONResponse(data, status_code=status, headers={"cache-control": "no-store"})
