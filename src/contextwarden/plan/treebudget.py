"""The old home of :mod:`contextwarden.plan.spend`, kept for one release (deprecated).

Importing it warns; its old names answer with the new ones.
"""

from __future__ import annotations

from .._deprecated import renamed, warn_renamed
from . import spend

warn_renamed("contextwarden.plan.treebudget", "contextwarden.plan.spend", stacklevel=2)

_RENAMED = {
    "TreeBudgetPolicy": "SpendLimit",  # deprecated
    "TreeBudget": "SpendTracker",  # deprecated
    "TreeUsage": "TreeSpend",  # deprecated
    "TreeBudgetHook": "SpendLimitHook",  # deprecated
    "NOTICE_SOURCE": "NOTICE_SOURCE",  # deprecated
}


def __getattr__(name: str) -> object:
    """The old names, each resolved in :mod:`contextwarden.plan.spend` with a warning."""
    return renamed(__name__, name, _RENAMED, lambda new: getattr(spend, new), home=spend.__name__)
