"""The policy a build runs under: :class:`ContextPolicy`, and its JSON form for the log.

Every build records the policy it used (see :mod:`contextwarden.assemble.buildrecord`), so ``inspect``,
``lint`` and the report rebuild the requests the agent really sent. The JSON form is the policy's
fields, nested dataclasses and tuples included; reading it back fills fields a newer release added
with their defaults and ignores fields it does not know, so an old log stays readable.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import typing
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from ..budget import BudgetPolicy
from ..errors import CodecError
from ..window.policies.presets import CODING_TOOL_POLICIES, ToolPolicy
from .planner import PlannerSettings

__all__ = ["ContextPolicy", "decode_dataclass", "encode_dataclass", "policy_from_dict", "policy_to_dict"]

_T = TypeVar("_T")


@dataclass(frozen=True, kw_only=True)
class ContextPolicy:
    """Everything that decides what the model sees. Vary it with ``dataclasses.replace``.

    Presets for kinds of agents (coding, research, browser) come from
    :func:`contextwarden.plan.taskpolicies.get_task_policy`.
    """

    name: str = "contextwarden"
    """A name for reports."""
    tool_policies: tuple[ToolPolicy, ...] = CODING_TOOL_POLICIES
    """Per-tool normalize/truncate/retain rules."""
    max_item_tokens: int = 10_000
    """Hard cap of every item."""
    planner: PlannerSettings = field(default_factory=PlannerSettings)
    """When and how much to reduce."""
    budget: BudgetPolicy = field(default_factory=BudgetPolicy)
    """Reserve, safety margin, trigger."""
    compact: bool = True
    """Compact when reductions are not enough (needs a compactor on the manager)."""
    retrieval_tools: bool = True
    """Expose ``read_range`` and ``recall`` so evicted content can be read back (served by
    :meth:`~contextwarden.assemble.manager.ContextManager.retrieve`). When False, no truncation marker or
    placeholder names them: markers name only tools the model was given."""
    retrieval_max_tokens: int = 4_000
    """Cap of one retrieval answer."""


def policy_to_dict(policy: ContextPolicy) -> dict[str, Any]:
    """The policy as JSON-ready data (nested settings as objects, tuples as lists)."""
    return encode_dataclass(policy)


def policy_from_dict(data: object) -> ContextPolicy:
    """Read a policy written by :func:`policy_to_dict`; ``CodecError`` names what is wrong."""
    try:
        return decode_dataclass(ContextPolicy, data, "policy")
    except (TypeError, ValueError) as exc:
        raise CodecError(f"recorded policy: {exc}") from None


def encode_dataclass(value: object) -> dict[str, Any]:
    """A frozen settings dataclass as JSON-ready data (nested dataclasses as objects, tuples as lists)."""
    encoded = _encode(value)
    if not isinstance(encoded, dict):
        raise TypeError(f"expected a dataclass instance, got {type(value).__name__}")
    return encoded


def _encode(value: object) -> object:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _encode(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, (tuple, list)):
        return [_encode(v) for v in value]
    return value


@functools.cache
def _hints(cls: Hashable) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def decode_dataclass(cls: type[_T], data: object, where: str) -> _T:
    """Rebuild dataclass ``cls`` from :func:`encode_dataclass` data by its field types.

    Missing fields take their defaults, unknown ones are ignored (logs outlive releases); a wrong
    shape is a ``CodecError`` naming ``where``.
    """
    if not isinstance(data, dict):
        raise CodecError(f"{where}: expected an object, got {type(data).__name__}")
    hints = _hints(cast(Hashable, cls))
    kwargs = {
        f.name: _value(hints[f.name], data[f.name], f"{where}.{f.name}")
        for f in dataclasses.fields(cls)  # type: ignore[arg-type]
        if f.name in data and f.init
    }
    return cls(**kwargs)


def _value(hint: Any, raw: object, where: str) -> object:
    origin = typing.get_origin(hint)
    if origin is tuple:
        if not isinstance(raw, list):
            raise CodecError(f"{where}: expected a list, got {type(raw).__name__}")
        args = typing.get_args(hint)
        item = args[0] if args else Any
        return tuple(_value(item, v, f"{where}[{i}]") for i, v in enumerate(raw))
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return decode_dataclass(hint, raw, where)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return hint(raw)
    return raw
