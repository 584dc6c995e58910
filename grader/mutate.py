"""The mutation catalogue, as the host and the student see it.

The AST operators themselves live in ``sandbox.harness.mutation.mutate`` because they run
inside the sandbox, next to the student's code (the host never executes a student file). This
module adds what each bug *means*: the misconception in plain words, the handout part that
explains it, and a one-line check that would catch it. Every operator has an entry; a test
holds the two lists together.
"""

from __future__ import annotations

from dataclasses import dataclass

from sandbox.harness.mutation.mutate import (
    BY_ID,
    CATALOGUE,
    EQUIVALENT,
    FORCED_FAIL,
    GUARDS,
    STEP5,
    NotApplicable,
    Operator,
    graded_class,
    mutate,
    mutate_text,
)

__all__ = [
    "BY_ID",
    "CATALOGUE",
    "EQUIVALENT",
    "FAMILIES",
    "FORCED_FAIL",
    "GUARDS",
    "INFO",
    "STEP5",
    "MutantInfo",
    "NotApplicable",
    "Operator",
    "graded_class",
    "mutate",
    "mutate_source",
    "mutate_text",
]

FAMILIES: dict[str, str] = {
    "ACC": "gradient accumulation (+= versus =)",
    "CHAIN": "chain rule: passing the upstream gradient to every parent",
    "LOC": "local derivative rules",
    "TOPO": "topological order of the backward pass",
    "SEED": "seeding: the output's grad starts at 1, every other grad at 0",
    "FWD": "forward definitions of derived operations",
}

_ACC = "Part 3, 'Why += is non-negotiable'"
_CHAIN = "Part 2b, 'The Chain Rule as a Local Contract'"
_LOCAL = "Part 3 (each op's local rule) and Part 8, 'Finite Differences as an Independent Auditor'"
_TOPO = "Part 4, 'backward() End to End'"
_FWD = "Part 3: division is multiplication by a negative power, subtraction is addition of a negation"


@dataclass(frozen=True)
class MutantInfo:
    misconception: str  # what the student's engine would believe, in plain words
    handout: str  # where the handout explains it
    example_check: str  # a one-line assertion that catches this bug


def _acc(op: str, example: str) -> MutantInfo:
    return MutantInfo(
        f"{op}'s backward assigns the gradient (=) instead of adding to it (+=): when a value is reused, "
        "only the last path's contribution survives.",
        _ACC,
        example,
    )


INFO: dict[str, MutantInfo] = {
    "acc_add": _acc("__add__", "a = Value(2.0); c = (a + a) * a; c.backward(); assert abs(a.grad - 8.0) < 1e-9"),
    "acc_mul": _acc("__mul__", "x = Value(3.0); y = x * x + x; y.backward(); assert abs(x.grad - 7.0) < 1e-9"),
    "acc_pow": _acc("__pow__", "x = Value(1.5); y = x**2 + x**3; y.backward(); assert abs(x.grad - (3 + 6.75)) < 1e-9"),
    "acc_relu": _acc("relu", "x = Value(0.5); y = x.relu() * x; y.backward(); assert abs(x.grad - 1.0) < 1e-9"),
    "acc_tanh": _acc(
        "tanh", "x = Value(0.5); y = x.tanh() * x; y.backward(); compare x.grad with a centered difference"
    ),
    "acc_exp": _acc("exp", "x = Value(0.5); y = x.exp() * x; y.backward(); assert abs(x.grad - 1.5*exp(0.5)) < 1e-9"),
    "acc_log": _acc("log", "x = Value(2.0); y = x.log() * x; y.backward(); assert abs(x.grad - (log(2) + 1)) < 1e-9"),
    "chain_add_one_operand": MutantInfo(
        "__add__'s backward passes the upstream gradient to only one of its operands; the other never "
        "receives its share.",
        _CHAIN,
        "a, b = Value(2.0), Value(3.0); c = a + b; c.backward(); assert b.grad == 1.0",
    ),
    "chain_mul_no_upstream": MutantInfo(
        "__mul__'s backward forgets to multiply by out.grad, so everything downstream of the product is "
        "ignored: the chain rule is broken at every multiply.",
        _CHAIN,
        "a, b = Value(2.0), Value(3.0); L = (a * b) * 1.7; L.backward(); assert abs(a.grad - 5.1) < 1e-9",
    ),
    "loc_mul_own_operand": MutantInfo(
        "__mul__'s backward multiplies by the operand's own value; the derivative of a*b with respect to a "
        "is b (the *other* operand).",
        _CHAIN,
        "a, b = Value(2.0), Value(3.0); c = a * b; c.backward(); assert a.grad == 3.0 and b.grad == 2.0",
    ),
    "loc_mul_subtract": MutantInfo(
        "__mul__'s backward subtracts (-=) its contribution instead of adding it, so every gradient through "
        "a product has the wrong sign.",
        _ACC,
        "a, b = Value(2.0), Value(3.0); c = a * b; c.backward(); assert a.grad == 3.0",
    ),
    "loc_pow_no_factor": MutantInfo(
        "__pow__'s derivative drops the factor n: d/dx x**n is n * x**(n-1), not x**(n-1).",
        _LOCAL,
        "x = Value(1.5); y = x**3; y.backward(); assert abs(x.grad - 3 * 1.5**2) < 1e-9",
    ),
    "loc_pow_exponent": MutantInfo(
        "__pow__'s derivative uses the wrong power: d/dx x**n is n * x**(n-1), not n * x**(n-2).",
        _LOCAL,
        "x = Value(1.5); y = x**3; y.backward(); assert abs(x.grad - 3 * 1.5**2) < 1e-9",
    ),
    "loc_relu_gate": MutantInfo(
        "relu's gradient gate is off at the boundary: the gradient must pass only where the input was "
        "strictly positive (and relu'(0) = 0).",
        "Part 3 (relu's rule) and Part 7 on cached forward values",
        "x = Value(0.0); x.relu().backward(); assert x.grad == 0.0   # and a negative input gives 0 too",
    ),
    "loc_tanh_linear": MutantInfo(
        "tanh's derivative is written 1 - t; it is 1 - t**2, where t = tanh(x).",
        _LOCAL,
        "x = Value(0.5); x.tanh().backward(); assert abs(x.grad - (1 - math.tanh(0.5)**2)) < 1e-9",
    ),
    "loc_tanh_input": MutantInfo(
        "tanh's derivative squares the input x instead of the output t: it is 1 - tanh(x)**2, not 1 - x**2.",
        _LOCAL,
        "x = Value(0.5); x.tanh().backward(); assert abs(x.grad - (1 - math.tanh(0.5)**2)) < 1e-9",
    ),
    "loc_exp_derivative": MutantInfo(
        "exp's derivative is exp(x) itself (the cached output), not x.",
        _LOCAL,
        "x = Value(0.5); x.exp().backward(); assert abs(x.grad - math.exp(0.5)) < 1e-9",
    ),
    "loc_log_derivative": MutantInfo(
        "log's derivative is 1/x, not x.",
        _LOCAL,
        "x = Value(2.0); x.log().backward(); assert abs(x.grad - 0.5) < 1e-9",
    ),
    "topo_not_reversed": MutantInfo(
        "backward() runs the nodes in topological order instead of reverse topological order, so a node's "
        "rule runs before its gradient is complete (or even set).",
        _TOPO,
        "the Part 1 graph: assert a.grad == 4.5 (it reads 0 when the order is not reversed)",
    ),
    "topo_no_visited": MutantInfo(
        "backward() does not run each node exactly once, after every node that uses it (a missing visited "
        "check, or an order that is not a topological one): a node shared by two paths passes on a doubled "
        "or incomplete gradient.",
        _TOPO,
        "a, b = Value(2.0), Value(3.0); t = a * b; L = t * t + t; L.backward(); assert abs(a.grad - 39.0) < 1e-9",
    ),
    "seed_root_zero": MutantInfo(
        "backward() seeds the output's grad with 0 instead of 1 (dL/dL = 1), so every gradient is 0.",
        _TOPO,
        "x = Value(3.0); y = x * 2.0; y.backward(); assert x.grad == 2.0",
    ),
    "seed_leaf_one": MutantInfo(
        "new nodes start with grad 1 instead of 0, so every gradient carries a stale +1 (or more).",
        "Part 3, the grad field ('Accumulated dL/d(data)' starts from 0)",
        "x = Value(3.0); y = x * 2.0; y.backward(); assert x.grad == 2.0",
    ),
    "fwd_neg": MutantInfo(
        "-x does not negate: __neg__ must multiply by -1.",
        _FWD,
        "x = Value(2.0); y = -x; y.backward(); assert y.data == -2.0 and x.grad == -1.0",
    ),
    "fwd_sub": MutantInfo(
        "a - b computes a + b: __sub__ must add the *negation* of b.",
        _FWD,
        "a, b = Value(5.0), Value(2.0); c = a - b; c.backward(); assert c.data == 3.0 and b.grad == -1.0",
    ),
    "fwd_div": MutantInfo(
        "a / b is not a * b**-1: division must be multiplication by b to the power -1.",
        _FWD,
        "a, b = Value(3.0), Value(2.0); c = a / b; c.backward(); assert c.data == 1.5 and b.grad == -0.75",
    ),
    "fwd_rdiv": MutantInfo(
        "k / x (a number divided by a Value) is not k * x**-1: __rtruediv__ must use the power -1.",
        _FWD,
        "x = Value(2.0); y = 1.0 / x; y.backward(); assert y.data == 0.5 and x.grad == -0.25",
    ),
    "fwd_rsub": MutantInfo(
        "k - x (a number minus a Value) computes k + x: __rsub__ must negate the Value.",
        _FWD,
        "x = Value(2.0); y = 5.0 - x; y.backward(); assert y.data == 3.0 and x.grad == -1.0",
    ),
    "fwd_radd": MutantInfo(
        "k + x (a number plus a Value) does not add: __radd__ must return x + k.",
        _FWD,
        "x = Value(2.0); y = 5.0 + x; y.backward(); assert y.data == 7.0 and x.grad == 1.0",
    ),
    "fwd_rmul": MutantInfo(
        "k * x (a number times a Value) does not multiply: __rmul__ must return x * k.",
        _FWD,
        "x = Value(2.0); y = 3.0 * x; y.backward(); assert y.data == 6.0 and x.grad == 3.0",
    ),
    EQUIVALENT: MutantInfo(
        "your checks fail on a copy of your engine that computes exactly the same things: they test the "
        "code's text, not its behaviour.",
        "the lab's Step 5: checks should catch wrong gradients, not changed code",
        "build a graph, call backward() and assert on the gradients it produces",
    ),
    FORCED_FAIL: MutantInfo(
        "your checks never touch your engine: with every method raising, they still pass.",
        "the lab's Step 5 and Steps 2-4",
        "import the Value class from this file, build a graph and assert on its gradients",
    ),
}


def mutate_source(source: str, operator_id: str, class_name: str, filename: str = "<mutant>") -> tuple[str, list[int]]:
    """The mutated file as text, spliced into the student's own text as the sandbox runs it
    (``mutate_text``: only the edited statements change); raises NotApplicable."""
    return mutate_text(source, operator_id, class_name, filename)
