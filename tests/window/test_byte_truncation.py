"""Truncation by bytes as a preset: 10,000 bytes from the middle under a header (``docs/behaviours.md``, row 51)."""

from __future__ import annotations

import pytest

from contextwarden import (
    AssistantMessage,
    ContextManager,
    ContextPolicy,
    ToolCall,
    ToolResult,
    UserMessage,
    open_store,
    render,
)
from contextwarden.errors import ConfigError
from contextwarden.replay import parse_strategy
from contextwarden.window.policies import ToolPolicy
from contextwarden.window.policies.presets import tool_policy_preset


def _log_output(lines: int) -> str:
    return "\n".join(f"step {i}: compiled module_{i}.c in {i % 7} ms — ok" for i in range(lines))


def _sent_output(policy: ContextPolicy, output: str) -> str:
    session = ContextManager(open_store("memory://"), policy=policy).session("s", model="gpt-4o", create=True)
    session.append(UserMessage(text="Build it."))
    session.append(AssistantMessage(tool_calls=(ToolCall(id="c1", name="bash", arguments={"command": "make"}),)))
    session.append(ToolResult(call_id="c1", tool_name="bash", output=output, exit_code=0))
    body = render(session.build(), "openai_chat")
    return next(m["content"] for m in body["messages"] if m["role"] == "tool")


def test_the_bytes_preset_cuts_the_middle_to_10000_bytes_under_a_header() -> None:
    output = _log_output(3_000)
    sent = _sent_output(ContextPolicy(tool_policies=tool_policy_preset("coding-bytes")), output)
    header, _, body = sent.partition("\n")
    assert header.startswith("[Warning: this output was truncated to 10,000 bytes, cut from the middle.")
    assert "3,000 lines" in header and f"{len(output.encode()):,} bytes" in header
    assert "bytes omitted …]" in body
    assert body.startswith("step 0: compiled") and body.endswith(output[-40:])
    head, _, rest = body.partition("\n[… ")
    tail = rest.partition(" bytes omitted …]\n")[2]
    kept = len(head.encode()) + len(tail.encode())
    assert 9_990 <= kept <= 10_000, kept  # what is kept is the 10,000 bytes, less a character cut in two


def test_a_short_output_is_left_alone_and_the_default_cuts_by_tokens() -> None:
    short = _log_output(20)
    assert _sent_output(ContextPolicy(tool_policies=tool_policy_preset("coding-bytes")), short) == short
    default = _sent_output(ContextPolicy(), _log_output(3_000))
    assert not default.startswith("[Warning")  # the token cut: marker at the cut, no header


def test_the_preset_is_a_replay_option_and_bad_sizes_are_refused() -> None:
    strategy = parse_strategy("contextwarden:tools=coding-bytes")
    assert all(p.max_bytes == 10_000 for p in strategy.policy.tool_policies[1:])  # type: ignore[attr-defined]
    with pytest.raises(ConfigError, match="max_bytes"):
        ToolPolicy(name="x", patterns=("*",), category="default", max_bytes=1)
