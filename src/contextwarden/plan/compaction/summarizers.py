"""Summarizers: the ``Summarizer`` seam, the model-backed :class:`LLMSummarizer`, the structured one.

The model-free :class:`~contextwarden.plan.compaction.structured.StructuredSummarizer` is re-exported here.

The LLM summarizer sends one chat request with no tools: a system prompt saying to output only
the notes, then the tagged inputs (the previous summary apart from the transcript) and the
instructions. The request is budgeted before it is sent: the output budget is
``min(floor(0.8 * reserve), model max output)`` and the transcript is fitted (per-entry caps,
then oldest entries dropped) into what is left of the summarizer model's window, so a summary
request cannot overflow itself. Re-grounding from raw events that do not fit one call goes
chunk by chunk, each chunk updating the notes of the previous ones.

On a ``max_tokens`` stop it retries once at the lowest thinking level the model supports (when
that is lower than the level used), then gives up. Every answer is validated
(:mod:`~contextwarden.plan.compaction.validate`); cancellation is checked before and after every call
and always wins.
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass, replace

from ..._deprecated import warn_renamed
from ...budget import FALLBACK_CONTEXT_WINDOW, summary_max_tokens
from ...chat import CallOptions, ModelReply, Provider
from ...context import Message, ModelContext
from ...errors import CompactionError, PromptTooLongError
from ...models import ModelProfile, get_profile
from ...tokens import TokenCounter, best_counter
from ._base import Purpose, Summarizer, SummaryInput, SummaryOptions, SummaryResult
from .prompts import build_prompt
from .schema import SchemaStyle, keys_guide, parse_answer, render_answer, response_format
from .sections import REQUIRED_SECTIONS, TURN_REQUIRED_SECTIONS, section
from .serialize import Entry, chunk_entries, fit_transcript, render_entries
from .statements import MAX_DROPPED_SHARE, check_written, session_text
from .structured import StructuredSummarizer
from .validate import InvalidSummary, SummaryCheck, validate_summary

__all__ = [
    "LLMSummarizer",
    "LLMSummarizerSettings",
    "StructuredSummarizer",
    "Summarizer",
    "SummaryInput",
    "SummaryOptions",
    "SummaryResult",
]

MIN_TRANSCRIPT_TOKENS = 64
"""Below this many tokens left for the transcript, the summarizer's window is too small to use."""

_THINK = re.compile(r"<think>.*?</think>\s*", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"^```[a-zA-Z]*\n(.*)\n```$", re.DOTALL)


@dataclass(frozen=True, kw_only=True)
class LLMSummarizerSettings:
    """How the LLM summarizer calls its model. Vary it with ``dataclasses.replace``."""

    reserve_tokens: int = 32_768
    """The compaction reserve; the summary's output budget is ``floor(0.8 * reserve)`` at most."""
    max_output_tokens: int | None = None
    """Override the model's own output limit (None: take it from the model profile)."""
    thinking: str | None = None
    """Thinking level of the first attempt (None: the provider's default)."""
    thinking_levels: tuple[str, ...] = ()
    """Levels the model supports, lowest first; the ``max_tokens`` retry uses the first one.
    Empty: the summarizer model profile's ``thinking_levels``."""
    safety_margin: float = 0.05
    """Share of the window kept free for tokenizer differences between our counter and the model."""
    temperature: float | None = None
    """Sampling temperature (None: the provider's default)."""
    check_language: bool = True
    """Reject summaries written in another script than the user's."""
    structured_output: bool = False
    """For small models: ask only for the sections that need judgment (decisions, next steps,
    critical context, open questions) as JSON under the server's constrained decoding (a JSON
    schema in ``response_format``), and derive every other section from the events as the
    structured summarizer does, so the answer always has the required shape and the facts
    (progress, changes, test status, failed attempts) are right whatever the model writes. The
    server must support schema-constrained ``json_object`` (llama-cpp-python's server does)."""
    schema_style: SchemaStyle = "json_object"
    """How ``structured_output`` sends its schema: ``json_object`` (llama-cpp-python's server) or
    ``json_schema`` (the OpenAI form most other servers take: vLLM, llama-server, Ollama, LM Studio)."""
    reground_max_calls: int = 3
    """Re-grounding reads the raw log in chunks with at most this many model calls: older chunks are
    summarized from the events without the model (as the structured summarizer does), and the model
    updates that summary with the newest chunks. 0: no limit."""
    reground_seconds: float | None = 120.0
    """Re-grounding takes at most this many seconds: each call's timeout is what is left, and a
    re-grounding out of time fails (the compactor falls back, saying why). None: no limit."""


def clean_answer(text: str) -> str:
    """The summary without reasoning tags or one outer code fence some models add."""
    text = _THINK.sub("", text).strip()
    m = _FENCE.match(text)
    return m.group(1).strip() if m else text


def _language_sample(data: SummaryInput) -> str:
    user = [e.text for e in data.entries if e.label in ("user", "steering")]
    return "\n".join([data.state.goal, data.state.latest_user_intent, *user])[:4_000]


class LLMSummarizer:
    """A :class:`Summarizer` backed by a chat model (see the module docstring)."""

    def __init__(
        self,
        provider: Provider,
        *,
        model: str | ModelProfile,
        counter: TokenCounter | None = None,
        settings: LLMSummarizerSettings | None = None,
    ) -> None:
        """Summarize with ``model`` through ``provider``; it may be a cheaper model than the agent's."""
        self.provider = provider
        self.profile = model if isinstance(model, ModelProfile) else get_profile(model)
        self.counter = counter or best_counter()
        self.settings = settings or LLMSummarizerSettings()
        self.name = f"llm:{self.profile.name}"

    # ------------------------------------------------------------------ budget

    def output_budget(self) -> int:
        """Max tokens of one summary: min(floor(0.8 * reserve), model max output).

        At most a third of the window, too, so a small local model still has room for its input.
        """
        profile = self.profile
        if self.settings.max_output_tokens is not None:
            profile = replace(profile, max_output_tokens=self.settings.max_output_tokens)
        budget = summary_max_tokens(profile, self.settings.reserve_tokens)
        return max(min(budget, self.input_window // 3), 16)

    @property
    def input_window(self) -> int:
        """The summarizer model's input window (a fallback when the profile does not know it)."""
        return self.profile.input_window or FALLBACK_CONTEXT_WINDOW

    @property
    def window(self) -> int:  # deprecated: input_window
        """Deprecated: :attr:`input_window`."""
        warn_renamed("LLMSummarizer.window", "LLMSummarizer.input_window")  # deprecated
        return self.input_window

    def input_budget(self, fixed_text: str) -> int:
        """Tokens left for the transcript once the output budget, ``fixed_text`` and the margin are taken."""
        window = self.input_window
        margin = max(math.ceil(window * self.settings.safety_margin), 32)
        return window - self.output_budget() - margin - self.counter.count(fixed_text) - 16

    # ------------------------------------------------------------------ summarize

    def summarize(self, data: SummaryInput, *, options: SummaryOptions) -> SummaryResult:
        """Write and validate one summary (chunked when re-grounding input does not fit)."""
        options.check_cancelled("before the summary request")
        empty = build_prompt(
            transcript="",
            purpose=data.purpose,
            previous_summary=data.previous_summary,
            focus=data.focus,
            reground=data.reground,
        )
        budget = self.input_budget(empty.system + empty.user)
        if budget < MIN_TRANSCRIPT_TOKENS:
            raise CompactionError(
                f"{self.profile.name}: its input window of {self.input_window} tokens leaves {budget} "
                f"tokens for the transcript after a {self.output_budget()}-token output budget; "
                "use a summarizer model with a larger window"
            )
        full = render_entries(data.entries, 1_000, self.counter)
        if data.reground and self.counter.count(full) > budget:
            return self._chunked(data, budget, options)
        return self._one(data, data.entries, data.previous_summary, budget, options)

    def _chunked(self, data: SummaryInput, budget: int, options: SummaryOptions) -> SummaryResult:
        # Chunks after the first carry the notes so far as <previous-summary>, so their budget is
        # smaller by the output budget (the notes are at most that long).
        chunks = chunk_entries(
            data.entries, budget=max(budget - self.output_budget(), MIN_TRANSCRIPT_TOKENS), counter=self.counter
        )
        notes: list[str] = [f"re-grounded from raw events in {len(chunks)} chunks"]
        summary, used_in, used_out, calls = "", 0, 0, 0
        limit = self.settings.reground_max_calls
        if limit and len(chunks) > limit:
            older = tuple(e for chunk in chunks[:-limit] for e in chunk)
            seed = replace(data, entries=older, previous_summary="", max_tokens=self.output_budget())
            summary = StructuredSummarizer(counter=self.counter).write(seed)
            notes.append(f"the {len(chunks) - limit} oldest chunks summarized from the events without the model")
            chunks = chunks[-limit:]
        deadline = None if self.settings.reground_seconds is None else time.monotonic() + self.settings.reground_seconds
        for n, chunk in enumerate(chunks):
            step = replace(data, replaced_tokens=0 if n < len(chunks) - 1 else data.replaced_tokens)
            result = self._one(step, tuple(chunk), summary, budget, _within(options, deadline, n, len(chunks)))
            summary = result.text
            used_in, used_out = used_in + result.input_tokens, used_out + result.output_tokens
            calls += result.calls
            notes += list(result.notes)
        return SummaryResult(
            text=summary,
            summarizer=self.name,
            model=self.profile.name,
            input_tokens=used_in,
            output_tokens=used_out,
            calls=calls,
            notes=tuple(notes),
        )

    def _one(
        self, data: SummaryInput, entries: tuple[Entry, ...], previous: str, budget: int, options: SummaryOptions
    ) -> SummaryResult:
        notes: list[str] = []
        keys = self._json_keys(data)
        base = build_prompt(
            transcript="",
            purpose=data.purpose,
            previous_summary=previous,
            focus=data.focus,
            reground=data.reground,
            json_keys=keys,
        )
        budget = min(budget, self.input_budget(base.system + base.user))
        transcript = fit_transcript(entries, budget=budget, counter=self.counter)
        if transcript.dropped or transcript.item_cap < 2_000:
            notes.append(
                f"transcript fitted to {budget} tokens (entry cap {transcript.item_cap}, "
                f"{transcript.dropped} oldest entries left out)"
            )
        prompt = build_prompt(
            transcript=transcript.text,
            purpose=data.purpose,
            previous_summary=previous,
            focus=data.focus,
            reground=data.reground,
            json_keys=keys,
        )
        max_tokens = min(self.output_budget(), data.max_tokens or self.output_budget())
        request = ModelContext(
            model=self.profile.name, system=prompt.system, messages=(Message(role="user", text=prompt.user),)
        )
        asked = CallOptions(
            max_tokens=max_tokens,
            temperature=self.settings.temperature,
            thinking=self.settings.thinking or data.thinking,
            response_format=response_format(max_tokens, style=self.settings.schema_style) if keys else None,
            cancel=options.cancel,
            timeout=options.timeout,
        )
        responses = self._call_with_retries(request, asked, options, notes)
        last = responses[-1]
        text = clean_answer(last.text)
        written: dict[str, list[str]] | None = None
        try:
            if keys and last.stop_reason != "max_tokens":
                written = self._true_items(parse_answer(text), data, notes)
                text = render_answer(written)
        except InvalidSummary as exc:
            exc.input_tokens = sum(r.usage.input_tokens for r in responses)
            exc.output_tokens = sum(r.usage.output_tokens for r in responses)
            raise
        check = SummaryCheck(
            required_sections=_required(data.purpose) if written is None else (section("next_steps").title,),
            source_text=transcript.text,
            source_tokens=data.replaced_tokens,
            previous_summary=previous,
            language_sample=_language_sample(data) if self.settings.check_language else "",
        )
        try:
            validate_summary(
                text, check, counter=self.counter, stop_reason=last.stop_reason, tool_calls=len(last.tool_calls)
            )
        except InvalidSummary as exc:
            exc.input_tokens = sum(r.usage.input_tokens for r in responses)
            exc.output_tokens = sum(r.usage.output_tokens for r in responses)
            raise
        if written is not None:
            # The model's sections, judged above on their own, join the ones derived from the events.
            own = replace(data, entries=entries, previous_summary=previous)
            text = StructuredSummarizer(counter=self.counter).write(own, written)
            notes.append(f"model wrote {', '.join(written) or 'no section'}; the other sections are derived")
        return SummaryResult(
            text=text,
            summarizer=self.name,
            model=last.model or self.profile.name,
            input_tokens=sum(r.usage.input_tokens for r in responses),
            output_tokens=sum(r.usage.output_tokens for r in responses),
            calls=len(responses),
            notes=tuple(notes),
        )

    @staticmethod
    def _true_items(written: dict[str, list[str]], data: SummaryInput, notes: list[str]) -> dict[str, list[str]]:
        """The model's items that hold against the log (:mod:`.statements`); too many failing rejects all."""
        kept, dropped, checked = check_written(written, session_text(data.entries, data.state))
        notes.append(f"model statements: {checked} checked, {len(dropped)} dropped")
        notes += [f"dropped {d}" for d in dropped]
        if checked and len(dropped) > checked * MAX_DROPPED_SHARE:
            raise InvalidSummary(
                "untrue",
                f"{len(dropped)} of {checked} statements fail the log, e.g. {dropped[0]}",
            )
        return kept

    def _json_keys(self, data: SummaryInput) -> str:
        """The JSON keys to ask for under constrained decoding, or "" for Markdown notes."""
        if not self.settings.structured_output or data.purpose != "history":
            return ""
        return keys_guide()

    def _call_with_retries(
        self, request: ModelContext, call: CallOptions, options: SummaryOptions, notes: list[str]
    ) -> list[ModelReply]:
        try:
            first = self.provider.complete(request, options=call)
        except PromptTooLongError as exc:
            raise CompactionError(
                f"the summary request of about {self.counter.count(request.messages[0].text)} tokens "
                f"overflowed {self.profile.name} (input window {self.input_window}) despite budgeting; "
                f"raise LLMSummarizerSettings.safety_margin if the model's tokenizer counts more: {exc}"
            ) from exc
        options.check_cancelled("after the summary request")
        responses = [first]
        if first.stop_reason != "max_tokens":
            return responses
        lowest = self._lowest_thinking()
        if lowest is None:
            return responses  # no lower thinking level: validation rejects it as truncated
        notes.append(f"hit max_tokens at thinking={call.thinking}; retried once at thinking={lowest}")
        second = self.provider.complete(request, options=replace(call, thinking=lowest))
        options.check_cancelled("after the summary retry")
        responses.append(second)
        return responses

    def _lowest_thinking(self) -> str | None:
        levels = self.settings.thinking_levels or self.profile.thinking_levels
        if not levels:
            return None
        current = self.settings.thinking
        if current is None or current not in levels:
            return levels[0] if current != levels[0] else None
        return levels[0] if levels.index(current) > 0 else None


def _within(options: SummaryOptions, deadline: float | None, done: int, total: int) -> SummaryOptions:
    """``options`` with a call timeout no longer than what is left before ``deadline``."""
    if deadline is None:
        return options
    left = deadline - time.monotonic()
    if left <= 0:
        raise CompactionError(f"re-grounding ran out of time after {done} of {total} chunks (reground_seconds)")
    return replace(options, timeout=left if options.timeout is None else min(options.timeout, left))


def _required(purpose: Purpose) -> tuple[str, ...]:
    return TURN_REQUIRED_SECTIONS if purpose == "turn_prefix" else REQUIRED_SECTIONS
