"""The HTTP call loop shared by the provider clients: retries, backoff, timeouts and cancellation.

What is retried: rate limits (429, honouring ``Retry-After``), server errors (5xx) and connection
failures, with exponential backoff and jitter. What is not: context overflows and every other
4xx (the same request would fail the same way), and read timeouts (a model that was too slow once
is likely too slow again, and a retry would multiply the caller's wait). Cancellation is checked
before each attempt, while a request is in flight and during every backoff wait, and always wins.
"""

from __future__ import annotations

import email.utils
import json
import random
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

import httpx

from ..chat import CallOptions
from ..errors import (
    Cancelled,
    MalformedResponse,
    PromptTooLongError,
    ProviderError,
    ProviderTimeout,
    RateLimitError,
    ServerError,
)
from ..log.events import JSONValue
from .classify import classify_error

_CANCEL_POLL_SECONDS = 0.02
"""How often a cancellable request checks its cancel event while the HTTP call runs."""


@dataclass(frozen=True, kw_only=True)
class RetryPolicy:
    """How often and how long to wait between attempts."""

    max_retries: int = 3
    """Retries after the first attempt (0 = try once)."""
    backoff_base: float = 0.5
    """The first wait's upper bound in seconds; it doubles with every retry."""
    backoff_max: float = 30.0
    """No computed wait exceeds this many seconds."""
    max_retry_after: float = 60.0
    """A server's ``Retry-After`` is honoured up to this many seconds; a longer one is ignored in
    favour of the computed backoff (as the OpenAI and Anthropic SDKs do), so a bad header cannot
    stall the caller for hours."""


def backoff_delay(
    attempt: int,
    policy: RetryPolicy,
    *,
    retry_after: float | None = None,
    rng: Callable[[], float] = random.random,
) -> float:
    """Seconds to wait before retry number ``attempt + 1`` (``attempt`` counts from 0).

    A usable ``Retry-After`` is taken as given. Otherwise the wait is "equal jitter": between half
    and all of ``min(backoff_max, backoff_base * 2**attempt)``, so concurrent clients spread out
    but every client still backs off.
    """
    if retry_after is not None and 0 <= retry_after <= policy.max_retry_after:
        return retry_after
    ceiling = min(policy.backoff_max, policy.backoff_base * (2.0**attempt))
    return ceiling * (0.5 + 0.5 * rng())


def parse_retry_after(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """Read a server's requested wait in seconds from ``retry-after-ms`` or ``Retry-After``.

    ``Retry-After`` may be seconds or an HTTP date; ``retry-after-ms`` is OpenAI's finer form.
    Returns ``None`` when absent or unreadable.
    """
    lowered = {k.lower(): v for k, v in headers.items()}
    millis = lowered.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000.0)
        except ValueError:
            pass
    value = lowered.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    current = time.time() if now is None else now
    return max(0.0, when.timestamp() - current)


def wait_or_cancel(seconds: float, cancel: threading.Event | None) -> None:
    """Sleep ``seconds``; raise ``Cancelled`` as soon as ``cancel`` is set."""
    if cancel is None:
        time.sleep(seconds)
        return
    if cancel.wait(seconds):
        raise Cancelled("the call was cancelled while waiting to retry")


def check_cancel(cancel: threading.Event | None) -> None:
    """Raise ``Cancelled`` when ``cancel`` is set."""
    if cancel is not None and cancel.is_set():
        raise Cancelled("the call was cancelled")


@dataclass(frozen=True, kw_only=True)
class HttpCall:
    """One JSON POST and the settings it runs with."""

    provider: str
    """The provider's name, for error messages."""
    url: str
    """Where to POST."""
    payload: dict[str, JSONValue]
    """The JSON body."""
    headers: Mapping[str, str]
    """Extra request headers (authentication, versions)."""
    timeout: float
    """Seconds for one attempt."""
    policy: RetryPolicy
    """Retry settings."""
    cancel: threading.Event | None = None
    """The caller's cancel event."""


def resolve_call_settings(
    options: CallOptions | None, *, timeout: float, policy: RetryPolicy
) -> tuple[float, RetryPolicy, threading.Event | None]:
    """Apply per-call ``options`` over a provider's defaults."""
    if options is None:
        return timeout, policy, None
    if options.timeout is not None:
        timeout = options.timeout
    if options.max_retries is not None:
        policy = replace(policy, max_retries=options.max_retries)
    return timeout, policy, options.cancel


def post_json(client: httpx.Client, call: HttpCall) -> dict[str, JSONValue]:
    """POST ``call.payload`` with retries and return the decoded JSON object of a 2xx answer.

    Raises the ``ProviderError`` subclass that names the cause: ``PromptTooLongError``,
    ``RateLimitError`` / ``ServerError`` (after the retries are spent), ``ProviderTimeout``,
    ``MalformedResponse`` (empty or non-JSON 2xx body), ``Cancelled``, or ``ProviderError``.
    """
    attempt = 0
    while True:
        check_cancel(call.cancel)
        retry_after: float | None = None
        try:
            response = _send(client, call)
        except (httpx.ConnectTimeout, httpx.PoolTimeout) as exc:
            error: ProviderError = ProviderTimeout(
                f"{call.provider}: could not connect to {call.url} within {call.timeout:g}s "
                f"({type(exc).__name__}); check that the server is up"
            )
        except httpx.TimeoutException as exc:
            raise ProviderTimeout(
                f"{call.provider}: no answer from {call.url} within {call.timeout:g}s "
                f"({type(exc).__name__}); raise the timeout or use a faster model"
            ) from exc
        except httpx.TransportError as exc:
            error = ProviderError(f"{call.provider}: could not reach {call.url}: {type(exc).__name__}: {exc}")
        else:
            if response.is_success:
                return decode_json_body(response, call.provider)
            error = error_from_response(response, call.provider)
            if not isinstance(error, (RateLimitError, ServerError)):
                raise error
            retry_after = parse_retry_after(response.headers)
        if attempt >= call.policy.max_retries:
            if attempt:
                error = type(error)(
                    f"{error} (gave up after {attempt + 1} attempts)", status=error.status, body=error.body
                )
            raise error
        wait_or_cancel(backoff_delay(attempt, call.policy, retry_after=retry_after), call.cancel)
        attempt += 1


def _send(client: httpx.Client, call: HttpCall) -> httpx.Response:
    """Run the request; with a cancel event, in a worker thread so cancellation need not wait for it.

    httpx has no way to abort a synchronous request from another thread, so a cancelled request is
    abandoned: it finishes (or times out) in its daemon thread and its result is dropped.
    """

    def post() -> httpx.Response:
        return client.post(call.url, json=call.payload, headers=dict(call.headers), timeout=call.timeout)

    if call.cancel is None:
        return post()
    box: list[httpx.Response | BaseException] = []
    done = threading.Event()

    def run() -> None:
        try:
            box.append(post())
        except BaseException as exc:  # handed back to the caller's thread below
            box.append(exc)
        finally:
            done.set()

    threading.Thread(target=run, name="contextwarden-http", daemon=True).start()
    while not done.wait(_CANCEL_POLL_SECONDS):
        check_cancel(call.cancel)
    check_cancel(call.cancel)
    result = box[0]
    if isinstance(result, BaseException):
        raise result
    return result


def decode_json_body(response: httpx.Response, provider: str) -> dict[str, JSONValue]:
    """Decode a successful response's body as a JSON object or raise ``MalformedResponse``."""
    text = response.text
    if not text.strip():
        raise MalformedResponse(
            f"{provider}: HTTP {response.status_code} with an empty body; the server or a proxy dropped the answer",
            status=response.status_code,
            body=text,
        )
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise MalformedResponse(
            f"{provider}: HTTP {response.status_code} with a body that is not JSON ({exc.msg} at "
            f"char {exc.pos}): {text[:200]!r}",
            status=response.status_code,
            body=text,
        ) from exc
    if not isinstance(data, dict):
        raise MalformedResponse(
            f"{provider}: HTTP {response.status_code} with a JSON {type(data).__name__} instead of an object",
            status=response.status_code,
            body=text,
        )
    return data


_HINTS: dict[type[ProviderError], str] = {
    PromptTooLongError: "the prompt does not fit the model's context window; compact the "
    "conversation or use a model with a larger window",
    RateLimitError: "rate limited; wait or lower the request rate",
    ServerError: "the provider failed; try again later",
    ProviderError: "the request was rejected; fix it before retrying",
}


def error_from_response(response: httpx.Response, provider: str) -> ProviderError:
    """Build the classified error for a non-2xx response."""
    return make_error(provider, response.status_code, response.text)


def make_error(provider: str, status: int | None, body: str) -> ProviderError:
    """Build the classified error for a failure with ``status`` and ``body``."""
    cls = classify_error(status, body)
    where = f"HTTP {status}" if status is not None else "error"
    message = f"{provider}: {where}: {error_message(body)} ({_HINTS.get(cls, _HINTS[ProviderError])})"
    return cls(message, status=status, body=body)


def error_message(body: str) -> str:
    """Extract the human-readable message of an error body (OpenAI, Anthropic, FastAPI shapes)."""
    try:
        data = json.loads(body)
    except (json.JSONDecodeError, ValueError):
        data = None
    if isinstance(data, dict):
        error = data.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])
        for key in ("error", "message", "detail"):
            value = data.get(key)
            if isinstance(value, str):
                return value
        if data.get("detail") is not None:
            return json.dumps(data["detail"])[:500]
    text = body.strip()
    return text[:500] if text else "(empty body)"


def json_count(value: JSONValue) -> int:
    """Read a token count from a decoded body: a positive int, anything else (missing, null) as 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
