"""Renamed public names still work for one release, and every use of an old one warns.

Each old name resolves to the very object of its new name, under a DeprecationWarning that names
the replacement.
"""

from __future__ import annotations

import importlib

import pytest


@pytest.mark.parametrize(
    ("module", "old", "new"),
    [
        ("contextwarden", "BudgetExhausted", "SpendLimitReached"),
        ("contextwarden.errors", "BudgetExhausted", "SpendLimitReached"),
        ("contextwarden.errors", "ContextOverflowError", "PromptTooLongError"),
    ],
)
def test_old_name_warns_and_is_the_new_one(module: str, old: str, new: str) -> None:
    mod = importlib.import_module(module)
    with pytest.warns(DeprecationWarning, match=f"{old} is deprecated .* use .*{new}"):
        value = getattr(mod, old)
    assert value is getattr(mod, new)


def test_an_old_error_name_still_catches_the_new_error() -> None:
    from contextwarden.errors import SpendLimitReached

    with pytest.warns(DeprecationWarning):
        from contextwarden.errors import BudgetExhausted
    with pytest.raises(BudgetExhausted):
        raise SpendLimitReached("spent")


def test_an_unknown_name_is_still_an_attribute_error() -> None:
    import contextwarden.errors

    with pytest.raises(AttributeError, match="NoSuchError"):
        _ = contextwarden.errors.NoSuchError  # type: ignore[attr-defined]
