"""What each build ran with (model profile, tools, policy), recorded in the session log.

A request depends on more than the log: the model's window, the tools offered and the policy. The
manager records them as a :class:`~contextwarden.log.events.SettingChange` whenever they differ from
the last recorded ones, so ``inspect``, ``lint`` and the report rebuild the requests the agent
really sent instead of guessing a default model with no tools. The event is not a window event: it
changes nothing the model sees.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..context import ToolDefinition
from ..errors import CodecError
from ..log.events import JSONValue, SettingChange
from ..models import ModelProfile
from ..plan.policy import ContextPolicy, decode_dataclass, encode_dataclass, policy_from_dict, policy_to_dict

__all__ = ["BUILD_KEY", "BuildSettings", "build_settings_of", "record_event"]

BUILD_KEY = "build"
"""The key of ``SettingChange.settings`` under which a build's settings are recorded."""


@dataclass(frozen=True, kw_only=True)
class BuildSettings:
    """The inputs of a build other than the log."""

    profile: ModelProfile
    """The model profile the request was fitted to."""
    tools: tuple[ToolDefinition, ...]
    """The tools the caller offered (before tool-set filtering and retrieval tools)."""
    policy: ContextPolicy
    """The policy in force."""


def record_event(settings: BuildSettings) -> SettingChange:
    """The event that records ``settings``."""
    data: dict[str, Any] = {
        "profile": encode_dataclass(settings.profile),
        "tools": [_tool_record(t) for t in settings.tools],
        "policy": policy_to_dict(settings.policy),
    }
    recorded: dict[str, JSONValue] = {BUILD_KEY: data}
    return SettingChange(model=settings.profile.name, settings=recorded)


def build_settings_of(event: SettingChange) -> BuildSettings | None:
    """The build settings an event records, or ``None`` for a setting change of another kind.

    ``CodecError`` when the record is there but malformed (a hand-edited or foreign log).
    """
    data = event.settings.get(BUILD_KEY)
    if data is None:
        return None
    if not isinstance(data, dict):
        raise CodecError(f"setting event {event.id}: {BUILD_KEY!r} must be an object")
    try:
        tools = tuple(
            ToolDefinition(
                name=str(t["name"]),
                description=str(t["description"]),
                parameters=dict(t["parameters"]),
                group=str(t.get("group", "")),
            )
            for t in _list(data.get("tools", []))
        )
        return BuildSettings(
            profile=_profile_from_dict(data.get("profile")),
            tools=tools,
            policy=policy_from_dict(data.get("policy", {})),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise CodecError(f"setting event {event.id}: malformed build record ({exc})") from None


def _tool_record(tool: ToolDefinition) -> dict[str, Any]:
    # The group is written only when set, so records of ungrouped tools stay as they were.
    record: dict[str, Any] = {"name": tool.name, "description": tool.description, "parameters": tool.parameters}
    if tool.group:
        record["group"] = tool.group
    return record


def _list(value: object) -> list[Any]:
    if not isinstance(value, list):
        raise TypeError(f"expected a list, got {type(value).__name__}")
    return value


def _profile_from_dict(data: object) -> ModelProfile:
    return decode_dataclass(ModelProfile, data, "profile")
