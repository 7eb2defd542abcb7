"""Every error contextwarden raises, in one place.

The hierarchy::

    ContextWardenError                 root: catch this to catch everything of ours
    ├── UsageError                     the caller misused the API (bad argument, bad config)
    │   ├── ConfigError                a configuration file or profile is invalid
    │   └── UnknownModelError          a model name no registered profile answers to
    ├── SessionNotFound                no session by that id
    ├── SessionExists                  a session by that id already exists
    ├── ConflictError                  optimistic concurrency: the expected last seq did not match
    ├── CodecError                     an event or a file could not be decoded (names the location)
    ├── StoreError                     the store failed for a reason other than the above
    ├── BudgetExceededError            the context cannot fit the model's input budget after every
    │                                  reduction (raised by build; nothing was sent)
    ├── SpendLimitReached              a session tree reached its spending limit (weighted tokens);
    │                                  no further model call is allowed
    ├── SummaryRejected                a summary failed validation and was not persisted
    ├── CompactionError                compaction could not produce a usable window
    ├── FragmentError                  a fragment type is invalid (for example no hard cap)
    ├── ImportFormatError              a transcript file is malformed (names the file and line)
    └── ProviderError                  a model provider call failed
        ├── PromptTooLongError         the provider refused a request as longer than the model's
        │                              context window (the provider's word, after sending)
        ├── RateLimitError             429 or an equivalent; retried with backoff
        ├── ServerError                5xx; retried with backoff
        ├── ProviderTimeout            no answer in time
        ├── MalformedResponse          the answer could not be parsed (empty body, bad JSON)
        └── Cancelled                  the caller cancelled the call

    SummaryFallbackWarning             (a warning, not an error) the configured summarizer failed and the
                                       fallback wrote the summary; turn the fallback off to get the error

Three errors are about size or cost and are easy to confuse: ``BudgetExceededError`` is ours, before
sending (the context does not fit); ``PromptTooLongError`` is the provider's, after sending (it refused
the request as too long); ``SpendLimitReached`` is about spending, not size (the task spent its limit).

Messages say what happened and what to do next.
"""

from __future__ import annotations

from collections.abc import Mapping

from ._deprecated import renamed

_RENAMED = {
    "BudgetExhausted": "SpendLimitReached",  # deprecated
    "ContextOverflowError": "PromptTooLongError",  # deprecated
}


class ContextWardenError(Exception):
    """Root of every contextwarden error."""


class UsageError(ContextWardenError):
    """The API was called in a way it does not support."""


class ConfigError(UsageError):
    """A configuration file, profile or policy is invalid."""


class UnknownModelError(UsageError):
    """A model name that no registered profile answers to (the message lists the known ones)."""


class SessionNotFound(ContextWardenError):
    """No session with the given id exists in the store."""


class SessionExists(ContextWardenError):
    """A session with the given id already exists."""


class ConflictError(ContextWardenError):
    """The caller's expected last seq did not match the store: someone else appended first.

    Re-read the session (``store.last_seq``), rebuild what you wanted to append, and retry.
    """

    def __init__(self, session_id: str, expected: int, actual: int) -> None:
        self.session_id = session_id
        self.expected = expected
        self.actual = actual
        super().__init__(
            f"session {session_id!r}: expected last seq {expected} but the store has {actual}; "
            "re-read the session and retry the append"
        )


class CodecError(ContextWardenError):
    """An event could not be encoded or decoded."""


class StoreError(ContextWardenError):
    """The session store failed."""


class BudgetExceededError(ContextWardenError):
    """The context does not fit the model's input budget even after every reduction.

    Raised by ``build`` before anything is sent; the provider never saw the request. Compare
    :class:`PromptTooLongError` (the provider refused a sent request) and :class:`SpendLimitReached`
    (a spending limit, not a size).

    ``sections`` maps each section of the request (system, tools, pinned, summary, conversation,
    tool_output, ...) to its token count, so the caller can see what is too large.
    """

    def __init__(self, message: str, *, budget: int, total: int, sections: Mapping[str, int]) -> None:
        self.budget = budget
        self.total = total
        self.sections = dict(sections)
        parts = ", ".join(f"{k}={v}" for k, v in self.sections.items())
        super().__init__(f"{message}: {total} tokens > budget {budget} ({parts})")


class SpendLimitReached(ContextWardenError):
    """A session tree has reached its spending limit (weighted tokens); no further model call is allowed.

    Raised by a :class:`~contextwarden.plan.spend.SpendTracker` check before a model call. Not about
    size: the context may fit, the task may not spend more.
    """


class SummaryRejected(ContextWardenError):
    """A summary failed validation (empty, truncated, missing sections, too long, a copy of its input)."""


class CompactionError(ContextWardenError):
    """Compaction could not produce a window that fits."""


class FragmentError(UsageError):
    """A fragment type is invalid: missing or excessive hard cap, bad markers."""


class ImportFormatError(ContextWardenError):
    """A transcript could not be imported. The message names the file and the line or field."""


class ProviderError(ContextWardenError):
    """A model provider call failed."""

    def __init__(self, message: str, *, status: int | None = None, body: str = "") -> None:
        self.status = status
        self.body = body
        super().__init__(message)


class PromptTooLongError(ProviderError):
    """The provider refused a request as longer than the model's context window.

    The provider's answer to a request that was sent (or a reply so full it can only be a silent
    overflow). Compare :class:`BudgetExceededError`, raised before sending when the context cannot fit.
    """


class RateLimitError(ProviderError):
    """The provider rate-limited the call."""


class ServerError(ProviderError):
    """The provider failed with a server error (5xx)."""


class ProviderTimeout(ProviderError):
    """The provider did not answer in time."""


class MalformedResponse(ProviderError):
    """The provider's answer could not be parsed."""


class Cancelled(ProviderError):
    """The call was cancelled by the caller."""


class SummaryFallbackWarning(UserWarning):
    """The configured summarizer failed and the fallback summarizer wrote the compaction's summary.

    The compaction's ``details["fallback"]`` and the build's ``compact`` decision say why.
    ``CompactionSettings(fallback=False)`` makes the failure an error instead, with the log unchanged.
    """


def __getattr__(name: str) -> object:
    """The errors' old names, for one release (each use warns)."""
    return renamed(__name__, name, _RENAMED, globals().__getitem__)
