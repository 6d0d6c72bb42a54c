"""PEP 562 lazy public names, shared by the packages that load theirs on first use.

``import groundlock`` (and ``groundlock.stores``, ``groundlock.lakehouse``) must not load
LangChain, delta-rs or NumPy before a name that needs them is read (issue 29). Each such
package keeps a table of its public names and their modules; :func:`lazy_names` turns it
into the module's ``__getattr__`` and ``__dir__``, written once here rather than per package.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["lazy_names"]


def lazy_names(
    package: str, table: Mapping[str, str], public: Iterable[str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``, whose ``table`` maps name -> module.

    A name read once is stored in the package's namespace: the next read is a plain
    attribute, with no call.
    """
    names = frozenset(public)

    def getattr_(name: str) -> Any:  # noqa: ANN401  (a public name of any kind)
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        vars(sys.modules[package])[name] = value
        return value

    def dir_() -> list[str]:
        return sorted({*vars(sys.modules[package]), *names})

    return getattr_, dir_
