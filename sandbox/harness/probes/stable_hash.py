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

_DEFAULT = object.__hash__


class Numbering:
    """Hash numbers in first-use order; one per process in the sandbox (a child runs one probe),
    one per probe on the host, so that both sides iterate a mutant's sets alike."""

    def __init__(self) -> None:
        self._numbers = itertools.count(1)
        # Keyed by the default (address) hash, unique among live objects: ``id`` would do the
        # same, but it is an audited call, and this runs once per hash of every node.
        self._assigned: dict[int, tuple[int, Any]] = {}  # key -> (number, the object or a weak ref)
        self._keys: dict[int, int] = {}  # a weak reference's own key -> its object's key
        self._callback = self._forget  # one bound method for every weak reference

    def __call__(self, obj: object) -> int:
        key = _DEFAULT(obj)
        entry = self._assigned.get(key)
        if entry is None:
            number = next(self._numbers)
            try:
                # The entry goes when the object does, so a later object at the same address is new.
                holder: Any = weakref.ref(obj, self._callback)
                self._keys[_DEFAULT(holder)] = key
            except TypeError:
                holder = obj  # no weak references (__slots__): kept alive, so its key is never reused
            entry = (number, holder)
            self._assigned[key] = entry
        return entry[0]

    def _forget(self, ref: Any) -> None:
        key = self._keys.pop(_DEFAULT(ref), None)
        if key is not None:
            self._assigned.pop(key, None)


_numbering = Numbering()


def _stable_hash(self: object) -> int:
    return _numbering(self)


def number_hashes(cls: type, numbering: Numbering) -> None:
    """Hash ``cls``'s instances from ``numbering`` (the host's mutants of the reference: each
    probe starts a numbering of its own, as each probe's child does in the sandbox)."""

    def __hash__(self: object) -> int:
        return numbering(self)

    cls.__hash__ = __hash__  # type: ignore[method-assign,assignment]


def install(modules: frozenset[str]) -> None:
    """From now on, classes that ``modules`` (the student's file) build with the default hash
    hash by first-use order; library classes are left alone."""
    original: Callable[..., Any] = builtins.__build_class__

    def build_class(func: Callable[..., Any], name: str, *bases: Any, **keywords: Any) -> Any:
        cls = original(func, name, *bases, **keywords)
        student = isinstance(cls, type) and type.__dict__["__module__"].__get__(cls) in modules
        if student and getattr(cls, "__hash__", None) is _DEFAULT:
            try:
                cls.__hash__ = _stable_hash
            except (AttributeError, TypeError):
                pass  # a metaclass that refuses: this class keeps the default
        return cls

    builtins.__build_class__ = build_class  # type: ignore[assignment]  # same call, looser stub
