"""What the HTTP providers share: the connection pool, the retrying call and the reply.

A provider for one wire format says where to POST (:attr:`HTTPProvider.path`), how to render a
:class:`~contextwarden.context.ModelContext` with its per-call options (:meth:`HTTPProvider.render`)
and how to read the decoded answer (:meth:`HTTPProvider.parse`); everything else (retries, timeouts,
cancellation, closing) is here once.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import TracebackType
from typing import ClassVar

import httpx

from ..chat import CallOptions, ModelReply, model_reply
from ..context import ModelContext
from ..log.events import AssistantMessage, JSONValue, UsageReport
from .retry import HttpCall, RetryPolicy, post_json, resolve_call_settings


class HTTPProvider:
    """A :class:`~contextwarden.providers.Provider` that POSTs one JSON body per call."""

    name: str
    path: ClassVar[str] = ""
    """Appended to the base URL for every call (``/chat/completions``, ``/v1/messages``)."""

    def __init__(
        self,
        base_url: str,
        *,
        headers: Mapping[str, str],
        timeout: float,
        max_retries: int,
        backoff_base: float,
        backoff_max: float,
        transport: httpx.BaseTransport | None,
        name: str,
    ) -> None:
        """Open the connection pool; ``transport`` replaces the network in tests."""
        self.name = name
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.policy = RetryPolicy(max_retries=max_retries, backoff_base=backoff_base, backoff_max=backoff_max)
        self._headers = dict(headers)
        self._client = httpx.Client(transport=transport, timeout=timeout)

    def complete(self, context: ModelContext, *, options: CallOptions | None = None) -> ModelReply:
        """Send ``context`` and return the parsed answer, or raise a ``ProviderError`` subclass."""
        settings = options or CallOptions()
        timeout, policy, cancel = resolve_call_settings(settings, timeout=self.timeout, policy=self.policy)
        call = HttpCall(
            provider=self.name,
            url=f"{self.base_url}{self.path}",
            payload=self.render(context, settings),
            headers=self._headers,
            timeout=timeout,
            policy=policy,
            cancel=cancel,
        )
        data = post_json(self._client, call)
        message, usage = self.parse(data)
        return model_reply(message, usage, model=settings.model or context.model, raw=data)

    def render(self, context: ModelContext, options: CallOptions) -> dict[str, JSONValue]:
        """The request body of ``context`` under ``options``."""
        raise NotImplementedError

    def parse(self, data: dict[str, JSONValue]) -> tuple[AssistantMessage, UsageReport | None]:
        """The answer and usage of a decoded 2xx body (``MalformedResponse`` or the classified error if none)."""
        raise NotImplementedError

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._client.close()

    def __enter__(self) -> HTTPProvider:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
