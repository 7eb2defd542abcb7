"""The HTTP provider against a real model: llama-cpp-python's server with SmolLM2-135M-Instruct.

Run ``bash scripts/llama_server.sh up`` and export the URL it prints; without it these tests skip.
"""

from __future__ import annotations

import threading

import pytest

from _localmodel import LOCAL_N_CTX, local_model_name, local_provider
from contextwarden.context import Message, ModelContext
from contextwarden.errors import Cancelled, PromptTooLongError
from contextwarden.providers import CallOptions, is_context_overflow, is_silent_overflow

pytestmark = pytest.mark.localmodel


def small_request() -> ModelContext:
    return ModelContext(
        model=local_model_name(),
        system="You are a helpful assistant. Answer in one short sentence.",
        messages=(Message(role="user", text="What is the capital of France?"),),
    )


def limited(max_tokens: int = 24) -> CallOptions:
    return CallOptions(max_tokens=max_tokens, temperature=0.0)


def test_real_completion_reports_text_and_usage() -> None:
    with local_provider() as provider:
        response = provider.complete(small_request(), options=limited())
    assert response.text.strip()
    assert response.stop_reason in ("end_turn", "max_tokens")
    assert 10 < response.usage.input_tokens < LOCAL_N_CTX
    assert 0 < response.usage.output_tokens <= 24
    assert response.model
    assert not is_silent_overflow(response.usage, LOCAL_N_CTX)
    choices = response.raw["choices"]
    assert isinstance(choices, list) and choices


def test_real_max_tokens_stop_is_normalized() -> None:
    with local_provider() as provider:
        response = provider.complete(small_request(), options=limited(2))
    # a one-sentence answer does not fit in two tokens: the server reports finish_reason "length"
    assert response.stop_reason == "max_tokens"
    assert response.usage.output_tokens == 2


def test_real_context_overflow_is_classified_and_the_server_keeps_working() -> None:
    filler = " ".join(f"line {i}: the quick brown fox jumps over the lazy dog." for i in range(400))
    request = ModelContext(
        model=local_model_name(), system="", messages=(Message(role="user", text=f"Summarize this:\n{filler}"),)
    )
    with local_provider(max_retries=3) as provider:
        with pytest.raises(PromptTooLongError) as info:
            provider.complete(request, options=CallOptions(max_tokens=32))
        error = info.value
        assert error.status is not None and 400 <= error.status < 600
        assert is_context_overflow(error)
        assert str(LOCAL_N_CTX) in str(error)  # the message names the window
        # the failure left the server usable: a small request right after works
        assert provider.complete(small_request(), options=limited()).usage.input_tokens > 0


def test_real_request_can_be_cancelled_in_flight() -> None:
    cancel = threading.Event()
    request = ModelContext(
        model=local_model_name(),
        system="",
        messages=(Message(role="user", text="Write a long story about a lighthouse keeper."),),
    )
    with local_provider() as provider:
        threading.Timer(0.2, cancel.set).start()
        with pytest.raises(Cancelled):
            provider.complete(request, options=CallOptions(max_tokens=400, cancel=cancel))
