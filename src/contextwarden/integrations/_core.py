"""The engine every framework adapter shares: mirror the history, build the projection, say what was sent.

An adapter converts the framework's messages to a provider wire body (OpenAI Chat, OpenAI Responses
or Gemini), hands that body to :meth:`Warden.project`, and converts the returned body back into the
framework's messages. Everything in between happens here, once:

1. the wire codec reads the body into events (the only parser);
2. :func:`~contextwarden.mirror.mirror_history` appends what is new to the session log;
3. :meth:`ContextManager.build` projects the window (and records the model, tools and policy of the
   call, so ``contextwarden inspect SESSION`` rebuilds the request the framework's model saw); the
   codec renders it back into a body.

Any error inside contextwarden is the adapter's cue to send the framework's own request unchanged
(:func:`fallback_warning` logs why); nothing here ever edits the framework's history.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..assemble.manager import ContextManager, ContextPolicy
from ..budget import FALLBACK_CONTEXT_WINDOW
from ..context import ModelContext, ToolDefinition
from ..log.events import Instruction, UsageReport
from ..log.store import SessionStore, open_store
from ..mirror import MirrorResult, mirror_history
from ..models import ModelProfile, get_profile
from ..tools import READ_RANGE, RECALL
from ..wire import WireFormat, get_codec

logger = logging.getLogger("contextwarden.integrations")

RETRIEVAL_NAMES: tuple[str, ...] = (READ_RANGE.name, RECALL.name)
"""The names of contextwarden's retrieval tools, as every adapter registers them."""

# What a truncation marker or a masking placeholder says to get content back. When the model has no
# retrieval tool, the call is replaced by where the content is, so no text names a missing tool.


@dataclass(frozen=True, kw_only=True)
class Projected:
    """One projected request: the body to send and what produced it."""

    body: dict[str, Any]
    """The rendered request body in the adapter's wire format (``messages``/``input``/``contents``,
    ``tools``, ``model``...)."""
    context: ModelContext
    """The projection itself (sections, decisions, breakpoints)."""
    mirrored: MirrorResult
    """What the mirror appended for this call."""
    mirrored_instructions: tuple[Instruction, ...] = ()
    """The leading instructions of the mirrored history (a session backend prepends them too)."""


class Warden:
    """Store, manager and policy of one adapter; :meth:`project` is called once per model call."""

    def __init__(
        self,
        store: SessionStore | str | None = None,
        *,
        manager: ContextManager | None = None,
        policy: ContextPolicy | None = None,
        model: str | ModelProfile | None = None,
        retrieval: bool = True,
    ) -> None:
        """Keep sessions in ``store`` (a store, a store URL, or ``None`` for the default SQLite file).

        ``manager`` defaults to a :class:`ContextManager` over the store with ``policy``. ``model``
        fixes the profile to plan for; by default each call's model name is looked up.
        ``retrieval`` exposes ``read_range``/``recall`` (the adapter registers them as framework
        tools); turned off, no placeholder names them.
        """
        if manager is not None:
            self.store = manager.store
            self.manager = manager
        else:
            self.store = store if isinstance(store, SessionStore) else open_store(store)
            self.manager = ContextManager(self.store, policy=policy)
        self.policy = replace(policy or self.manager.policy, retrieval_tools=retrieval)
        self.model = model
        self.retrieval = retrieval
        self._guessed: set[str] = set()
        """Model names planned for without a profile (each is logged once)."""

    def profile(self, name: str, *, context_window: int | None = None) -> ModelProfile:
        """The profile to plan for: the fixed one, else the named one.

        The framework's window wins when ours is unknown or only its family's guess.
        """
        if isinstance(self.model, ModelProfile):
            return self.model
        requested = self.model or name
        profile = get_profile(requested or "generic")
        # a name the table lacks, a family's stand-in or no name at all: the framework's window is better
        guessed = not profile.known or bool(profile.family_match) or not requested
        if guessed and context_window:
            profile = replace(profile, context_window=context_window)
        if guessed and profile.name not in self._guessed:
            self._guessed.add(profile.name)  # once per model and adapter: every call would repeat it
            window = profile.context_window or FALLBACK_CONTEXT_WINDOW
            source = "the framework's" if context_window else "a default"
            logger.warning(
                "contextwarden: no profile for model %r; planning for %s %s-token window "
                "(pass model=ModelProfile(name=..., context_window=...) to plan for the real one)",
                profile.name,
                source,
                f"{window:,}",
            )
        return profile

    def mirror(self, session_id: str, fmt: WireFormat, body: Mapping[str, Any]) -> MirrorResult:
        """Mirror the history in ``body`` without building (after a call, to store the model's answer)."""
        parsed = get_codec(fmt).parse_request(body)
        return mirror_history(
            self.store, session_id, [*parsed.instructions, *parsed.events], policies=self.policy.tool_policies
        )

    def record_usage(self, session_id: str, usage: UsageReport) -> None:
        """Append the provider's usage of the last call (it anchors the next size estimate)."""
        self.manager.record_usage(session_id, usage)

    def project(
        self,
        session_id: str,
        fmt: WireFormat,
        body: Mapping[str, Any],
        *,
        model: str = "",
        context_window: int | None = None,
    ) -> Projected:
        """Mirror the history in ``body`` (a ``fmt`` request) and return the projected request."""
        codec = get_codec(fmt)
        parsed = codec.parse_request(body)
        mirrored = mirror_history(
            self.store, session_id, [*parsed.instructions, *parsed.events], policies=self.policy.tool_policies
        )
        profile = self.profile(model or parsed.model, context_window=context_window)
        tools = tuple(t for t in parsed.tools if t.name not in RETRIEVAL_NAMES)
        ctx = self.manager.build(session_id, model=profile, tools=tools, policy=self._policy_for(parsed.tools))
        rendered = codec.render_request(ctx, model=model or parsed.model or profile.name)
        return Projected(body=rendered, context=ctx, mirrored=mirrored, mirrored_instructions=parsed.instructions)

    def _policy_for(self, offered: Sequence[ToolDefinition]) -> ContextPolicy:
        """The policy for a call offering ``offered``: placeholders name retrieval tools only if the model has them.

        Where the user adds the retrieval tools to the agent by hand (Agents SDK, ADK), an agent
        built without them must not read ``read_range(...)`` in a placeholder.
        """
        names = {t.name for t in offered}
        if self.retrieval and not all(name in names for name in RETRIEVAL_NAMES):
            return replace(self.policy, retrieval_tools=False)
        return self.policy


def fallback_warning(framework: str, exc: BaseException) -> None:
    """Log that contextwarden failed and the framework's own request goes out unchanged."""
    logger.warning(
        "contextwarden: %s request sent unchanged because the projection failed: %s: %s",
        framework,
        type(exc).__name__,
        exc,
    )
