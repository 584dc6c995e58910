"""The abstract values ``Trace`` computes with: what a name holds while an operation's method
is interpreted (an operand, one of its fields, a constant, an own lambda or expression, ...),
and what the interpretation finds (writes, local derivatives handed on).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from .writes import Write

# --- abstract values ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Operand:
    index: int  # 0 the receiver, 1 the other operand, -1 the output node


@dataclass(frozen=True)
class Field:
    of: int  # an Operand index
    attr: str  # "data" or "grad"


@dataclass(frozen=True)
class Const:
    value: object
    own: bool  # written in the operation's own code


@dataclass(frozen=True)
class Prefix:
    text: str  # an f-string's constant start (`f"**{k}"`)


@dataclass(frozen=True, eq=False)
class Code:
    fn: ast.Lambda | ast.FunctionDef
    env: dict[str, object]
    own: bool
    bound: tuple[object, ...] = ()  # leading arguments (a bound receiver, functools.partial)


@dataclass(frozen=True)
class Seq:
    items: tuple[object, ...]


@dataclass(frozen=True)
class Datas:
    """The operands' data, in order (``[x.data for x in xs]``)."""


@dataclass(frozen=True)
class Prev:
    """The output node's parents (``out._prev``)."""


@dataclass(frozen=True, eq=False)
class Own:
    node: ast.expr  # an expression of the operation's own code
    value: object = None  # what it holds, when known (a Field)


def role(value: object) -> object:
    """What a value holds, through an Own wrapper."""
    return value.value if isinstance(value, Own) else value


@dataclass(frozen=True, eq=False)
class Each:
    of: object  # a loop variable: one item at a time


@dataclass(frozen=True, eq=False)
class Results:
    code: Code  # what an operation's own lambda returns, called with these arguments
    args: tuple[object, ...]


@dataclass(frozen=True)
class TableRef:
    name: str


@dataclass(eq=False)
class Found:
    write: Write
    env: dict[str, object]
    own: bool


@dataclass(eq=False)
class Provider:
    """Local derivatives the operation hands on, read back through one of ``links``."""

    kind: str  # "code" (a lambda), "pairs" ((operand, derivative) pairs), "subclass"
    links: set[str]  # parameter or attribute names it travels by
    code: Code | None = None
    pairs: list[tuple[int, ast.expr]] = field(default_factory=list)
    cls: ast.ClassDef | None = None
