"""The proxy in front of the real local llama.cpp server (OpenAI protocol), marker ``localmodel``."""

from __future__ import annotations

from pathlib import Path

import openai
import pytest

from _localmodel import local_llm_url_or_skip, local_model_name
from contextwarden.log.events import AssistantMessage, UsageReport
from contextwarden.proxy.app import Proxy
from contextwarden.proxy.serve import BackgroundServer
from contextwarden.proxy.settings import ProxySettings

pytestmark = pytest.mark.localmodel


@pytest.mark.parametrize("stream", [False, True])
def test_chat_through_the_proxy_to_llama_cpp(tmp_path: Path, stream: bool) -> None:
    url = local_llm_url_or_skip()
    base = url.removesuffix("/v1")
    proxy = Proxy(ProxySettings(openai_upstream=base, anthropic_upstream=base, store_url=str(tmp_path / "s.db")))
    try:
        with BackgroundServer(proxy.app) as px, openai.OpenAI(base_url=px.url + "/v1", api_key="local") as client:
            messages = [{"role": "user", "content": "Say hello in one word."}]
            if stream:
                chunks = list(
                    client.chat.completions.create(
                        model=local_model_name(),
                        messages=messages,
                        max_tokens=8,
                        stream=True,
                        stream_options={"include_usage": True},
                    )
                )
                text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
                # llama-cpp-python's server sends no usage chunk even when asked: then none is recorded
                sent = next((c.usage for c in chunks if c.usage), None)
            else:
                reply = client.chat.completions.create(model=local_model_name(), messages=messages, max_tokens=8)
                text = reply.choices[0].message.content or ""
                sent = reply.usage
                assert sent is not None and sent.prompt_tokens > 0
        proxy.settle()
        (info,) = proxy.store.list_sessions()
        events = proxy.store.read(info.id)
        (assistant,) = [e for e in events if isinstance(e, AssistantMessage)]
        assert assistant.text == text
        usage = [e for e in events if isinstance(e, UsageReport)]
        # the upstream's own usage is what the log holds, never an estimate of ours
        assert [(u.input_tokens, u.output_tokens) for u in usage] == (
            [(sent.prompt_tokens, sent.completion_tokens)] if sent is not None else []
        )
    finally:
        proxy.close()
