"""Hashes that do not depend on where an object sits in memory.

A class that does not define ``__hash__`` hashes its instances by address, and an engine that
keeps ``_prev`` in a set then visits a node's inputs in an order that changes with the memory
layout of the process. A correct engine gives the same gradients in any order; a buggy one
(a topological sort without a visited set, ``=`` for ``+=``) can give different wrong numbers
on different runs. Every class that student code defines with the default hash gets one
drawn from the order in which its instances are first hashed instead: the same program gives
the same order, so the same file gets the same score. Equality is unchanged (identity).
"""

from __future__ import annotations

import builtins
import itertools
import weakref
from collections.abc import Callable
from typing import Any

_numbers = itertools.count(1)
_assigned: dict[int, tuple[int, Any]] = {}  # id -> (number, the object or a weak reference to it)
_DEFAULT = object.__hash__


def _stable_hash(self: object) -> int:
    key = id(self)
    entry = _assigned.get(key)
    if entry is None:
        number = next(_numbers)
        try:
            # The entry goes when the object does, so a later object at the same address is new.
            holder: Any = weakref.ref(self, lambda _ref, _key=key: _assigned.pop(_key, None))
        except TypeError:
            holder = self  # no weak references (__slots__): kept alive, so its id is never reused
        entry = (number, holder)
        _assigned[key] = entry
    return entry[0]


def install(modules: frozenset[str]) -> None:
    """From now on, classes that ``modules`` (the student's file) build with the default hash
    hash by first-use order; library classes are left alone."""
    original: Callable[..., Any] = builtins.__build_class__

    def build_class(func: Callable[..., Any], name: str, *bases: Any, **keywords: Any) -> Any:
        cls = original(func, name, *bases, **keywords)
        student = isinstance(cls, type) and type.__dict__["__module__"].__get__(cls) in modules
        if student and getattr(cls, "__hash__", None) is _DEFAULT:
            try:
                cls.__hash__ = _stable_hash  # type: ignore[method-assign]
            except (AttributeError, TypeError):
                pass  # a metaclass that refuses: this class keeps the default
        return cls

    builtins.__build_class__ = build_class
