"""The HTTP edge: a Starlette app that moves bytes between the client and the upstream.

Model calls (``/v1/messages``, ``/v1/chat/completions``, ``/v1/responses``, Gemini's
``/v1beta/models/{model}:generateContent`` and ``:streamGenerateContent``: :mod:`.gemini`) go through the
:class:`~.pipeline.Pipeline`; everything else is passed through untouched. On a store on this
machine (SQLite, or PostgreSQL over a unix socket or loopback) the pipeline runs on the event loop
itself: its statements are short (none of them waits for the disk: :meth:`.Pipeline.prepare`), and
the hop to a worker thread and back cost more than they do while buying no parallelism under the GIL
(docs/benchmarks.md, "Proxy under load"). On a PostgreSQL server elsewhere every step runs on worker
threads, so the loop never waits on the network. After a fall-back (a store locked by another
process, say) or a request that took longer than :data:`SLOW_ON_LOOP_MS` to prepare, steps run on
worker threads for a while, so a store that makes requests wait never stalls the loop (nor
``/metrics``) again.
Never break the agent: a failure inside the pipeline forwards the client's original bytes, unread,
and counts a fall-back; upstream errors reach the client with their status, headers and body; an
upstream that cannot be reached gets the client a 502 in its protocol's error shape and the log one
line; a client that disconnects mid-stream gets its turn recorded as interrupted, with nothing
half-written.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import aiohttp
import anyio
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from ..errors import StoreError
from ..log.store import SessionStore
from ..providers.classify import is_context_overflow
from . import collector, forward, gemini
from ._db import ProxyDB, local_storage, open_session_store
from .access import Access, deployment_salts
from .failures import with_taxonomy
from .metrics import ProxyMetrics
from .pipeline import Pipeline, Prepared, fallback
from .recorder import RECORDER_THREADS, Recorder, Sent
from .settings import ProxySettings
from .spend import REFUSAL_STATUS, REFUSED, refusal_body
from .tee import StreamTee, parse_body
from .viewer import LiveView

log = logging.getLogger("contextwarden.proxy")

OFF_LOOP_SECONDS = 5.0
"""After a fall-back or a slow step, how long pipeline steps run on worker threads only (the store may be making
them wait)."""
SLOW_ON_LOOP_MS = 50.0
"""A request prepared on the loop in longer than this sends the steps after it to worker threads."""

MODEL_ROUTES = {
    "/v1/messages": "anthropic",
    "/v1/chat/completions": "openai_chat",
    "/v1/responses": "openai_responses",
}
"""Paths whose requests are projected, and their wire format."""


class Proxy:
    """The proxy: ``.app`` is the ASGI application."""

    def __init__(
        self, settings: ProxySettings, *, store: SessionStore | None = None, db: ProxyDB | None = None
    ) -> None:
        """Serve ``settings``; ``store`` and ``db`` default to the ones ``settings.store_url`` names."""
        self.settings = settings
        pool = settings.db_connections
        self.store = store or open_session_store(settings.store_url, lock_wait=settings.lock_wait, connections=pool)
        self.db = db or ProxyDB(settings.store_url, lock_wait=settings.lock_wait, connections=pool)
        self.pipeline = Pipeline(settings, self.store, self.db)
        legacy = () if settings.salt else deployment_salts(self.db)[1]
        self.access = Access(salt=self.pipeline.salt, legacy_salts=legacy, admin_token=settings.admin_token)
        """Who may read which sessions' records (the stats and the live page)."""
        self.metrics = ProxyMetrics()
        self.pipeline.accountant.on_row = self.metrics.accounted
        self.upstream: aiohttp.ClientSession | None = None
        self._on_loop = local_storage(self.store, self.db)
        """Whether pipeline steps may run on the event loop (module docstring)."""
        self._off_loop_until = 0.0
        """Until this ``time.monotonic()``, pipeline steps run on worker threads (set by a fall-back)."""
        # each session's answers are filed in the order they completed (:mod:`.recorder`)
        self._recorder = Recorder(RECORDER_THREADS if self.db.postgres else 1)
        self.app = Starlette(
            routes=[
                Route("/contextwarden/stats", self._stats, methods=["GET"]),
                *LiveView(
                    access=self.access,
                    ledger=self.pipeline.ledger,
                    store=self.store,
                    counter=self.pipeline.manager.counter,
                    settle=self.settle,
                ).routes(),
                Route("/metrics", self._metrics, methods=["GET"]),
                *(Route(path, self._model_call, methods=["POST"]) for path in MODEL_ROUTES),
                Route("/v1/messages/count_tokens", self._count_tokens, methods=["POST"]),
                Route("/{version}/models/{target}", self._gemini, methods=["POST"]),
                Route("/{path:path}", self._passthrough, methods=["GET", "POST", "PUT", "PATCH", "DELETE"]),
            ],
            lifespan=self._lifespan,
        )

    @contextlib.asynccontextmanager
    async def _lifespan(self, app: Starlette) -> AsyncIterator[None]:
        with collector.between_requests():
            async with forward.upstream_session(self.settings) as session:
                self.upstream = session
                yield
            self.upstream = None

    # ------------------------------------------------------------------ model calls

    async def _gemini(self, request: Request) -> Response | _Answer:
        """A Gemini ``models/{model}:{method}`` call (:mod:`.gemini`); methods it does not read pass through."""
        params = request.path_params
        call = gemini.gemini_call(params["version"], params["target"], request.query_params)
        if call is None:
            return await self._passthrough(request)
        if call.method == gemini.COUNT_METHOD:
            return await self._count_tokens(request, fmt="gemini")
        return await self._model_call(request, call)

    async def _model_call(self, request: Request, call: gemini.GeminiCall | None = None) -> Response | _Answer:
        fmt = MODEL_ROUTES[request.url.path] if call is None else "gemini"
        model, stream = (call.model, call.stream) if call is not None else ("", False)
        raw = await request.body()
        headers = {k.lower(): v for k, v in request.headers.items()}
        try:
            credential = _credential(request)
            if self._loop_may_run():
                prepared = self.pipeline.prepare(fmt, raw, headers, credential, model=model, stream=stream)
                if prepared.added_ms > SLOW_ON_LOOP_MS:  # the store answers slowly now: the loop must not wait on it
                    self._off_loop_until = time.monotonic() + OFF_LOOP_SECONDS
            else:
                prepared = await run_in_threadpool(
                    functools.partial(self.pipeline.prepare, fmt, raw, headers, credential, model=model, stream=stream)
                )
        except Exception as exc:  # never break the agent: forward what the client sent
            log.warning("contextwarden proxy fell back to pass-through: %s: %s", type(exc).__name__, exc)
            self._off_loop_until = time.monotonic() + OFF_LOOP_SECONDS
            prepared = fallback(fmt, raw, exc)
            if call is not None:
                prepared.model, prepared.stream = call.model, call.stream
        self.metrics.prepared(prepared)
        if prepared.outcome == "fallback":
            return await self._fall_back(request, prepared, raw)
        if prepared.refused is not None:  # the task's budget is spent: nothing goes upstream
            self._submit(prepared, 0, None, None, REFUSED)
            body = refusal_body(fmt, prepared.refused)
            return Response(body, status_code=REFUSAL_STATUS, media_type="application/json")
        sent = Sent()
        return _Answer(await self._forward(request, prepared, raw, sent, retry=True), sent)

    async def _forward(self, request: Request, prepared: Prepared, raw: bytes, sent: Sent, *, retry: bool) -> Response:
        try:
            upstream = await self._send(request, prepared.body)
        except forward.TRANSPORT_ERRORS as exc:
            self._submit(prepared, 0, None, None, "upstream_error")
            return self._unreachable(request, exc)
        if upstream.status_code != 200 or not prepared.stream:
            data = b"".join([chunk async for chunk in upstream.aiter_raw()])
            await upstream.aclose()
            retried = await self._after_overflow(prepared, raw, upstream, data) if retry else None
            if retried is not None:
                self.metrics.prepared(retried)
                return await self._forward(request, retried, raw, sent, retry=False)
            assistant, usage = self._read_body(prepared, upstream, data)
            await self._file(prepared, upstream.status_code, assistant, usage, sent)
            return Response(data, status_code=upstream.status_code, headers=_headers(upstream))
        return StreamingResponse(
            self._tee(prepared, upstream, sent), status_code=upstream.status_code, headers=_headers(upstream)
        )

    async def _file(self, prepared: Prepared, status: int, assistant: Any, usage: Any, sent: Sent) -> None:
        """File an answer's turn before its last byte goes out; the rest on the recorder thread once it has.

        The client's next request of the session finds the turn in the log (:meth:`Pipeline.answered`);
        the ledger row and the checkpoint wait for ``sent``, so neither competes with the answer's last
        bytes for the interpreter. The usage goes to the task's spending here, so its next request (of
        any lane) is checked against it.
        """
        if prepared.fmt == "gemini" and assistant is not None:  # as the session's next request will echo it
            assistant = gemini.as_echoed(assistant, prepared.client_body)
        spending = self.pipeline.spending
        if spending is not None and prepared.identity is not None and usage is not None:
            spending.record(prepared.identity, usage)
        try:
            answer = assistant if status == 200 else None
            if self._loop_may_run():
                self.pipeline.answered(prepared, answer, usage)
            else:
                await run_in_threadpool(self.pipeline.answered, prepared, answer, usage)
        except Exception as exc:  # the store may be down; the next request then finds its session anew
            log.warning("contextwarden proxy could not remember a turn: %s: %s", type(exc).__name__, exc)
            self._off_loop_until = time.monotonic() + OFF_LOOP_SECONDS
        session = prepared.identity.session_id if prepared.identity else ""
        self._recorder.after(sent, session, self._record, prepared, status, assistant, usage, None)

    def _loop_may_run(self) -> bool:
        """Whether a pipeline step may run on the event loop now (module docstring)."""
        return self._on_loop and time.monotonic() >= self._off_loop_until

    async def _after_overflow(
        self, prepared: Prepared, raw: bytes, upstream: forward.Upstream, data: bytes
    ) -> Prepared | None:
        """A compacted retry after a context overflow (nothing has reached the client yet), or ``None``."""
        if upstream.status_code < 400 or prepared.identity is None or prepared.outcome == "fallback":
            return None
        text = data.decode("utf-8", "replace") if not upstream.headers.get("content-encoding") else ""
        if not is_context_overflow(upstream.status_code, text):
            return None
        try:
            return await run_in_threadpool(self.pipeline.compact_for_overflow, prepared, raw)
        except Exception as exc:  # the overflow error itself is what the client gets
            log.warning("contextwarden proxy could not compact after an overflow: %s: %s", type(exc).__name__, exc)
            return None

    async def _fall_back(self, request: Request, prepared: Prepared, raw: bytes) -> Response:
        """Forward the client's bytes as they came and relay the answer as it comes; then file its ledger row."""
        try:
            upstream = await self._send(request, raw)
        except forward.TRANSPORT_ERRORS as exc:
            self._submit(prepared, 0, None, None, "upstream_error")
            return self._unreachable(request, exc)
        status = upstream.status_code

        async def relayed() -> AsyncIterator[bytes]:
            try:
                async for chunk in _relay(upstream):
                    yield chunk
            finally:
                self._submit(prepared, status, None, None, None)

        return StreamingResponse(relayed(), status_code=status, headers=_headers(upstream))

    def _upstream_url(self, request: Request) -> str:
        url = self.settings.upstream_for(request.url.path) + request.url.path
        return url + "?" + request.url.query if request.url.query else url

    def _unreachable(self, request: Request, exc: BaseException) -> Response:
        """The client's answer when the upstream cannot be reached: a 502 naming it, one log line."""
        upstream = self.settings.upstream_for(request.url.path)
        message = f"contextwarden proxy could not reach the upstream {upstream}: {type(exc).__name__}: {exc}"
        log.warning("%s", message)
        fmt = forward.format_of(request.url.path)
        body = forward.error_body(fmt, message, kind="api_error", code="bad_gateway", status=502)
        return Response(body, status_code=502, media_type="application/json")

    async def _send(self, request: Request, body: bytes) -> forward.Upstream:
        assert self.upstream is not None, "the proxy's lifespan did not run"
        url = self._upstream_url(request)
        headers = forward.forwarded_headers(request.headers.items())
        return await forward.send(self.upstream, request.method, url, headers, body)

    async def _tee(self, prepared: Prepared, upstream: forward.Upstream, sent: Sent) -> AsyncIterator[bytes]:
        tee = StreamTee(prepared.fmt, upstream.headers.get("content-encoding", ""))
        filed = False
        try:
            async for chunk in upstream.aiter_raw():
                tee.feed(chunk)
                if tee.done and not filed:
                    filed = True  # before the client sees the end, so its next request waits for the turn
                    await self._file(prepared, 200, *tee.result(), sent)
                yield chunk
        except forward.TRANSPORT_ERRORS as exc:  # the status is out: the client sees the stream end early
            log.warning("contextwarden proxy lost the upstream mid-stream: %s: %s", type(exc).__name__, exc)
        finally:
            await upstream.aclose()
            if not filed:
                with anyio.CancelScope(shield=True):
                    await run_in_threadpool(self._record, prepared, 200, None, None, "interrupted")

    def _read_body(self, prepared: Prepared, upstream: forward.Upstream, data: bytes) -> tuple[Any, Any]:
        if upstream.status_code != 200:
            return None, None
        try:
            return parse_body(prepared.fmt, data, upstream.headers.get("content-encoding", ""))
        except Exception as exc:  # the client has its answer; only the record is lost
            log.warning("contextwarden proxy could not read a response: %s", exc)
            return None, None

    def _submit(self, prepared: Prepared, status: int, assistant: Any, usage: Any, outcome: str | None) -> None:
        """File a request the client has its answer to (or will have at once) on its session's recorder thread."""
        session = prepared.identity.session_id if prepared.identity else ""
        self._recorder.submit(session, self._record, prepared, status, assistant, usage, outcome)

    def _record(self, prepared: Prepared, status: int, assistant: Any, usage: Any, outcome: str | None) -> None:
        try:
            self.pipeline.record(prepared, status=status, assistant=assistant, usage=usage, outcome=outcome)
        except Exception as exc:  # the store may be down; the agent already has its answer
            self.metrics.record_failures.inc()
            log.warning("contextwarden proxy could not record a turn: %s: %s", type(exc).__name__, exc)
        finally:  # the answer is out: the collector's due passes run now, not inside the next request
            collector.collect_due()

    # ------------------------------------------------------------------ everything else

    async def _passthrough(self, request: Request) -> Response:
        try:
            upstream = await self._send(request, await request.body())
        except forward.TRANSPORT_ERRORS as exc:
            return self._unreachable(request, exc)
        return StreamingResponse(_relay(upstream), status_code=upstream.status_code, headers=_headers(upstream))

    async def _count_tokens(self, request: Request, fmt: str = "anthropic") -> Response:
        """Count what the proxy would forward (manage mode); observing, count what the client sent."""
        raw = await request.body()
        body = raw
        if self.settings.mode == "manage":
            headers = {k.lower(): v for k, v in request.headers.items()}
            count = functools.partial(self.pipeline.prepare_count, headers=headers, credential=_credential(request))
            try:
                if fmt == "gemini":
                    body = await run_in_threadpool(gemini.counted, raw, functools.partial(count, fmt=fmt))
                else:
                    body = await run_in_threadpool(count, raw)
            except Exception as exc:  # never break the agent: count what the client sent
                log.warning("contextwarden proxy counted the client's own request: %s: %s", type(exc).__name__, exc)
        try:
            upstream = await self._send(request, body)
        except forward.TRANSPORT_ERRORS as exc:
            return self._unreachable(request, exc)
        return StreamingResponse(_relay(upstream), status_code=upstream.status_code, headers=_headers(upstream))

    async def _stats(self, request: Request) -> Response:
        session = request.query_params.get("session") or None
        viewer = self.access.viewer(request.headers.items())
        try:
            await run_in_threadpool(self.settle)
            stats = await run_in_threadpool(self.pipeline.ledger.stats, session, visible=viewer.sees)
            if request.query_params.get("taxonomy") in ("1", "true"):
                stats = await run_in_threadpool(with_taxonomy, self.store, stats, counter=self.pipeline.manager.counter)
        except StoreError as exc:  # the database is away: say so, and try again later
            message = f"the proxy's store cannot be read now: {exc}"
            return JSONResponse({"error": {"type": "store_unavailable", "message": message}}, status_code=503)
        return JSONResponse(stats)

    async def _metrics(self, request: Request) -> Response:
        body, content_type = self.metrics.exposition()
        return Response(body, media_type=content_type)

    def settle(self) -> None:
        """Wait until every answer so far is filed and in the ledger (for readers of the stats)."""
        self._recorder.settle()
        self.pipeline.accountant.flush()

    def close(self) -> None:
        """File the pending answers, write the remaining ledger rows; release the store and the proxy's tables."""
        self._recorder.close()
        self.pipeline.close()
        self.store.close()
        self.db.close()


@dataclass(frozen=True)
class _Answer:
    """A model call's response, and the event set once it is sent (or its sending ended otherwise)."""

    response: Response
    sent: Sent

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await self.response(scope, receive, send)
        finally:
            self.sent.set()


async def _relay(upstream: forward.Upstream) -> AsyncIterator[bytes]:
    try:
        async for chunk in upstream.aiter_raw():
            yield chunk
    except forward.TRANSPORT_ERRORS as exc:  # the status is out: the client sees the body end early
        log.warning("contextwarden proxy lost the upstream mid-answer: %s: %s", type(exc).__name__, exc)
    finally:
        await upstream.aclose()


def _credential(request: Request) -> str:
    """The caller's credential: its credential header, else a ``key`` query parameter (Gemini's other way)."""
    return forward.credential(request.headers.items()) or request.query_params.get("key", "")


def _headers(upstream: forward.Upstream) -> dict[str, str]:
    return dict(upstream.client_headers())
