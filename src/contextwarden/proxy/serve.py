"""Serving an ASGI app with uvicorn: in the foreground (the CLI) or on a background thread (tests, benchmarks)."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import uvicorn

LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
"""Hosts a proxy may bind to without ``--allow-remote``."""


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
