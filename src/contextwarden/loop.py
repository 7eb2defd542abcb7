"""The agent loop: a supported way to run a model with tools on a contextwarden session.

Each turn of :func:`run_agent_loop`:

1. ``on_before_turn`` (by default a :class:`~contextwarden.plan.compaction.CompactionHook`) may compact;
2. ``manager.build`` projects the log into a request that fits the budget;
3. the provider answers that request (a :class:`~contextwarden.providers.Provider` takes the built
   :class:`~contextwarden.context.ModelContext` as it is); the answer and its usage are appended to
   the log (usage after the answer, so the next estimate is anchored on it);
4. every tool call runs and its result is appended; a turn without tool calls ends the loop.

A context overflow (the provider's error, or a silent one: a success whose reported input filled
the window) is recovered by compacting and retrying **exactly once**; a second overflow raises a
:class:`~contextwarden.errors.PromptTooLongError` naming the sizes. Rate limits and 5xx are the
provider's to retry with backoff; they are never answered by compacting.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ._deprecated import deprecated_names
from .assemble.manager import ContextManager
from .context import ModelContext, ToolDefinition
from .errors import Cancelled, PromptTooLongError, ProviderError
from .log.events import Compaction, Event, JSONValue, ToolCall, ToolResult
from .models import ModelProfile, resolve_profile
from .plan.compaction import OVERFLOW_TRIGGER, CompactionHook, SummaryOptions, Turn, WindowCompactor, compact
from .providers import CallOptions, ModelReply, Provider
from .providers.classify import is_context_overflow, is_silent_overflow
from .tools import READ_RANGE, RECALL

RETRIEVAL_TOOLS = frozenset({READ_RANGE.name, RECALL.name})
"""Tools the manager offers and serves itself (reading evicted content back from the log)."""

_WINDOW_HINTS = (
    re.compile(r"maximum context length is (\d+)", re.IGNORECASE),
    re.compile(r"context window of (\d+)", re.IGNORECASE),
    re.compile(r"\bn_ctx\b\"?\s*[:=]\s*(\d+)", re.IGNORECASE),
    re.compile(r"available context size \((\d+)", re.IGNORECASE),
    re.compile(r"> (\d+) maximum", re.IGNORECASE),
    re.compile(r"maximum model length(?: is| of)? (\d+)", re.IGNORECASE),
    re.compile(r"maximum number of tokens allowed \((\d+)\)", re.IGNORECASE),
)


@dataclass(frozen=True, kw_only=True)
class ToolOutput:
    """What a tool returns."""

    output: str
    """Its text output."""
    is_error: bool = False
    """Whether it failed."""
    exit_code: int | None = None
    """A process exit code, when it ran one."""


@dataclass(frozen=True, kw_only=True)
class AgentTool:
    """A tool the loop offers the model and runs when called: its definition and the function that runs it."""

    definition: ToolDefinition
    """Name, description and argument schema, as the model sees them (the one tool type)."""
    run: Callable[[dict[str, JSONValue]], ToolOutput | str]
    """Runs a call with its parsed arguments; an exception becomes an error result."""


@dataclass(frozen=True, kw_only=True)
class LoopResult:
    """How a run ended."""

    text: str
    """The last assistant text."""
    turns: int
    """Model calls that produced an answer."""
    stop_reason: str
    """``end_turn`` (the model stopped calling tools) or ``max_turns``."""
    compactions: tuple[Compaction, ...] = ()
    """Compactions made during the run, in order."""
    overflow_recoveries: int = 0
    """Overflows recovered by compacting and retrying."""
    input_tokens: int = 0
    """Input tokens the provider reported, summed."""
    output_tokens: int = 0
    """Output tokens the provider reported, summed."""


def window_hint(error: BaseException) -> int | None:
    """The real context window an overflow message names, when it names one."""
    text = f"{getattr(error, 'body', '')}\n{error}"
    for pattern in _WINDOW_HINTS:
        m = pattern.search(text)
        if m:
            return int(m.group(1))
    return None


class _Run:
    """One run's state; the public entry point is :func:`run_agent_loop`."""

    def __init__(
        self,
        provider: Provider,
        tools: Sequence[AgentTool],
        manager: ContextManager,
        session_id: str,
        *,
        profile: ModelProfile,
        request_model: str,
        max_tokens: int | None,
        options: CallOptions,
        on_before_turn: Callable[[str, Turn], object] | None,
        thinking: str | None,
        temperature: float | None,
    ) -> None:
        self.provider, self.manager, self.session_id = provider, manager, session_id
        self.tools = {t.definition.name: t for t in tools}
        self.definitions = tuple(t.definition for t in tools)
        self.profile, self.request_model, self.max_tokens = profile, request_model, max_tokens
        self.options, self.on_before_turn = options, on_before_turn
        self.thinking, self.temperature = thinking, temperature
        self.recoveries = 0
        self.usage = [0, 0]

    @property
    def input_window(self) -> int:
        """The model's input window as the manager's budget sees it."""
        return self.manager.policy.budget.input_window_for(self.profile)

    def request(self) -> tuple[ModelContext, CallOptions]:
        ctx = self.manager.build(self.session_id, model=self.profile, tools=self.definitions)
        room = max(self.input_window - ctx.total_tokens, 16)
        limit = min(self.max_tokens or self.profile.max_output_tokens, room)
        options = dataclasses.replace(
            self.options,
            model=self.request_model,
            max_tokens=limit,
            thinking=self.thinking,
            temperature=self.temperature,
        )
        return ctx, options

    def call(self) -> ModelReply:
        """One model call with overflow recovery: compact, retry exactly once."""
        ctx, options = self.request()
        try:
            response = self.provider.complete(ctx, options=options)
        except ProviderError as exc:
            if isinstance(exc, Cancelled) or not is_context_overflow(exc):
                raise
            return self._recover(ctx, exc)
        if is_silent_overflow(response.usage, self.input_window):
            return self._recover(ctx, None, reported=response.usage.input_tokens)
        return response

    def _recover(self, ctx: ModelContext, error: ProviderError | None, *, reported: int = 0) -> ModelReply:
        what = (
            f"the provider's overflow ({error})" if error else f"a silent overflow ({reported} input tokens reported)"
        )
        hint = window_hint(error) if error else None
        if hint is not None and hint < self.input_window:
            self.profile = dataclasses.replace(
                self.profile, context_window=hint, max_output_tokens=min(self.profile.max_output_tokens, hint // 4)
            )
        compaction = compact(
            self.manager,
            self.session_id,
            model=self.profile,
            trigger=OVERFLOW_TRIGGER,
            reason=what,
            options=SummaryOptions(cancel=self.options.cancel),
        )
        if compaction is None:
            raise PromptTooLongError(
                f"{self.profile.name}: a request of about {ctx.total_tokens} tokens (input window "
                f"{self.input_window}) overflowed and nothing was old enough to compact; "
                f"cause: {what}. Lower keep_recent_tokens or use a model with a larger window."
            ) from error
        self.recoveries += 1
        retry_ctx, options = self.request()
        try:
            response = self.provider.complete(retry_ctx, options=options)
        except ProviderError as exc:
            if is_context_overflow(exc) and not isinstance(exc, Cancelled):
                raise PromptTooLongError(
                    f"{self.profile.name}: still overflowing after compaction and one retry: "
                    f"{ctx.total_tokens} tokens before, {retry_ctx.total_tokens} after (compaction "
                    f"{compaction.tokens_before} -> {compaction.tokens_after} window tokens), input window "
                    f"{self.input_window}: {exc}",
                    status=exc.status,
                    body=exc.body,
                ) from exc
            raise
        if is_silent_overflow(response.usage, self.input_window):
            raise PromptTooLongError(
                f"{self.profile.name}: still filling the window after compaction and one retry: "
                f"{response.usage.input_tokens} input tokens reported for a request of about "
                f"{retry_ctx.total_tokens} tokens, input window {self.input_window}"
            )
        return response

    def record(self, reply: ModelReply) -> None:
        self.usage[0] += reply.usage.input_tokens
        self.usage[1] += reply.usage.output_tokens
        self._append([reply.message, reply.usage])

    def run_tools(self, calls: Sequence[ToolCall]) -> None:
        results: list[Event] = []
        for call in calls:
            if self.options.cancel is not None and self.options.cancel.is_set():
                raise Cancelled("agent loop cancelled between tool calls")
            results.append(self._run_tool(call))
        self._append(results)

    def _run_tool(self, call: ToolCall) -> ToolResult:
        tool = self.tools.get(call.name)
        if tool is None and call.name in RETRIEVAL_TOOLS and self.manager.policy.retrieval_tools:
            return self.manager.retrieve(self.session_id, call)
        if tool is None:
            return ToolResult(
                call_id=call.id,
                tool_name=call.name,
                is_error=True,
                output=f"error: no tool named {call.name!r}; available: {sorted(self.tools)}",
            )
        try:
            out = tool.run(dict(call.arguments))
        except Exception as exc:  # a failing tool is the model's information, not the loop's crash
            return ToolResult(
                call_id=call.id, tool_name=call.name, is_error=True, output=f"error: {type(exc).__name__}: {exc}"
            )
        if isinstance(out, str):
            out = ToolOutput(output=out)
        return ToolResult(
            call_id=call.id, tool_name=call.name, output=out.output, is_error=out.is_error, exit_code=out.exit_code
        )

    def _append(self, events: Sequence[Event]) -> None:
        last = self.manager.store.get_session(self.session_id).last_seq
        self.manager.store.append(self.session_id, list(events), expected_last_seq=last)


def run_agent_loop(
    provider: Provider,
    tools: Sequence[AgentTool],
    manager: ContextManager,
    session_id: str,
    *,
    model: str | ModelProfile,
    max_turns: int = 20,
    request_model: str | None = None,
    max_tokens: int | None = None,
    options: CallOptions | None = None,
    on_before_turn: Callable[[str, Turn], object] | None = None,
    thinking: str | None = None,
    temperature: float | None = None,
) -> LoopResult:
    """Run the agent on ``session_id`` until the model stops calling tools or ``max_turns`` calls.

    ``model`` is the profile the context is budgeted for; ``request_model`` the name sent to the
    provider (default: the profile's name). ``on_before_turn`` defaults to a
    :class:`CompactionHook` when the manager's compactor is a :class:`WindowCompactor`.
    Raises ``Cancelled`` when ``options.cancel`` is set, ``PromptTooLongError`` when an overflow
    survives one compaction, and other ``ProviderError`` subclasses as the provider raised them.
    """
    profile = resolve_profile(model)  # an unknown name is an error naming the known ones
    options = options or CallOptions()
    if on_before_turn is None and isinstance(manager.compactor, WindowCompactor):
        on_before_turn = CompactionHook(manager, options=SummaryOptions(cancel=options.cancel))
    start_seq = manager.store.get_session(session_id).last_seq
    run = _Run(
        provider,
        tools,
        manager,
        session_id,
        profile=profile,
        request_model=request_model or profile.name,
        max_tokens=max_tokens,
        options=options,
        on_before_turn=on_before_turn,
        thinking=thinking,
        temperature=temperature,
    )
    text, turns = "", 0
    while turns < max_turns:
        if options.cancel is not None and options.cancel.is_set():
            raise Cancelled("agent loop cancelled before a model call")
        if run.on_before_turn is not None:
            run.on_before_turn(session_id, Turn(model=run.profile, tools=run.definitions))
        response = run.call()
        turns += 1
        run.record(response)
        text = response.text or text
        if not response.tool_calls:
            return _result(run, start_seq, text, turns, "end_turn")
        run.run_tools(response.tool_calls)
    return _result(run, start_seq, text, turns, "max_turns")


def _result(run: _Run, start_seq: int, text: str, turns: int, stop: str) -> LoopResult:
    # Compactions come from the hook, from build() (planner pressure) and from overflow recovery.
    made = tuple(e for e in run.manager.store.read(run.session_id, since_seq=start_seq) if isinstance(e, Compaction))
    return LoopResult(
        text=text,
        turns=turns,
        stop_reason=stop,
        compactions=made,
        overflow_recoveries=run.recoveries,
        input_tokens=run.usage[0],
        output_tokens=run.usage[1],
    )


def _old_to_chat_request() -> object:
    from ._chat_compat import to_chat_request

    return to_chat_request


__getattr__ = deprecated_names(
    __name__, {"to_chat_request": (_old_to_chat_request, "pass the ModelContext to Provider.complete")}
)
