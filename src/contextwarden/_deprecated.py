"""Old public names kept for one release: using one warns and hands back what replaces it.

A module that renamed a public name keeps a map of old name to new name and answers lookups of the
old ones from its module ``__getattr__`` (PEP 562)::

    _RENAMED = {"OldName": "NewName"}

    def __getattr__(name: str) -> object:
        return renamed(__name__, name, _RENAMED, globals().__getitem__)

A module whose old names have no one-to-one successor (an old type kept as it was) assigns
:func:`deprecated_names` to its ``__getattr__`` instead.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import TypeVar

T = TypeVar("T")


def warn_renamed(old: str, new: str, *, stacklevel: int = 3) -> None:
    """Warn that ``old`` is deprecated in favour of ``new`` (the caller of the caller is blamed)."""
    warnings.warn(
        f"{old} is deprecated and will be removed in the next release; use {new}",
        DeprecationWarning,
        stacklevel=stacklevel,
    )


def renamed(
    module: str,
    name: str,
    renames: Mapping[str, str],
    resolve: Callable[[str], object],
    *,
    home: str | None = None,
) -> object:
    """``resolve`` of the new name for ``module``'s old ``name``, with a warning; AttributeError otherwise.

    ``home`` is the module the new name lives in, when it moved (default: ``module``).
    """
    new = renames.get(name)
    if new is None:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    warn_renamed(f"{module}.{name}", f"{home or module}.{new}", stacklevel=4)
    return resolve(new)


def renamed_kwarg(value: T | None, old: str, new: str) -> T | None:
    """``value``, passed under the old keyword ``old`` (warns unless it is ``None``; ``new`` replaces it)."""
    if value is not None:
        warn_renamed(f"the keyword argument {old}=", f"{new}=", stacklevel=4)
    return value


def renamed_method(old: str, new: str) -> Callable[..., object]:
    """A method named ``old`` that warns and calls the method ``new`` with the same arguments."""

    def method(self: object, *args: object, **kwargs: object) -> object:
        cls = type(self).__name__
        warn_renamed(f"{cls}.{old}()", f"{cls}.{new}()")
        result: object = getattr(self, new)(*args, **kwargs)
        return result

    method.__name__ = method.__qualname__ = old
    method.__doc__ = f"Deprecated: use :meth:`{new}`."
    return method


def deprecated_names(module: str, names: Mapping[str, tuple[Callable[[], object], str]]) -> Callable[[str], object]:
    """A module ``__getattr__`` serving ``names``, each mapped to (a function returning it, what to use instead)."""

    def __getattr__(name: str) -> object:
        entry = names.get(name)
        if entry is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        value, instead = entry
        warn_renamed(f"{module}.{name}", instead)
        return value()

    return __getattr__


def renamed_attribute(old: str, new: str) -> property:
    """A read-only attribute named ``old`` that warns and reads the attribute ``new``."""

    def read(self: object) -> object:
        warn_renamed(f"{type(self).__name__}.{old}", f"{type(self).__name__}.{new}")
        return getattr(self, new)

    return property(read, doc=f"Deprecated: use ``{new}``.")
