"""Test doubles shipped with the library, so users test their agents the way we test ours.

:class:`ScriptedProvider` is a :class:`~contextwarden.providers.Provider` that answers from a
queue: responses, plain strings, callables or exceptions to raise. It records every request, so a
test can assert what the model was shown::

    provider = ScriptedProvider(["first answer", RateLimitError("slow down"), "second answer"])
    provider.complete(request)          # -> ChatResponse(text="first answer", ...)
    provider.requests[0].messages       # what was sent

:class:`SessionBuilder` appends to a stored session the way an agent does (an instruction, the task, then
tool calls each followed by its result), so a test states the session it needs in a few lines::

    session = SessionBuilder(MemoryStore()).start("Fix the failing test.", system="You are a coding agent.")
    session.call("bash", "1 failed", exit_code=1, command="pytest -q")
    ContextManager(session.store).build(session.session_id, model="gpt-4o")
"""

from __future__ import annotations

import itertools
import random
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, cast

from .chat import CallOptions, ChatRequest, ChatResponse, Usage
from .errors import Cancelled, ContextOverflowError, UsageError
from .log import events as _events
from .log.events import AssistantMessage, Event, Instruction, JSONValue, ToolCall, ToolResult, UserMessage

if TYPE_CHECKING:
    from .log.store import SessionStore

ScriptItem = ChatResponse | BaseException | str | Callable[[ChatRequest], ChatResponse]
"""One scripted answer: a response, a text (wrapped in a response), a function of the request, or
an exception to raise."""


def estimate_request_tokens(request: ChatRequest) -> int:
    """Estimate a request's size deterministically (about four characters per token) for scripted usage."""
    chars = sum(len(m.content) + sum(len(str(c.arguments)) for c in m.tool_calls) for m in request.messages)
    chars += sum(len(str(tool)) for tool in request.tools)
    return chars // 4 + 4 * len(request.messages)


def make_response(
    text: str = "",
    *,
    tool_calls: Iterable[ToolCall] = (),
    stop_reason: str | None = None,
    usage: Usage | None = None,
    model: str = "scripted-model",
) -> ChatResponse:
    """Build a :class:`ChatResponse`.

    ``stop_reason`` defaults to ``tool_use`` with calls, else ``end_turn``.
    """
    calls = tuple(tool_calls)
    return ChatResponse(
        text=text,
        tool_calls=calls,
        stop_reason=stop_reason if stop_reason is not None else ("tool_use" if calls else "end_turn"),
        usage=usage if usage is not None else Usage(output_tokens=max(1, len(text) // 4)),
        model=model,
    )


class ScriptedProvider:
    """A provider that returns queued responses or raises queued errors, and records each request.

    With ``context_window`` set it behaves like a real server with a small window: a request whose
    estimated size (:func:`estimate_request_tokens`) plus ``max_tokens`` exceeds it raises
    ``ContextOverflowError`` without consuming a scripted item. A set cancel event raises
    ``Cancelled`` the same way. An empty script raises ``UsageError``: the test forgot an answer.
    """

    name: str

    def __init__(
        self,
        script: Iterable[ScriptItem] = (),
        *,
        name: str = "scripted",
        model: str = "scripted-model",
        context_window: int | None = None,
    ) -> None:
        """Queue ``script``; ``model`` names the model in responses built from strings."""
        self.name = name
        self.model = model
        self.context_window = context_window
        self.requests: list[ChatRequest] = []
        """Every request received, in order (including those that raised)."""
        self.options: list[CallOptions | None] = []
        """The options of every call, in order."""
        self._script: deque[ScriptItem] = deque(script)
        self._lock = threading.Lock()

    def push(self, *items: ScriptItem) -> None:
        """Append answers to the script."""
        with self._lock:
            self._script.extend(items)

    @property
    def remaining(self) -> int:
        """How many scripted answers are left."""
        with self._lock:
            return len(self._script)

    def complete(self, request: ChatRequest, *, options: CallOptions | None = None) -> ChatResponse:
        """Record ``request`` and answer with the next scripted item."""
        with self._lock:
            self.requests.append(request)
            self.options.append(options)
            if options is not None and options.cancel is not None and options.cancel.is_set():
                raise Cancelled(f"{self.name}: the call was cancelled")
            estimate = estimate_request_tokens(request)
            if self.context_window is not None and estimate + request.max_tokens > self.context_window:
                raise ContextOverflowError(
                    f"{self.name}: request ({estimate} tokens + {request.max_tokens} output) exceeds the "
                    f"context window of {self.context_window} tokens",
                    status=400,
                )
            if not self._script:
                raise UsageError(
                    f"{self.name}: no scripted answer left for request {len(self.requests)}; push() one more response"
                )
            item = self._script.popleft()
        if isinstance(item, BaseException):
            raise item
        if isinstance(item, ChatResponse):
            return item
        if isinstance(item, str):
            return make_response(
                item,
                usage=Usage(input_tokens=estimate, output_tokens=max(1, len(item) // 4)),
                model=self.model,
            )
        return item(request)


@contextmanager
def seeded_event_ids(seed: int) -> Iterator[None]:
    """Within the block, new event ids come from a generator seeded with ``seed``, not the clock.

    A scripted session then gets the same ids on every run, and so do the placeholders and markers that
    name them: pages generated from such runs (``experiments/``) can be regenerated byte for byte. The ids
    keep their UUIDv7 shape and stay unique within the run; never use this around a real store.
    """
    rng = random.Random(seed)
    step = itertools.count(1)

    def source() -> tuple[int, int]:
        return 1_700_000_000_000 + next(step), rng.getrandbits(80)

    previous = _events._id_source
    _events._id_source = source
    try:
        yield
    finally:
        _events._id_source = previous


class SessionBuilder:
    """Appends events to one stored session the way an agent does, numbering tool calls ``c1``, ``c2``...

    Each append names the session's last sequence number as the one it expects, as a single writer
    does. The session is created unless ``create=False`` (then it must exist).
    """

    def __init__(self, store: SessionStore, session_id: str = "s", *, create: bool = True) -> None:
        self.store = store
        """The store the session lives in."""
        self.session_id = session_id
        """The session appended to."""
        self.calls = 0
        """Tool calls made so far; the next one's id is ``c{calls + 1}``."""
        if create:
            store.create_session(session_id)

    def add(self, *events: Event) -> list[Event]:
        """Append ``events`` after the session's last event; return them as stored (ids and seqs set)."""
        last = self.store.get_session(self.session_id).last_seq
        return self.store.append(self.session_id, list(events), expected_last_seq=last)

    def start(self, task: str, *, system: str = "") -> SessionBuilder:
        """Append the system instruction (when given) and the user's task; return the builder."""
        self.add(*([Instruction(text=system)] if system else []), UserMessage(text=task))
        return self

    def user(self, text: str) -> list[Event]:
        """Append a user message."""
        return self.add(UserMessage(text=text))

    def call(
        self,
        name: str,
        output: str,
        *,
        error: bool = False,
        exit_code: int | None = None,
        text: str = "",
        **arguments: JSONValue,
    ) -> ToolResult:
        """Append an assistant turn calling tool ``name`` with ``arguments``, then its result; return the result.

        ``text`` is the assistant's text beside the call; ``error`` and ``exit_code`` describe the outcome.
        The stored result's ``id`` is what a placeholder or ``read_range`` names, its ``call_id`` the call's.
        """
        self.calls += 1
        call = ToolCall(id=f"c{self.calls}", name=name, arguments=dict(arguments))
        self.add(AssistantMessage(text=text, tool_calls=(call,)))
        result = ToolResult(call_id=call.id, tool_name=name, output=output, is_error=error, exit_code=exit_code)
        return cast(ToolResult, self.add(result)[0])

    def reply(self, text: str) -> list[Event]:
        """Append an assistant message without tool calls."""
        return self.add(AssistantMessage(text=text))
