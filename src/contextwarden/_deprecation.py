"""Old public names kept importable for one release, each with a ``DeprecationWarning`` that names its successor.

A module lists its old names with :func:`deprecated_names` and assigns the result to its module-level
``__getattr__`` (PEP 562), so the warning fires where the old name is imported or read, and nowhere else.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping


def deprecated_names(module: str, names: Mapping[str, tuple[Callable[[], object], str]]) -> Callable[[str], object]:
    """A module ``__getattr__`` serving ``names``, each mapped to (a function returning it, what to use instead)."""

    def __getattr__(name: str) -> object:
        entry = names.get(name)
        if entry is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        value, instead = entry
        warnings.warn(
            f"{module}.{name} is deprecated and will be removed in the next release; use {instead}",
            DeprecationWarning,
            stacklevel=2,
        )
        return value()

    return __getattr__
