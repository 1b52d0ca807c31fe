"""A package's public names imported on first use (PEP 562), the one mechanism of the package's
``__init__`` modules that re-export names of their submodules.

Importing any module of a package runs its ``__init__`` first: an ``__init__`` that imported what
it re-exports would make every process that needs one small module (a Spark Python worker, a
Dagster code location, a job) import the whole package (issue 17 §3). With

    __getattr__, __dir__ = lazy_exports(__name__, {"Name": "package.module", ...})

``package.Name`` and ``from package import Name`` import ``package.module`` when first asked for,
and the name is then an ordinary attribute. The ``__init__`` also imports the names under
``TYPE_CHECKING`` and lists them in ``__all__``, so type checkers and IDEs see them as before.
A name that is neither exported nor a loaded submodule raises `AttributeError`, which is also how
``from package import submodule`` goes on to import the submodule.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

# package -> its exports (public name -> the module that defines it), as each package declared them
# (tests check every entry names the module that defines the name)
DECLARED: dict[str, Mapping[str, str]] = {}


def lazy_exports(
    package: str, exports: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module-level ``__getattr__`` and ``__dir__`` of ``package`` for ``exports`` (public
    name -> the module that defines it)."""
    DECLARED[package] = exports

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)  # later lookups find it without this function
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *exports})

    return __getattr__, __dir__
