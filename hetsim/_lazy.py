"""Names of a package imported on first use (PEP 562), so that importing the package stays cheap: ``import
hetsim`` loads no ONNX, pandas or matplotlib, and ``hetsim --help`` no SimPy or networkx."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Mapping


def attach(package: str, names: Mapping[str, str], public: Iterable[str]) -> tuple[Callable, Callable]:
    """The module-level ``__getattr__`` and ``__dir__`` of ``package``: ``names`` maps each lazy name to the module
    that defines it (a name mapped to ``package.name`` is that submodule itself); ``public`` is the package's
    ``__all__``. A name is imported once, then cached in the package's namespace.

    Raises (from ``__getattr__``):
        AttributeError: a name that is neither defined nor lazy, as for any module.
    """
    public = set(public)

    def __getattr__(name: str):
        if name not in names:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module = importlib.import_module(names[name])
        value = module if names[name] == f"{package}.{name}" else getattr(module, name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | public)

    return __getattr__, __dir__
