"""Serving an ASGI app with uvicorn: in the foreground (the CLI), as worker processes, or in a background thread.

The background thread is for tests and benchmarks.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import socket
import threading
import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import uvicorn

if TYPE_CHECKING:
    from .settings import ProxySettings

LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
"""Hosts a proxy may bind to without ``--allow-remote``."""


WORKER_SETTINGS_ENV = "CONTEXTWARDEN_PROXY_WORKER_SETTINGS"
"""How the parent hands each worker process the proxy's settings (JSON of :class:`.settings.ProxySettings`)."""


def serve_workers(settings: ProxySettings, *, host: str, port: int, workers: int) -> None:
    """Serve the proxy with ``workers`` processes on one port until interrupted.

    Each worker is a whole proxy (its own connections, threads and caches) on the one store, so a
    session's requests may reach any of them: they find a session by the history it extends, in the
    store's tables. The store is opened (and its schema brought up to date) here first, so the
    workers start on a ready schema rather than racing to create it.
    """
    from ._db import ProxyDB, open_session_store

    open_session_store(settings.store_url).close()
    ProxyDB(settings.store_url).close()
    os.environ[WORKER_SETTINGS_ENV] = json.dumps(dataclasses.asdict(worker_settings(settings, workers)))
    uvicorn.run(
        "contextwarden.proxy.serve:worker_app",
        factory=True,
        workers=workers,
        host=host,
        port=port,
        log_level="warning",
    )


def worker_settings(settings: ProxySettings, workers: int) -> ProxySettings:
    """One of ``workers`` workers' settings: its share of the database connections (at least one)."""
    return dataclasses.replace(settings, db_connections=max(1, -(-settings.db_connections // workers)))


def worker_app() -> Any:
    """One worker's proxy (uvicorn's factory): the parent's settings; closed when the worker stops."""
    from .app import Proxy
    from .settings import ProxySettings

    proxy = Proxy(ProxySettings(**json.loads(os.environ[WORKER_SETTINGS_ENV])))
    inner = proxy.app.router.lifespan_context

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[None]:
        try:
            async with inner(app):
                yield
        finally:
            proxy.close()

    proxy.app.router.lifespan_context = lifespan
    return proxy.app


class BackgroundServer:
    """Serves ``app`` on 127.0.0.1 on a free port, on a daemon thread, until :meth:`stop`."""

    def __init__(self, app: Any, *, host: str = "127.0.0.1", port: int = 0) -> None:
        """Bind now (so ``url`` is known at once); call :meth:`start` to begin answering."""
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((host, port))
        self.host, self.port = self.sock.getsockname()[:2]
        config = uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=1)
        self.server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    @property
    def url(self) -> str:
        """The server's base URL."""
        return f"http://{self.host}:{self.port}"

    def start(self) -> BackgroundServer:
        """Start serving and wait until the server answers."""
        self._thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError(f"server on {self.url} did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        """Stop serving and release the port."""
        self.server.should_exit = True
        self._thread.join(timeout=10)
        self.sock.close()

    def __enter__(self) -> BackgroundServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
