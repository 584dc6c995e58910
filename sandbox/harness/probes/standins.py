"""Inert stand-ins for drawing-only modules (graphviz, matplotlib, IPython) when not installed.

Kept apart from the loader, with imports that cost next to nothing, because the interpreter
that runs a student's file as a script imports it before anything else.
"""

from __future__ import annotations

import importlib.machinery
import sys
import types

# typing and importlib.abc cost ~25 ms to import in a fresh interpreter, paid once per
# injected bug: they are only needed for type checking (finders are duck-typed).
MYPY = False
if MYPY:
    from collections.abc import Sequence
    from typing import Any


class _Inert:
    """Absorbs any use: calls, attributes, context managers, iteration, indexing."""

    def __call__(self, *args: Any, **kwargs: Any) -> _Inert:
        return self

    def __getattr__(self, name: str) -> _Inert:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return self

    def __enter__(self) -> _Inert:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def __iter__(self) -> Any:
        return iter(())

    def __getitem__(self, key: Any) -> _Inert:
        return self

    def __setitem__(self, key: Any, value: Any) -> None:
        return None

    def __repr__(self) -> str:
        return "<stand-in>"

    def __str__(self) -> str:
        return ""


class _StandInModule(types.ModuleType):
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _Inert()


class StandInFinder:
    """Last on ``sys.meta_path``: serves a stand-in only when the real module is absent."""

    def __init__(self, roots: Sequence[str]):
        self.roots = set(roots)
        self.used: list[str] = []

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname.split(".")[0] not in self.roots:
            return None
        if fullname not in self.used:
            self.used.append(fullname)
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)  # type: ignore[arg-type]

    def create_module(self, spec: Any) -> types.ModuleType:
        module = _StandInModule(spec.name)
        module.__path__ = []  # a package, so "import matplotlib.pyplot" also resolves here
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        return None


def install_stand_ins(roots: Sequence[str]) -> StandInFinder:
    finder = StandInFinder(roots)
    sys.meta_path.append(finder)
    return finder
