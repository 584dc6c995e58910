"""Private copies of the harness modules a probe child runs once student code has started.

Student code shares the child's interpreter, and a module is a mutable namespace: a file that
replaced ``programs.run_program`` or ``json.dumps`` at import would decide what the harness
reports. So before it reads its task, each child executes the harness modules' code again into
fresh namespaces that no ``sys.modules`` entry, import or class leads to:

- each copy has its own copy of the builtins, and imports resolve to the other copies (for the
  harness) or to a snapshot of the module's attributes taken now (for everything else), so
  rebinding a name in any module after this point changes nothing the copies call. A relative
  import, of any level, is resolved against the importing copy's own package and must stay
  inside the harness; a harness package it names (``from .. import wire``, ``from ..probes
  import loader``) is a private namespace that holds only the copies taken from it;
- the methods of the classes the copies define are rebound to a throwaway namespace of their
  own, since ``object.__subclasses__()`` reaches every class, and a method's ``__globals__``
  would otherwise hand out its module;
- names listed in ``_INHERITED`` keep the fork server's value (the precompiled submission).

A probe child builds two sets: the main thread's, which student code can reach once it runs (it
runs on that thread, and a frame of it shows its module's namespace), and the reporter thread's
(``detached``), which no name, frame or class leads to: its classes' methods get a namespace of
builtins only, since ``object.__subclasses__()`` reaches every class and a namespace that holds
one of the module's functions holds the module (its ``__globals__``).

The code objects are compiled once, in the fork server (``prepare``); ``build`` runs in each child.
"""

from __future__ import annotations

import builtins
import importlib
import sys
import types
from typing import Any

PACKAGE = __name__.rsplit(".", 2)[0]  # the harness root: this file is <root>.execution.sealed
# Dotted paths below the harness root.
MODULES = (
    "wire",
    "syntax",
    "probes.standins",
    "probes.stable_hash",
    "execution.guard",
    "probes.loader",
    "probes.programs",
    "execution.reporter",
    "execution.child",
)
_INHERITED = {"probes.loader": ("_COMPILED",)}
_CODE: dict[str, types.CodeType] = {}


def prepare() -> None:
    """Compile the modules' code once (in the fork server, before any child)."""
    for name in MODULES:
        module = importlib.import_module(f"{PACKAGE}.{name}")
        path = module.__file__
        assert path is not None
        with open(path, encoding="utf-8") as handle:
            _CODE[name] = compile(handle.read(), path, "exec", dont_inherit=True)


def build(names: tuple[str, ...] = MODULES, *, detached: bool = False) -> dict[str, types.ModuleType]:
    """Fresh private copies of ``names`` and of what they import, by path below the harness root.
    ``detached``: the methods of their classes lead to builtins only, not to the module."""
    if not _CODE:
        prepare()
    code = dict(_CODE)
    made: dict[str, types.ModuleType] = {}
    packages: dict[str, types.ModuleType] = {}  # "" (the root), "probes", ...: private namespaces
    snapshots: dict[int, types.SimpleNamespace] = {}
    real_import = builtins.__import__

    def snapshot(module: Any) -> Any:
        if not isinstance(module, types.ModuleType) or module is builtins:
            return module  # stable_hash installs its class builder in the real builtins
        if id(module) not in snapshots:
            snapshots[id(module)] = types.SimpleNamespace(**vars(module))
        return snapshots[id(module)]

    def private_import(name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0) -> Any:
        if level > 0:  # relative imports stay inside the harness: copies, never the real modules
            name = _absolute(name, (globals or {}).get("__package__"), level)
        elif not _inside(name):
            return snapshot(real_import(name, globals, locals, fromlist, level))
        path = name[len(PACKAGE) + 1 :]  # below the harness root; "" for the root itself
        if path in code:
            return copy(path)
        found = package(path)
        for item in fromlist or ():
            # Each name taken from a package is set on its namespace here: where one is missing,
            # Python's ``from ... import`` would look in sys.modules and find the real module.
            inner = f"{path}.{item}" if path else item
            setattr(found, item, copy(inner) if inner in code else package(inner))
        return found

    def package(path: str) -> types.ModuleType:
        """A harness package's private namespace: it holds only the copies imported from it."""
        if path and not any(name.startswith(path + ".") for name in code):
            raise ImportError(f"{PACKAGE}.{path} has no private copy")
        if path not in packages:
            packages[path] = types.ModuleType(f"{PACKAGE}.{path}" if path else PACKAGE)
        return packages[path]

    def copy(path: str) -> types.ModuleType:
        if path in made:
            return made[path]
        if path not in code:
            raise ImportError(f"{PACKAGE}.{path} has no private copy")
        module = types.ModuleType(f"{PACKAGE}.{path}")
        own = dict(vars(builtins))
        own["__import__"] = private_import
        parent = f"{PACKAGE}.{path}".rpartition(".")[0]  # what its relative imports start from
        module.__dict__.update(__builtins__=own, __package__=parent, __file__=code[path].co_filename)
        made[path] = module  # before it runs: the copies import one another
        exec(code[path], module.__dict__)
        real = sys.modules.get(f"{PACKAGE}.{path}")
        for inherited in _INHERITED.get(path, ()):
            if real is not None and hasattr(real, inherited):
                setattr(module, inherited, dict(getattr(real, inherited)))
        _detach_methods(module, detached)
        return module

    for name in names:
        copy(name)
    return made


def _inside(name: str) -> bool:
    return name == PACKAGE or name.startswith(PACKAGE + ".")


def _absolute(name: str, package: Any, level: int) -> str:
    """The module a relative import names, resolved as Python resolves it, from a package inside
    the harness to a name inside the harness; anything else is refused."""
    if not isinstance(package, str) or not _inside(package):
        raise ImportError(f"relative import of {name!r} from outside {PACKAGE}")
    base = package.rsplit(".", level - 1)
    if len(base) < level or not _inside(base[0]):
        raise ImportError(f"relative import of {name!r} beyond {PACKAGE}")
    return f"{base[0]}.{name}" if name else base[0]


def _detach_methods(module: types.ModuleType, bare: bool = False) -> None:
    """Rebind the functions of the module's own classes to a namespace only they share: a copy
    of the module's, or (``bare``) one holding builtins only."""
    for value in list(vars(module).values()):
        if not isinstance(value, type) or value.__module__ != module.__name__:
            continue
        namespace = {} if bare else dict(vars(module))
        namespace["__builtins__"] = dict(module.__dict__["__builtins__"])
        for attribute, member in list(vars(value).items()):
            wrapped = member.__func__ if isinstance(member, (staticmethod, classmethod)) else member
            if isinstance(member, property):
                replaced: Any = property(*(_rebound(f, namespace) for f in (member.fget, member.fset, member.fdel)))
            elif isinstance(wrapped, types.FunctionType):
                function = _rebound(wrapped, namespace)
                replaced = type(member)(function) if wrapped is not member else function
            else:
                continue
            setattr(value, attribute, replaced)


def _rebound(function: Any, namespace: dict[str, Any]) -> Any:
    if not isinstance(function, types.FunctionType):
        return function
    copied = types.FunctionType(
        function.__code__, namespace, function.__name__, function.__defaults__, function.__closure__
    )
    copied.__kwdefaults__ = function.__kwdefaults__
    copied.__qualname__ = function.__qualname__
    copied.__doc__ = function.__doc__
    return copied
