"""Context strategies a replay compares: ``raw``, ``mask-last-n:N``, ``contextwarden`` and its variants.

A :class:`Strategy` is started once per transcript (:meth:`Strategy.start`) and gives a
:class:`StrategyRun`, which is told every event as it happened (:meth:`StrategyRun.observe`) and
asked, right before each assistant message, for the request it would send (:meth:`StrategyRun.build`).
Peers (other systems' released code) live in :mod:`contextwarden.replay.peers`; :func:`parse_strategy`
knows every name.

- ``raw``: the whole history, every time (what an agent without context management sends).
- ``mask-last-n:N``: observation masking as SWE-agent's ``LastNObservations`` and the Complexity Trap
  paper do it: at every request every tool result but the last N reads
  ``Old environment output: (K lines omitted)``. Its own small projection, not the planner.
- ``contextwarden``: the library's own builder and its variants (``contextwarden:keep=3``,
  ``contextwarden:no-cache-aware``...), in :mod:`contextwarden.replay.warden`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from ..context import Message, ModelContext
from ..errors import UsageError
from ..log.events import (
    AssistantMessage,
    Event,
    Instruction,
    Pin,
    Steering,
    ToolResult,
    UserMessage,
)
from ..log.store._protocol import SessionStore
from ..models import ModelProfile
from ..pairing import normalize_pairing
from ..tokens import TokenCounter
from ..wire._messages import message_of


@dataclass(frozen=True, kw_only=True)
class RunEnv:
    """What a strategy run works with: the replay session, the model and the counter."""

    store: SessionStore
    """The store holding the replayed session (events appended as they happened)."""
    session_id: str
    """The replayed session."""
    profile: ModelProfile
    """The model the requests are for."""
    counter: TokenCounter
    """The replay's token counter."""


@dataclass(frozen=True, kw_only=True)
class Built:
    """One request a strategy would send, and what it did to produce it."""

    context: ModelContext
    """The request, provider-neutral; the engine renders it as OpenAI Chat."""
    window_event_kinds: tuple[str, ...] = ()
    """Window events recorded for this request (``context_edit``, ``compaction``)."""
    reports_window_events: bool = False
    """True when the strategy records its window events; otherwise the engine counts a request
    that rewrites earlier context (a prefix break) as one."""
    summarizer_input_tokens: int = 0
    """Tokens a summarizer read to produce this request."""
    summarizer_output_tokens: int = 0
    """Tokens a summarizer wrote to produce this request."""
    note: str = ""
    """Anything unusual (an over-budget request sent anyway)."""


class StrategyRun(Protocol):
    """One strategy on one transcript."""

    def observe(self, event: Event) -> None:
        """Take one transcript event, as stored (seq assigned), in order."""
        ...

    def build(self) -> Built:
        """The request the strategy would send now."""
        ...


class Strategy(Protocol):
    """A named way of deciding what the model sees."""

    @property
    def name(self) -> str:
        """The name reports use."""
        ...

    def start(self, env: RunEnv) -> StrategyRun:
        """Begin one transcript."""
        ...


# --------------------------------------------------------------------------- the plain history


class History:
    """The transcript as plain messages: what an agent without context management keeps."""

    def __init__(self) -> None:
        self.system_parts: list[str] = []
        self.messages: list[Message] = []

    def add(self, event: Event) -> None:
        """Append what ``event`` adds to the conversation (nothing for usage and window events)."""
        if isinstance(event, Instruction):
            if not self.messages:
                self.system_parts.append(event.text)
            else:
                self.messages.append(
                    Message(role="system", text=event.text, section="instructions", source_ids=(event.id,))
                )
        elif isinstance(event, (Steering, Pin)):
            self.messages.append(Message(role="user", text=event.text, section="pinned", source_ids=(event.id,)))
        elif isinstance(event, (UserMessage, AssistantMessage, ToolResult)):
            message = message_of(event)  # the codecs' own reading, opaque items included
            if message is not None:
                self.messages.append(message)

    @property
    def system(self) -> str:
        """The leading instructions, joined."""
        return "\n\n".join(self.system_parts)


def plain_context(
    profile: ModelProfile, system: str, messages: Sequence[Message], counter: TokenCounter
) -> ModelContext:
    """A request of ``messages`` as they are, pairing-normalized, with breakpoints at system end and last message."""
    normalized, _ = normalize_pairing(messages)
    return ModelContext(
        model=profile.name,
        system=system,
        messages=normalized,
        context_window=profile.input_window,
        counter=counter.name,
        cache_breakpoints=(-1, len(normalized) - 1) if normalized else (-1,),
    )


@dataclass(frozen=True)
class RawStrategy:
    """The whole history every time."""

    name: str = "raw"

    def start(self, env: RunEnv) -> StrategyRun:
        """Begin one transcript."""
        return _RawRun(env)


class _RawRun:
    def __init__(self, env: RunEnv) -> None:
        self.env = env
        self.history = History()

    def observe(self, event: Event) -> None:
        self.history.add(event)

    def build(self) -> Built:
        return Built(
            context=plain_context(self.env.profile, self.history.system, self.history.messages, self.env.counter)
        )


MASK_TEMPLATE = "Old environment output: ({lines} lines omitted)"
"""SWE-agent's ``LastNObservations`` placeholder for a masked observation."""


@dataclass(frozen=True)
class MaskLastN:
    """Observation masking: every tool result but the last ``keep`` is replaced, at every request."""

    keep: int = 10
    """Tool results kept verbatim."""

    @property
    def name(self) -> str:
        """``mask-last-n:<keep>``."""
        return f"mask-last-n:{self.keep}"

    def start(self, env: RunEnv) -> StrategyRun:
        """Begin one transcript."""
        return _MaskRun(env, self.keep)


class _MaskRun(_RawRun):
    def __init__(self, env: RunEnv, keep: int) -> None:
        super().__init__(env)
        self.keep = keep

    def build(self) -> Built:
        messages = list(self.history.messages)
        tool_positions = [n for n, m in enumerate(messages) if m.role == "tool"]
        old = tool_positions[: max(len(tool_positions) - self.keep, 0)]
        for n in old:
            lines = len(messages[n].text.splitlines())
            messages[n] = replace(messages[n], text=MASK_TEMPLATE.format(lines=lines), parts=())
        return Built(context=plain_context(self.env.profile, self.history.system, messages, self.env.counter))


def convert_option(raw: str, default: Any, option: str) -> Any:
    """``raw`` as the type of ``default`` (bool, int, float or str); a UsageError naming ``option`` if it is not."""
    try:
        if isinstance(default, bool):
            if raw.lower() not in ("true", "false", "1", "0", "yes", "no"):
                raise ValueError(raw)
            return raw.lower() in ("true", "1", "yes")
        if isinstance(default, int) or default is None:
            return int(raw)
        if isinstance(default, float):
            return float(raw)
    except ValueError:
        raise UsageError(f"strategy option {option!r}: {raw!r} is not a valid value") from None
    return raw


DEFAULT_STRATEGIES: tuple[str, ...] = ("raw", "mask-last-n:10", "contextwarden")
"""What ``contextwarden replay`` compares when no ``--strategy`` is given."""
