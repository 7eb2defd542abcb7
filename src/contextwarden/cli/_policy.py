"""``--policy NAME``: rebuild a session's requests under a task preset instead of its recorded policy."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from ..errors import UsageError
from ..plan.policy import ContextPolicy
from ..plan.taskpolicies import get_task_policy, task_policy_names

F = TypeVar("F", bound=Callable[..., Any])


def policy_option(func: F) -> F:
    """Add ``--policy NAME`` (a task preset; default: what the session's builds recorded)."""
    return click.option(
        "--policy",
        "policy_name",
        default=None,
        metavar="NAME",
        help=f"Task preset to rebuild the requests with ({', '.join(task_policy_names())}); "
        "default: the policy the session's builds recorded.",
    )(func)


def chosen_policy(name: str | None) -> ContextPolicy | None:
    """The preset ``name`` names (``None`` keeps the recorded one); an unknown name is a usage error."""
    if name is None:
        return None
    try:
        return get_task_policy(name)
    except UsageError as exc:
        raise click.UsageError(str(exc)) from None
