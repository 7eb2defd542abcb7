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
    ├── BudgetExceededError            a request cannot fit the model's budget after every reduction
    ├── BudgetExhausted                a session tree spent its weighted-token budget
    ├── SummaryRejected                a summary failed validation and was not persisted
    ├── CompactionError                compaction could not produce a usable window
    ├── FragmentError                  a fragment type is invalid (for example no hard cap)
    ├── ImportFormatError              a transcript file is malformed (names the file and line)
    └── ProviderError                  a model provider call failed
        ├── ContextOverflowError       the prompt did not fit the model's window
        ├── RateLimitError             429 or an equivalent; retried with backoff
        ├── ServerError                5xx; retried with backoff
        ├── ProviderTimeout            no answer in time
        ├── MalformedResponse          the answer could not be parsed (empty body, bad JSON)
        └── Cancelled                  the caller cancelled the call

    SummaryFallbackWarning             (a warning, not an error) the configured summarizer failed and the
                                       fallback wrote the summary; turn the fallback off to get the error

Messages say what happened and what to do next.
"""

from __future__ import annotations

from collections.abc import Mapping


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
    """The request does not fit the model's usable input budget even after every reduction.

    ``sections`` maps each section of the request (system, tools, pinned, summary, conversation,
    tool_output, ...) to its token count, so the caller can see what is too large.
    """

    def __init__(self, message: str, *, budget: int, total: int, sections: Mapping[str, int]) -> None:
        self.budget = budget
        self.total = total
        self.sections = dict(sections)
        parts = ", ".join(f"{k}={v}" for k, v in self.sections.items())
        super().__init__(f"{message}: {total} tokens > budget {budget} ({parts})")


class BudgetExhausted(ContextWardenError):
    """A session tree has spent its weighted-token budget; no further model call is allowed."""


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


class ContextOverflowError(ProviderError):
    """The prompt was larger than the model's context window."""


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
