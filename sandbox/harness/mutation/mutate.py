"""Mutation operators: one deliberate bug each, applied to the student's own syntax tree.

This module runs inside the sandbox (stdlib only); ``grader.mutate`` is the host's view of
the same catalogue, with the words shown to students. Operators find their target by role,
not by spelling: ``x.grad += v`` or ``x.grad = x.grad + v`` (or an accumulator function
called with ``x`` and ``v``), operations defined in any order, ``_prev`` of any container
type, and an operation's backward rule wherever the operation puts it (``rules``): closures of
any name, lambdas, helper methods, module-level functions (called, named in a lambda or
``functools.partial``, handed on as objects, or entries of a dispatch table keyed by the
operation's tag). Code that several operations share is edited for this operation only: its
own local derivatives where it passes them in, or the shared ``+=`` under a guard on the
node's tag. When the target is absent an operator raises ``NotApplicable`` saying what it
looked for; it never edits something else instead. The engine is the class Python binds to
the name (``graded_class``, decided in ``probes.facts``). ``mutate`` edits a tree;
``mutate_text`` writes the edit back into the student's own text, changing only the edited
statements (``splice``).

The catalogue is kept here: each operator's id, family and summary, with the function that
makes its edit (those are in ``operators``, by the part of the engine they break; the search
for an operation's backward rule is ``rules``).
"""

from __future__ import annotations

import ast
import copy
from dataclasses import dataclass

from .. import syntax, wire
from ..probes import loader
from ..probes.facts import NotApplicable as NotApplicable  # re-exported: callers use mutate.*
from ..probes.facts import graded_class as graded_class
from . import splice
from .operators.accumulation import (
    _accumulate_to_assign,
    _add_forgets_operand,
    _mul_drops_upstream,
    _mul_own_operand,
    _mul_subtracts,
)
from .operators.forward import _div_square, _drop_negation, _rewritten, _swap_operator
from .operators.local import (
    _exp_derivative_x,
    _log_derivative_x,
    _pow_exponent_off,
    _pow_no_factor,
    _relu_gate,
    _tanh_input,
    _tanh_linear,
)
from .operators.sweep import _no_visited, _not_reversed, _reseed
from .operators.targets import Engine, Transform

STEP5 = "acc_mul"  # the handout's Step-5 bug: += becomes = in __mul__'s backward
FORCED_FAIL = "forced_fail"  # guard mutant: every method raises
EQUIVALENT = wire.EQUIVALENT  # guard: a behaviour-identical copy that honest checks must accept


find_class = graded_class  # its older name


# --- the operators ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Operator:
    id: str
    family: str  # ACC, CHAIN, LOC, TOPO, SEED, FWD
    summary: str  # the bug, in a few words
    transform: Transform


def _first_in_every_method(statement: str) -> Transform:
    """Put ``statement`` at the start of every method of the engine (after a docstring)."""

    def transform(engine: Engine) -> list[int]:
        edited = []
        for method in engine.methods.values():
            first = method.body[0] if method.body else None
            start = 1 if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) else 0
            method.body.insert(start, ast.copy_location(syntax.parse(statement).body[0], method))
            edited.append(method.lineno)
        if not edited:
            raise NotApplicable("the engine class has no methods")
        return sorted(edited)

    return transform


# Every method raises: checks that never touch this engine still pass.
_forced_fail = _first_in_every_method("raise RuntimeError('forced-fail mutant: every method raises')")
# A harmless assignment: the same behaviour in different code. Checks that test what the engine
# computes pass on it; "checks" comparing the file's text, tree or bytecode with a constant fail.
_equivalent = _first_in_every_method("_unchanged_ = None")


CATALOGUE: tuple[Operator, ...] = (
    *(
        Operator(f"acc_{op}", "ACC", f"`+=` becomes `=` in {method}'s backward", _accumulate_to_assign(method))
        for op, method in (
            ("add", "__add__"),
            ("mul", "__mul__"),
            ("pow", "__pow__"),
            ("relu", "relu"),
            ("tanh", "tanh"),
            ("exp", "exp"),
            ("log", "log"),
        )
    ),
    Operator("chain_add_one_operand", "CHAIN", "__add__'s backward updates only one operand", _add_forgets_operand),
    Operator("chain_mul_no_upstream", "CHAIN", "__mul__'s backward drops the upstream out.grad", _mul_drops_upstream),
    Operator("loc_mul_own_operand", "LOC", "__mul__'s backward uses the operand's own value", _mul_own_operand),
    Operator("loc_mul_subtract", "LOC", "`+=` becomes `-=` in __mul__'s backward", _mul_subtracts),
    Operator("loc_pow_no_factor", "LOC", "pow's derivative misses the factor n", _pow_no_factor),
    Operator("loc_pow_exponent", "LOC", "pow's derivative uses x**(n-2)", _pow_exponent_off),
    Operator("loc_relu_gate", "LOC", "relu's gradient gate flips strictness (> vs >=)", _relu_gate),
    Operator("loc_tanh_linear", "LOC", "tanh's derivative is 1 - t instead of 1 - t**2", _tanh_linear),
    Operator("loc_tanh_input", "LOC", "tanh's derivative is 1 - x**2 (the input, not the output)", _tanh_input),
    Operator("loc_exp_derivative", "LOC", "exp's derivative is x instead of exp(x)", _exp_derivative_x),
    Operator("loc_log_derivative", "LOC", "log's derivative is x instead of 1/x", _log_derivative_x),
    Operator("topo_not_reversed", "TOPO", "backward() walks the topological order forwards", _not_reversed),
    Operator("topo_no_visited", "TOPO", "the topological sort drops its visited check", _no_visited),
    Operator(
        "seed_root_zero",
        "SEED",
        "backward() seeds the output's grad with 0",
        _reseed("backward", 1.0, 0.0, "backward() has no `self.grad = 1.0` seed"),
    ),
    Operator(
        "seed_leaf_one",
        "SEED",
        "new nodes start with grad 1 instead of 0",
        _reseed("__init__", 0.0, 1.0, "__init__ has no `self.grad = 0` initialisation"),
    ),
    Operator(
        "fwd_neg",
        "FWD",
        "-x computes x (the minus sign is lost)",
        _rewritten("__neg__", "{self} * 1", ("__mul__",))(_drop_negation("__neg__")),
    ),
    Operator(
        "fwd_sub",
        "FWD",
        "a - b computes a + b",
        _rewritten("__sub__", "{self} + {other}", ("__add__",))(_drop_negation("__sub__", (ast.Sub, ast.Add))),
    ),
    Operator(
        "fwd_div",
        "FWD",
        "a / b computes a * b**-2",
        _rewritten("__truediv__", "{self} * {other} ** -2", ("__mul__", "__pow__"))(_div_square),
    ),
    Operator(
        "fwd_rdiv",
        "FWD",
        "k / x computes k * x",
        _rewritten("__rtruediv__", "{self} * {other}", ("__mul__",))(
            _drop_negation("__rtruediv__", (ast.Div, ast.Mult))
        ),
    ),
    Operator(
        "fwd_rsub",
        "FWD",
        "k - x computes k + x",
        _rewritten("__rsub__", "{self} + {other}", ("__add__",))(_drop_negation("__rsub__", (ast.Sub, ast.Add))),
    ),
    Operator(
        "fwd_radd",
        "FWD",
        "k + x computes x - k",
        _rewritten("__radd__", "{self} - {other}", ("__sub__",))(_swap_operator("__radd__", ast.Add, ast.Sub)),
    ),
    Operator(
        "fwd_rmul",
        "FWD",
        "k * x computes x / k",
        _rewritten("__rmul__", "{self} / {other}", ("__truediv__",))(_swap_operator("__rmul__", ast.Mult, ast.Div)),
    ),
)

GUARDS: tuple[Operator, ...] = (
    Operator(FORCED_FAIL, "GUARD", "every method raises", _forced_fail),
    Operator(EQUIVALENT, "GUARD", "a harmless assignment starts every method", _equivalent),
)

BY_ID: dict[str, Operator] = {op.id: op for op in (*CATALOGUE, *GUARDS)}


def mutate(
    tree: ast.Module, operator_id: str, class_name: str, *, in_place: bool = False, locations: bool = True
) -> tuple[ast.Module, list[int]]:
    """A mutated copy of ``tree`` and the lines edited; the original is left untouched unless
    ``in_place`` (a tree parsed just for this mutant: copying costs more than parsing).
    ``locations=False`` leaves new nodes without positions: for a tree that is only written
    back as text, never compiled."""
    operator = BY_ID.get(operator_id)
    if operator is None:
        raise NotApplicable(f"unknown mutation {operator_id!r}")
    copied = tree if in_place else copy.deepcopy(tree)
    lines = operator.transform(Engine(copied, class_name))
    return (ast.fix_missing_locations(copied) if locations else copied), lines


_ORIGINAL: dict[tuple[str, str], ast.Module] = {}  # the last file's tree, read-only, shared by its mutants


def _original(source: str, filename: str) -> ast.Module:
    """The student's file parsed once for all its mutants (splicing only reads it)."""
    key = (source, filename)
    tree = _ORIGINAL.get(key)
    if tree is None:  # kept in a local: another thread may replace the entry meanwhile
        tree = loader.parse(source, filename)
        _ORIGINAL.clear()
        _ORIGINAL[key] = tree
    return tree


def mutate_text(
    source: str, operator_id: str, class_name: str, filename: str = "autograd_lab.py"
) -> tuple[str, list[int]]:
    """The mutated file as text, and the lines edited as ``mutate`` reports them. Only edited
    statements are rewritten (``splice``): a mutant differs from the student's file only where
    its bug is. Raises NotApplicable as ``mutate`` does (loader.LoadError if it does not parse)."""
    tree = _original(source, filename)
    mutated, lines = mutate(loader.parse(source, filename), operator_id, class_name, in_place=True, locations=False)
    return splice.write_back(source, tree, mutated, lines), lines
