"""Helpers for the tests that need the real local model server (marker ``localmodel``).

The server is llama-cpp-python's OpenAI-compatible server with SmolLM2-135M-Instruct, started by
``bash scripts/llama_server.sh up``, which prints the ``CONTEXTWARDEN_LLM_URL`` to export.
Tests call :func:`local_llm_url_or_skip` (or :func:`local_provider`) and skip, saying why, when
the variable is unset or the server does not answer.
"""

from __future__ import annotations

import functools
import os

import httpx
import pytest

from contextwarden.providers import OpenAICompatProvider

HOW_TO_START = (
    "build and start it with `bash scripts/llama_server.sh up` and export the CONTEXTWARDEN_LLM_URL=... line it prints"
)

LOCAL_N_CTX = int(os.environ.get("CONTEXTWARDEN_LLM_N_CTX", "2048"))
"""The server's context window (``--n_ctx``), as scripts/llama_server.sh starts it."""


@functools.lru_cache(maxsize=4)
def _probe(url: str) -> tuple[str | None, str]:
    """Ask ``{url}/models``; return (model id, "") when it answers, else (None, why not)."""
    try:
        response = httpx.get(f"{url}/models", timeout=5.0)
    except httpx.HTTPError as exc:
        return None, f"no llama.cpp server answers at {url} ({type(exc).__name__}: {exc})"
    if response.status_code != 200:
        return None, f"{url}/models answered HTTP {response.status_code}"
    try:
        models = response.json().get("data") or []
        model_id = str(models[0]["id"]) if models else "local"
    except (ValueError, KeyError, TypeError, AttributeError):
        return None, f"{url}/models did not answer with an OpenAI model list: {response.text[:200]!r}"
    return model_id, ""


def local_llm_url_or_skip() -> str:
    """The local server's base URL (``.../v1``), or skip the test saying why there is none."""
    url = os.environ.get("CONTEXTWARDEN_LLM_URL", "").rstrip("/")
    if not url:
        pytest.skip(f"CONTEXTWARDEN_LLM_URL is not set: no local model server; {HOW_TO_START}")
    model, why = _probe(url)
    if model is None:
        pytest.skip(f"{why}; {HOW_TO_START}")
    return url


def local_model_name() -> str:
    """The model id the local server reports (skips like :func:`local_llm_url_or_skip`)."""
    model, _ = _probe(local_llm_url_or_skip())
    assert model is not None
    return model


def local_provider(*, timeout: float = 120.0, max_retries: int = 1) -> OpenAICompatProvider:
    """An :class:`OpenAICompatProvider` for the local server (skips when there is none)."""
    return OpenAICompatProvider(
        local_llm_url_or_skip(), timeout=timeout, max_retries=max_retries, backoff_base=0.2, name="llama.cpp"
    )
