"""A session handle for agent loops: append what happened, build the next request.

The store's ``append`` takes the last seq the writer saw, so two writers cannot silently
interleave. But a build appends its own events (window events, the build record), so a caller
that counts seqs itself goes stale after every build. :class:`Session` keeps that count: it knows
the log up to the last event it appended or the last one its build read, and passes it on every
append. Another writer's append in between still makes the next append raise
:class:`~contextwarden.errors.ConflictError`; :meth:`Session.refresh` accepts what was written.

::

    session = manager.session("demo", model="gpt-4o", tools=TOOLS, create=True)
    session.append(UserMessage(text="Fix the failing test."))
    while True:
        context = session.build()
        reply = call_the_model(render(context, "openai_chat"))
        session.append(reply)
        ...
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..context import ModelContext, ToolDefinition
from ..errors import SessionNotFound, UsageError
from ..fragments import DEFAULT_REGISTRY
from ..log.events import Event, Instruction, ToolCall, ToolResult, UsageReport, UserMessage
from ..models import ModelProfile
from ..plan.seams import PolicyLike, WindowManager
from .project import ProjectContext, ProjectRules, project_context, told_fingerprint

__all__ = ["Session"]


class Session:
    """One session of one writer: appends and builds without sequence bookkeeping."""

    def __init__(
        self,
        manager: WindowManager,
        session_id: str,
        *,
        model: str | ModelProfile | None = None,
        tools: Sequence[ToolDefinition] = (),
        policy: PolicyLike | None = None,
        create: bool = False,
        project: str | Path | ProjectContext | None = None,
    ) -> None:
        """Open ``session_id`` through ``manager`` (see :meth:`ContextManager.session`)."""
        self.manager = manager
        self.id = session_id
        self.model = model
        self.tools = tuple(tools)
        self.policy = policy
        try:
            info = manager.store.get_session(session_id)
        except SessionNotFound:
            if not create:
                raise
            info = manager.store.create_session(session_id)
        self._last_seq = info.last_seq
        self.project: ProjectRules | None = None
        """The project's instruction files, when the handle was opened with ``project=``."""
        if project is not None:
            self.project = ProjectRules(project_context(project), manager.counter)
            told = told_fingerprint(manager.store.read(session_id)) if info.last_seq else None
            self.append(*(self.project.opening() if told is None else self.project.resume(told)))

    @property
    def last_seq(self) -> int:
        """The seq of the newest event this handle knows of (its own appends and its builds' reads)."""
        return self._last_seq

    def append(self, *events: Event) -> list[Event]:
        """Append ``events`` after what this handle knows; ``ConflictError`` if someone else wrote since."""
        if not events:
            return []
        stored = self.manager.store.append(self.id, list(events), expected_last_seq=self._last_seq)
        self._last_seq = stored[-1].seq
        return stored

    def build(
        self,
        *,
        model: str | ModelProfile | None = None,
        tools: Sequence[ToolDefinition] | None = None,
        policy: PolicyLike | None = None,
    ) -> ModelContext:
        """Build the next request (arguments default to the handle's); the handle learns what it appended."""
        chosen = model if model is not None else self.model
        if chosen is None:
            raise UsageError("no model to build for: pass model= to build() or to manager.session()")
        if self.project is not None:
            # A rule file edited since the last build reaches the model as a new instruction at the end.
            self.append(*self.project.update())
        context, seen = self.manager.build_with_last_seq(
            self.id,
            model=chosen,
            tools=self.tools if tools is None else tools,
            policy=policy if policy is not None else self.policy,
        )
        self._last_seq = max(self._last_seq, seen)
        return context

    def retrieve(self, call: ToolCall) -> ToolResult:
        """Answer a ``read_range`` or ``recall`` call and append the result."""
        result = self.manager.retrieve(self.id, call, policy=self.policy)
        stored = self.append(result)[0]
        assert isinstance(stored, ToolResult)
        return stored

    def add_context(self, text: str, *, fragment: str = "additional_context") -> Instruction | UserMessage:
        """Append context the host supplies (a hook's output, an IDE selection) as one registered fragment.

        ``text`` is wrapped in the markers of the ``fragment`` type of the default registry and held to
        that type's hard cap (``additional_context``: 1,000 tokens, cut from the middle with a marker naming
        the full size), then appended in the type's role after the conversation so far. A type registered on
        ``contextwarden.fragments.DEFAULT_REGISTRY`` may be named instead. Returns the stored event.
        """
        rendered = DEFAULT_REGISTRY.render(fragment, text, self.manager.counter)
        event: Instruction | UserMessage
        if rendered.type.role == "user":
            event = UserMessage(text=rendered.text)
        else:
            event = Instruction(text=rendered.text, role=rendered.type.role, source=f"fragment:{fragment}")
        stored = self.append(event)[0]
        assert isinstance(stored, (Instruction, UserMessage))
        return stored

    def record_usage(self, usage: UsageReport) -> None:
        """Append the provider's usage for the last call (it anchors later size estimates)."""
        self.append(usage)

    def events(self) -> list[Event]:
        """Every event of the session, in order."""
        return self.manager.store.read(self.id)

    def refresh(self) -> int:
        """Accept what other writers appended (after a ``ConflictError``); returns the new last seq."""
        self._last_seq = self.manager.store.get_session(self.id).last_seq
        return self._last_seq
