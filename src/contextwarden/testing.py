"""Test doubles shipped with the library, so users test their agents the way we test ours.

:class:`ScriptedProvider` is a :class:`~contextwarden.providers.Provider` that answers from a
queue: replies, assistant messages, plain strings, callables or exceptions to raise. It records every request (the
:class:`~contextwarden.context.ModelContext` it was given) and its options, so a test can assert what
the model was shown::

    provider = ScriptedProvider(["first answer", RateLimitError("slow down"), "second answer"])
    provider.complete(session.build())  # -> ModelReply whose .text is "first answer"
    provider.requests[0].messages       # what was sent

:class:`SessionBuilder` appends to a stored session the way an agent does (an instruction, the task, then
tool calls each followed by its result), so a test states the session it needs in a few lines::

    session = SessionBuilder(MemoryStore()).start("Fix the failing test.", system="You are a coding agent.")
    session.call("bash", "1 failed", exit_code=1, command="pytest -q")
    ContextManager(session.store).build(session.session_id, model="gpt-4o")
"""

from __future__ import annotations

import dataclasses
import itertools
import random
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, cast

from .chat import CallOptions, ModelReply, model_reply
from .context import ModelContext
from .errors import Cancelled, PromptTooLongError, UsageError
from .log import events as _events
from .log.events import AssistantMessage, Event, Instruction, JSONValue, ToolCall, ToolResult, UsageReport, UserMessage

if TYPE_CHECKING:
    from .log.store import SessionStore

ScriptItem = ModelReply | AssistantMessage | BaseException | str | Callable[[ModelContext], ModelReply]
"""One scripted answer: a reply, an assistant message or a text (wrapped in a reply), a function of
the request, or an exception to raise."""


def estimate_request_tokens(request: ModelContext) -> int:
    """Estimate a request's size deterministically (about four characters per token) for scripted usage."""
    texts = ([request.system] if request.system else []) + [m.text for m in request.messages]
    chars = sum(len(t) for t in texts) + sum(len(str(c.arguments)) for m in request.messages for c in m.tool_calls)
    chars += sum(
        len(str({"name": t.name, "description": t.description, "parameters": t.parameters})) for t in request.tools
    )
    return chars // 4 + 4 * len(texts)


def make_response(
    text: str = "",
    *,
    tool_calls: Iterable[ToolCall] = (),
    stop_reason: str | None = None,
    usage: UsageReport | None = None,
    model: str = "scripted-model",
) -> ModelReply:
    """Build a :class:`~contextwarden.chat.ModelReply`.

    ``stop_reason`` defaults to ``tool_use`` with calls, else ``end_turn``; ``usage`` to a quarter of
    the text's characters as output tokens.
    """
    message = AssistantMessage(text=text, tool_calls=tuple(tool_calls), stop_reason=stop_reason or "", model=model)
    usage = usage if usage is not None else UsageReport(input_tokens=0, output_tokens=max(1, len(text) // 4))
    return _reply(message, usage, model)


def _reply(message: AssistantMessage, usage: UsageReport, model: str) -> ModelReply:
    if not message.stop_reason:
        message = dataclasses.replace(message, stop_reason="tool_use" if message.tool_calls else "end_turn")
    return model_reply(message, usage, model=model)


class ScriptedProvider:
    """A provider that returns queued responses or raises queued errors, and records each request.

    With ``context_window`` set it behaves like a real server with a small window: a request whose
    estimated size (:func:`estimate_request_tokens`) plus the options' ``max_tokens`` exceeds it raises
    ``PromptTooLongError`` without consuming a scripted item. A set cancel event raises
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
        self.requests: list[ModelContext] = []
        """Every request received, in order (including those that raised)."""
        self.options: list[CallOptions] = []
        """The options of every call, in order (the defaults where a call gave none)."""
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

    def complete(self, context: ModelContext, *, options: CallOptions | None = None) -> ModelReply:
        """Record ``context`` and answer with the next scripted item."""
        with self._lock:
            self.requests.append(context)
            options = options or CallOptions()
            self.options.append(options)
            if options.cancel is not None and options.cancel.is_set():
                raise Cancelled(f"{self.name}: the call was cancelled")
            estimate = estimate_request_tokens(context)
            output = options.max_tokens or 0
            if self.context_window is not None and estimate + output > self.context_window:
                raise PromptTooLongError(
                    f"{self.name}: request ({estimate} tokens + {output} output) exceeds the "
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
        if isinstance(item, ModelReply):
            return item
        if isinstance(item, str):
            item = AssistantMessage(text=item)
        if isinstance(item, AssistantMessage):
            return _reply(
                item, UsageReport(input_tokens=estimate, output_tokens=max(1, len(item.text) // 4)), self.model
            )
        return item(context)


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
