"""contextwarden: decide what an LLM agent's model sees on each call.

The session is an append-only event log (the truth); every model request is a projection of it
that fits the model's budget, keeps what must never be lost, and stays byte-stable at the front
so provider prompt caches hit.
"""

from __future__ import annotations

from .errors import (
    BudgetExceededError,
    BudgetExhausted,
    CodecError,
    ConflictError,
    ContextWardenError,
    ProviderError,
    SessionNotFound,
    SummaryRejected,
    UsageError,
)
from .events import (
    AssistantMessage,
    BinaryPart,
    Compaction,
    ContextEdit,
    ContextEditBatch,
    Event,
    ForkMarker,
    Instruction,
    Pin,
    SettingChange,
    Steering,
    ThinkingBlock,
    ToolCall,
    ToolResult,
    ToolSetChange,
    UsageReport,
    UserMessage,
)

__all__ = [
    "AssistantMessage",
    "BinaryPart",
    "BudgetExceededError",
    "BudgetExhausted",
    "CodecError",
    "Compaction",
    "ConflictError",
    "ContextEdit",
    "ContextEditBatch",
    "ContextWardenError",
    "Event",
    "ForkMarker",
    "Instruction",
    "Pin",
    "ProviderError",
    "SessionNotFound",
    "SettingChange",
    "Steering",
    "SummaryRejected",
    "ThinkingBlock",
    "ToolCall",
    "ToolResult",
    "ToolSetChange",
    "UsageError",
    "UsageReport",
    "UserMessage",
]
