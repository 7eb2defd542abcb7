"""Provider error classification: which failures are context overflows, rate limits, server errors.

The cause decides what to do next: an overflow is fixed by compacting and retrying once, a rate
limit or a 5xx by waiting and retrying, anything else by giving up with a clear message. Providers
signal an overflow in many ways (a 400, a 413, sometimes a 500 or a 200 with an error object), so
the message text is what identifies it. The patterns below are the real messages, each with the
source where it was seen.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol

from ..errors import PromptTooLongError, ProviderError, RateLimitError, ServerError


@dataclass(frozen=True)
class OverflowPattern:
    """A message pattern that means the prompt did not fit the model's window."""

    family: str
    """Who sends it: ``openai``, ``anthropic``, ``gemini``, ``llama.cpp``, ``vllm``, ``ollama``,
    or ``generic``."""
    regex: re.Pattern[str]
    """Matched case-insensitively anywhere in the error body."""


def _p(family: str, pattern: str) -> OverflowPattern:
    return OverflowPattern(family, re.compile(pattern, re.IGNORECASE))


OVERFLOW_PATTERNS: tuple[OverflowPattern, ...] = (
    # OpenAI Chat Completions, 400 invalid_request_error with code "context_length_exceeded":
    # "This model's maximum context length is 8192 tokens. However, your messages resulted in 8227
    # tokens. Please reduce the length of the messages." (crewAIInc/crewAI-examples#121). The same
    # OpenAI-style text is what llama-cpp-python's server and vLLM's OpenAI server return
    # (vllm-project/vllm#20409).
    _p("openai", r"context_length_exceeded"),
    _p("openai", r"maximum context length"),
    # Anthropic, 400 invalid_request_error: "prompt is too long: 209353 tokens > 199999 maximum"
    # (entropy-research/Devon#88) and "input length and `max_tokens` exceed context limit: 199759 +
    # 8192 > 200000, decrease input length or `max_tokens` and try again" (continuedev/continue#6080).
    _p("anthropic", r"prompt is too long"),
    _p("anthropic", r"input length and `?max_tokens`? exceed context limit"),
    # Gemini, 400 INVALID_ARGUMENT: "The input token count (1200293) exceeds the maximum number of
    # tokens allowed (1048576)." (google-gemini/gemini-cli#6678).
    _p("gemini", r"exceeds the maximum number of tokens"),
    _p("gemini", r"input token count"),
    # llama.cpp server (llama-server): "the request exceeds the available context size. try
    # increasing the context size or enable context shift" with type "exceed_context_size_error"
    # and the sizes as "n_prompt_tokens"/"n_ctx" (ggml-org/llama.cpp#15780; sent as 500 before that
    # PR, 400 after); newer builds say "request (4476 tokens) exceeds the available context size
    # (4096 tokens)". Older builds failed mid-generation with "context shift is disabled"
    # (ggml-org/llama.cpp#13577). llama-cpp-python's Llama raises "Requested tokens (2285) exceed
    # context window of 2048" (abetlen/llama-cpp-python#416; caught by "context window" below) and
    # its server rewrites that into the OpenAI 400 above, code "context_length_exceeded"
    # (llama_cpp/server/errors.py).
    _p("llama.cpp", r"exceeds? the available context size"),
    _p("llama.cpp", r"exceed_context_size_error"),
    _p("llama.cpp", r"context shift is disabled"),
    _p("llama.cpp", r"\bn_ctx\b"),
    # vLLM: "This model's maximum context length is 16384 tokens. However, you requested 122946
    # tokens (...)" (vllm-project/vllm#20409), and from the engine "Prompt length of 5016 is longer
    # than the maximum model length of 4096" (hiyouga/LlamaFactory#7723) or "The decoder prompt
    # (length 17772) is longer than the maximum model length of 16384" (xorbitsai/inference#3785).
    _p("vllm", r"this model's maximum context length is"),
    _p("vllm", r"longer than the maximum model length"),
    _p("vllm", r"is too long to fit into the model"),
    # Ollama: with truncation off it refuses an over-long input with "the input length exceeds the
    # context length" (HTTP 400/500; ollama/ollama#17889, #17944), and clients built on it report
    # "prompt too long" / "exceeds context length".
    _p("ollama", r"prompt too long"),
    _p("ollama", r"exceeds? (?:the )?context length"),
    # Generic wording used by proxies and smaller providers: "too many tokens", "exceeds the context
    # window" (OpenAI Responses: "Your input exceeds the context window of this model"), "token
    # limit", "input is too long for requested model" (Amazon Bedrock), "Please reduce the length
    # of the messages" (Groq and OpenAI-compatible servers).
    _p("generic", r"too many tokens"),
    _p("generic", r"context window"),
    _p("generic", r"token limit"),
    _p("generic", r"input is too long"),
    _p("generic", r"reduce the length of the messages"),
)
"""Every overflow message pattern, by provider family."""


def match_overflow(body: str) -> OverflowPattern | None:
    """Return the first overflow pattern that matches ``body``, or ``None``."""
    for pattern in OVERFLOW_PATTERNS:
        if pattern.regex.search(body):
            return pattern
    return None


def classify_error(status: int | None, body: str) -> type[ProviderError]:
    """Map an HTTP status and error body to the ``ProviderError`` subclass that names its cause.

    Order matters: a 429 is a rate limit even when it talks about tokens (OpenAI's "Request too
    large ... on tokens per min" is a quota, not a window); an overflow message wins over a 5xx
    because llama.cpp used to send its overflow as a 500; a 413 (request too large) is treated as
    an overflow because shrinking the prompt is what fixes it.
    """
    if status == 429:
        return RateLimitError
    if match_overflow(body) is not None or status == 413:
        return PromptTooLongError
    if status is not None and 500 <= status <= 599:
        return ServerError
    return ProviderError


def is_context_overflow(status_or_error: int | BaseException | None, body: str = "") -> bool:
    """Whether a failure is a context overflow.

    Pass either an HTTP status and its body, or any exception (a ``PromptTooLongError`` is one by
    definition; another ``ProviderError`` is judged by its status and body; any other exception by
    its message), so an agent loop can ask this of whatever its provider raised.
    """
    if isinstance(status_or_error, BaseException):
        error = status_or_error
        if isinstance(error, PromptTooLongError):
            return True
        if isinstance(error, ProviderError):
            text = f"{error.body}\n{error}"
            return classify_error(error.status, text) is PromptTooLongError
        return match_overflow(str(error)) is not None
    return classify_error(status_or_error, body) is PromptTooLongError


class _ReportsInput(Protocol):
    """Anything carrying normalized usage, such as ``events.UsageReport``."""

    @property
    def input_tokens(self) -> int: ...


def is_silent_overflow(usage: _ReportsInput, context_window: int) -> bool:
    """Whether a successful call silently filled the whole window.

    Some servers truncate an over-long prompt instead of failing (Ollama by default, z.ai), so the
    only sign is the reported input: input plus cache reads at or above the window. A
    ``UsageReport`` already counts cache reads inside ``input_tokens`` (Anthropic's uncached,
    cache-read and cache-write counts are added up when parsed), so that sum is ``input_tokens``.
    """
    if context_window <= 0:
        return False
    return usage.input_tokens >= context_window
