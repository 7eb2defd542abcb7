"""Error classification: every overflow family, statuses, silent overflow."""

from __future__ import annotations

import json

import pytest

from contextwarden.errors import (
    MalformedResponse,
    PromptTooLongError,
    ProviderError,
    RateLimitError,
    ServerError,
)
from contextwarden.log.events import UsageReport
from contextwarden.providers import (
    OVERFLOW_PATTERNS,
    classify_error,
    is_context_overflow,
    is_silent_overflow,
    match_overflow,
)

# Real error bodies and messages, as providers sent them (sources cited in classify.py).
REAL_OVERFLOWS: list[tuple[str, int | None, str]] = [
    (
        "openai",
        400,
        json.dumps(
            {
                "error": {
                    "message": "This model's maximum context length is 8192 tokens. However, your messages "
                    "resulted in 8227 tokens. Please reduce the length of the messages.",
                    "type": "invalid_request_error",
                    "param": "messages",
                    "code": "context_length_exceeded",
                }
            }
        ),
    ),
    ("openai", 400, '{"error": {"code": "context_length_exceeded", "message": "too long"}}'),
    (
        "anthropic",
        400,
        '{"type":"error","error":{"type":"invalid_request_error",'
        '"message":"prompt is too long: 209353 tokens > 199999 maximum"}}',
    ),
    (
        "anthropic",
        400,
        '{"type":"error","error":{"type":"invalid_request_error","message":"input length and '
        "`max_tokens` exceed context limit: 199759 + 8192 > 200000, decrease input length or "
        '`max_tokens` and try again"}}',
    ),
    (
        "gemini",
        400,
        '{"error": {"code": 400, "message": "The input token count (1200293) exceeds the maximum number of '
        'tokens allowed (1048576).", "status": "INVALID_ARGUMENT"}}',
    ),
    ("gemini", 400, "The input token count (132478) is over budget"),
    (
        "llama.cpp",
        400,
        '{"error":{"code":400,"message":"the request exceeds the available context size. try increasing '
        'the context size or enable context shift","type":"exceed_context_size_error",'
        '"n_prompt_tokens":14429,"n_ctx":8192}}',
    ),
    (
        "llama.cpp",
        500,
        '{"error":{"code":500,"message":"the request exceeds the available context size. try increasing '
        'the context size or enable context shift","type":"exceed_context_size_error"}}',
    ),
    ("llama.cpp", 400, "request (4476 tokens) exceeds the available context size (4096 tokens)"),
    ("llama.cpp", 500, '{"error":{"code":500,"message":"context shift is disabled","type":"server_error"}}'),
    ("llama.cpp", 400, '{"error": {"message": "prompt has 3000 tokens", "n_ctx": 2048}}'),
    (
        "vllm",
        400,
        '{"object": "error", "message": "This model\'s maximum context length is 6048 tokens. However, you '
        'requested 6616 tokens (568 in the messages, 6048 in the completion).", "type": "BadRequestError"}',
    ),
    ("vllm", 400, "ValueError: Prompt length of 5016 is longer than the maximum model length of 4096."),
    ("vllm", 400, "The prompt (total length 25938) is too long to fit into the model (context length 4096)."),
    ("ollama", 400, '{"error":"prompt too long; exceeded max context length by 120 tokens"}'),
    ("ollama", 500, '{"error":"the input length exceeds the context length"}'),
    ("generic", 400, "Request has too many tokens for this model"),
    ("generic", 400, "Your input exceeds the context window of this model."),
    ("generic", 400, "Requested tokens (2285) exceed context window of 2048"),
    ("generic", 400, "token limit reached for this deployment"),
    ("generic", 400, "Input is too long for requested model."),
    ("generic", 400, "Please reduce the length of the messages or completion."),
]

NOT_OVERFLOWS = [
    "max_tokens: 10000 > 4096, which is the maximum allowed number of output tokens for claude-3-5-sonnet",
    "Invalid value for 'temperature': must be between 0 and 2",
    "Incorrect API key provided",
    "model not found",
    "",
]


@pytest.mark.parametrize(("family", "status", "body"), REAL_OVERFLOWS)
def test_real_overflow_messages_are_classified_as_overflow(family: str, status: int | None, body: str) -> None:
    assert classify_error(status, body) is PromptTooLongError
    assert classify_error(None, body) is PromptTooLongError
    assert is_context_overflow(status, body)


def test_every_family_has_a_real_message_and_matches_its_own_pattern() -> None:
    families = {p.family for p in OVERFLOW_PATTERNS}
    assert families == {"openai", "anthropic", "gemini", "llama.cpp", "vllm", "ollama", "generic"}
    tested = {family for family, _, _ in REAL_OVERFLOWS}
    assert tested == families
    # the first message of each family (its canonical one) is recognised by that family's patterns
    firsts: dict[str, str] = {}
    for family, _, body in REAL_OVERFLOWS:
        firsts.setdefault(family, body)
    for family, body in firsts.items():
        own = [p for p in OVERFLOW_PATTERNS if p.family == family]
        assert any(p.regex.search(body) for p in own), family


def test_each_pattern_is_exercised_by_some_real_message() -> None:
    bodies = [body for _, _, body in REAL_OVERFLOWS]
    unused = [p.regex.pattern for p in OVERFLOW_PATTERNS if not any(p.regex.search(b) for b in bodies)]
    assert unused == []


def test_match_overflow_names_the_family() -> None:
    hit = match_overflow("prompt is too long: 209353 tokens > 199999 maximum")
    assert hit is not None and hit.family == "anthropic"
    hit = match_overflow('{"type":"exceed_context_size_error"}')
    assert hit is not None and hit.family == "llama.cpp"
    assert match_overflow("all good") is None


@pytest.mark.parametrize("body", NOT_OVERFLOWS)
def test_other_messages_are_not_overflows(body: str) -> None:
    assert match_overflow(body) is None
    assert not is_context_overflow(400, body)


def test_status_classes() -> None:
    assert classify_error(429, "Rate limit reached") is RateLimitError
    # a quota message about tokens on a 429 stays a rate limit: retrying later is the fix
    assert classify_error(429, "Request too large on tokens per min (TPM); too many tokens") is RateLimitError
    assert classify_error(500, "internal error") is ServerError
    assert classify_error(503, "") is ServerError
    assert classify_error(529, '{"type":"error","error":{"type":"overloaded_error"}}') is ServerError
    assert classify_error(413, "request_too_large") is PromptTooLongError
    assert classify_error(400, "bad request") is ProviderError
    assert classify_error(401, "unauthorized") is ProviderError
    assert classify_error(None, "connection reset") is ProviderError


def test_is_context_overflow_accepts_exceptions() -> None:
    assert is_context_overflow(PromptTooLongError("x"))
    assert is_context_overflow(ProviderError("failed", status=400, body='{"error":"prompt too long"}'))
    assert is_context_overflow(ProviderError("prompt is too long: 5 tokens > 4 maximum"))
    assert not is_context_overflow(ProviderError("failed", status=500, body="boom"))
    assert not is_context_overflow(MalformedResponse("empty body", status=200))
    assert is_context_overflow(ValueError("Requested tokens (2285) exceed context window of 2048"))
    assert not is_context_overflow(ValueError("division by zero"))


def test_silent_overflow_when_reported_input_reaches_the_window() -> None:
    assert is_silent_overflow(UsageReport(input_tokens=2048), 2048)
    assert is_silent_overflow(UsageReport(input_tokens=2100, cache_read_tokens=2000), 2048)
    assert not is_silent_overflow(UsageReport(input_tokens=2047), 2048)
    assert not is_silent_overflow(UsageReport(input_tokens=10), 0)
    # Anthropic's uncached 100 + cache read 150_000 + write 50_000 is parsed into a total of 200_100
    assert is_silent_overflow(UsageReport(input_tokens=200_100, cache_read_tokens=150_000), 200_000)
    # the recorded usage event works the same way
    assert is_silent_overflow(UsageReport(input_tokens=4096, cache_read_tokens=4000), 4096)
    assert not is_silent_overflow(UsageReport(input_tokens=100), 4096)
