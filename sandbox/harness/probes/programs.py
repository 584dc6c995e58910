"""Probe executors: build graphs with an engine class and read plain observations.

The same code runs in the sandbox against the student's engine and on the host against the
reference, so observed and expected values are produced the same way. Everything read from
an engine object goes through ``read_float``/``read_text``: student objects can lie through
their dunder methods, so only stored float values are trusted, never ``__float__``.

``observe`` and ``run_api`` never touch an engine object themselves: each step that does is one
of ``PRIMITIVES``, reached through ``ask``. On the host that is a plain call (``call_here``); in
a probe child the observing code runs on a thread that student code never runs on, and ``ask``
has the main thread make the call (``execution/reporter.py``).
"""

from __future__ import annotations

import math
import operator
import sys
import types
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from .. import wire

Observation = Any  # float | bool | str | list[str] | {"nonfinite": ...} | {"bad": ...}
Emit = Callable[[str, dict[str, Observation]], None]
Make = Callable[[float], Any]
# ask(kind, primitive, *args): what PRIMITIVES[primitive](*args) returns, as an engine object
# (NODE), as JSON data (PLAIN), as a pair of both (PAIR), or (PARTIAL) as the pair of what a
# series of reads gave before one raised and that exception (None when none did).
Ask = Callable[..., Any]
NODE, PLAIN, PAIR, PARTIAL = "node", "plain", "pair", "partial"

MAX_TEXT = 60
MAX_PARENTS = 64

BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "add": operator.add,
    "sub": operator.sub,
    "mul": operator.mul,
    "div": operator.truediv,
    "pow": operator.pow,
}
UNARY_METHODS = ("tanh", "relu", "exp", "log")
SYMBOLS = {"add": "+", "sub": "-", "mul": "*", "div": "/", "pow": "**"}  # binary ops as Python writes them


class ProgramError(Exception):
    """The engine raised (or misbehaved) while a program ran; ``stage`` says where.

    Its fields are its arguments. The probe child never uses it (``observe``): student code
    can rebind a class's attributes."""

    @property
    def stage(self) -> str:
        return str(self.args[0])

    @property
    def error(self) -> BaseException:
        return self.args[1]  # type: ignore[no-any-return]

    @property
    def observations(self) -> dict[str, Observation]:
        return self.args[2]  # type: ignore[no-any-return]


def same_value(want: Observation, got: Observation) -> bool:
    """Two observed quantities agree: floats within 1e-9 + 1e-7 relative (NaN equals NaN), the
    rest exactly. Used to tell a mutant's behaviour from the original engine's."""
    if isinstance(want, float) and isinstance(got, float):
        return abs(want - got) <= 1e-9 + 1e-7 * abs(want) or (math.isnan(want) and math.isnan(got))
    return bool(want == got)


def read_float(value: Any) -> Observation:
    """A JSON-safe reading of a number stored by the engine, without calling its methods."""
    if isinstance(value, bool):
        return {wire.BAD: "bool"}
    if type(value) is float:
        number = value
    elif isinstance(value, float):
        # float subclasses (numpy.float64 among them): read the stored value, not __float__.
        number = float.__float__(value)
    elif isinstance(value, int):
        try:
            number = float(int.__index__(value))
        except OverflowError:
            return {wire.NONFINITE: "overflow"}
    else:
        found = _numpy_number(value)
        if found is None:
            return {wire.BAD: type(value).__name__[:MAX_TEXT]}
        number = found
    if math.isnan(number):
        return {wire.NONFINITE: "nan"}
    if math.isinf(number):
        return {wire.NONFINITE: "inf" if number > 0 else "-inf"}
    return number


def _numpy_number(value: Any) -> float | None:
    """A NumPy float scalar, or a float array holding one number, read with NumPy's own
    conversion. Exact NumPy types only: a subclass could answer through its own methods. The
    handout asks for plain floats; the API check says so once, and every other check reads the
    number the engine holds."""
    numpy = sys.modules.get("numpy")
    if numpy is None:
        return None  # no NumPy loaded, so this value cannot be one of its types
    kind = type(value)
    if kind in (numpy.float16, numpy.float32, numpy.longdouble):
        return float(value)
    if kind is numpy.ndarray and value.dtype.kind == "f" and value.size == 1:
        return float(value.reshape(-1)[0])
    return None


def plain_number(value: Any) -> bool:
    """What the handout's field table asks for: a Python float (an int is accepted too)."""
    return type(value) in (int, float)


def read_text(value: Any) -> Observation:
    if value is None:
        return ""
    if type(value) is str:
        return value[:MAX_TEXT]
    if isinstance(value, str):
        return str.__str__(value)[:MAX_TEXT]
    return {wire.BAD: type(value).__name__[:MAX_TEXT]}


def parents_of(node: Any) -> list[Any]:
    prev = node._prev
    parents = []
    for index, parent in enumerate(prev):
        if index >= MAX_PARENTS:
            break
        parents.append(parent)
    return parents


def links_of(node: Any, cls: type) -> list[Any]:
    """The nodes this one was built from: ``_prev`` when the engine has it, else every engine
    node held in a tuple, list or set among the node's own attributes. The field's name is one
    fault of the API checks; whether an operation links its inputs is another question."""
    if hasattr(node, "_prev"):
        return parents_of(node)
    try:
        fields = object.__getattribute__(node, "__dict__")
    except AttributeError:
        return []
    found: list[Any] = []
    for value in list(fields.values())[:MAX_PARENTS]:
        if type(value) in (tuple, list, set, frozenset):
            found.extend(item for item in list(value)[:MAX_PARENTS] if isinstance(item, cls))
    return found


def _prev_names(node: Any, names: dict[int, str]) -> Observation:
    """The parents' names, sorted, or what kept the grader from reading them."""
    if not hasattr(node, "_prev"):
        return {wire.UNREAD: "no _prev field"}
    try:
        return sorted(names.get(id(p), "?") for p in parents_of(node))
    except Exception:
        return {wire.UNREAD: "_prev is not iterable"}


def describe_step(step: list[Any]) -> str:
    target, op, *args = step
    shown = [str(a) for a in args]
    if op == "backward":
        return f"{shown[0]}.backward()"
    if op == "sgd":
        return f"{target} = Value({shown[0]}.data - {shown[1]} * {shown[0]}.grad)"
    if op in UNARY_METHODS:
        return f"{target} = {shown[0]}.{op}()"
    if op == "neg":
        return f"{target} = -{shown[0]}"
    return f"{target} = {shown[0]} {SYMBOLS[op]} {shown[1]}"


def _apply(op: str, args: Sequence[Any]) -> Any:
    if op in BINARY:
        return BINARY[op](args[0], args[1])
    if op == "neg":
        return -args[0]
    if op in UNARY_METHODS:
        return getattr(args[0], op)()
    raise ValueError(f"unknown operation {op!r}")


def run_program(make: Make, program: dict[str, Any], emit: Emit) -> dict[str, Observation]:
    """Build the program's graph, run its backward steps and observe every named node; raises
    ProgramError when the engine fails.

    ``emit("forward", obs)`` is called before the first backward() so forward values survive
    a backward() that never returns.
    """
    obs, failure = observe(make, program, emit)
    if failure is not None:
        raise ProgramError(failure[0], failure[1], obs) from failure[1]
    return obs


Failure = tuple[str, Exception]  # (stage, the engine's exception)


def call_here(kind: str, primitive: str, *args: Any) -> Any:
    """``ask`` where the observing code and the engine share a thread (the host)."""
    return PRIMITIVES[primitive](*args)


def observe(
    make: Make, program: dict[str, Any], emit: Emit, ask: Ask = call_here
) -> tuple[dict[str, Observation], Failure | None]:
    """``run_program`` without an exception class of its own: the probe child's form, since student
    code can rebind any class's attributes, but not a tuple's contents. Engine objects are only
    held and handed back to ``ask``."""
    nodes: dict[str, Any] = {}
    obs: dict[str, Observation] = {}
    record = set(program.get("record", ()))
    schedule: Any = None
    backward_seen = False
    stage = "creating the leaves"
    try:
        for name, value in program["leaves"].items():
            stage = f"creating leaf {name} = Value({value!r})"
            nodes[name], obs[f"{name}.data"] = ask(PAIR, "construct", make, float(value))
        for step in program["steps"]:
            stage = describe_step(step)
            target, op, *args = step
            if op == "backward":
                if not backward_seen:
                    if "graph" in record:
                        obs.update(_fields(ask(PLAIN, "graph", tuple(nodes.items())), _graph_keys(nodes)))
                    emit("forward", dict(obs))
                    if "schedule" in record:
                        schedule = ask(NODE, "trace_backwards", tuple(nodes.items()))
                    backward_seen = True
                ask(PLAIN, "backward", nodes[args[0]])
                continue
            if op == "sgd":
                param, rate = nodes[args[0]], float(args[1])
                data, grad = ask(PLAIN, "read", param, "data"), ask(PLAIN, "read", param, "grad")
                if not isinstance(data, float) or not isinstance(grad, float):
                    raise TypeError(f"{args[0]}.data or .grad is not a finite float")
                nodes[target], obs[f"{target}.data"] = ask(PAIR, "construct", make, data - rate * grad)
            else:
                operands = tuple(nodes[a] if isinstance(a, str) else a for a in args)
                nodes[target], obs[f"{target}.data"] = ask(PAIR, "apply", op, operands)
        if not backward_seen:
            if "graph" in record:
                obs.update(_fields(ask(PLAIN, "graph", tuple(nodes.items())), _graph_keys(nodes)))
            emit("forward", dict(obs))
        stage = "reading gradients"
        if backward_seen:
            grads, failed = ask(PARTIAL, "read_each", tuple(nodes.values()), "grad")
            obs.update((f"{name}.grad", grad) for name, grad in zip(nodes, grads, strict=False))  # up to a failing read
            if failed is not None:
                raise failed
        if "schedule" in record:
            obs["schedule"] = ask(PLAIN, "schedule", schedule) if schedule is not None else []
    except Exception as error:  # student code may raise anything; SystemExit is left to the caller
        return obs, (stage, error)
    return obs, None


def _graph(nodes: dict[str, Any]) -> dict[str, Observation]:
    """Each named node's parents (by identity, as names; '?' for unnamed) and op label."""
    names = {id(node): name for name, node in nodes.items()}
    out: dict[str, Observation] = {}
    for name, node in nodes.items():
        out[f"{name}.prev"] = _prev_names(node, names)
        has_op = hasattr(node, "_op")
        out[f"{name}.op"] = read_text(getattr(node, "_op", None)) if has_op else {wire.UNREAD: "no _op field"}
    return out


def _wrap_backwards(nodes: dict[str, Any], schedule: list[str]) -> None:
    """Record the order in which backward() calls each named node's ``_backward`` (nodes
    without one are not traced: the schedule check then says what it could not see)."""
    for name, node in nodes.items():
        original = getattr(node, "_backward", None)
        if not callable(original):
            continue

        node._backward = _traced(name, original, schedule.append)


def _traced(name: str, original: Callable[[], Any], note: Callable[[str], None]) -> Callable[[], Any]:
    """A wrapper handed to student objects: its namespace is empty, so it leads nowhere."""

    def traced() -> Any:
        note(name)
        return original()

    return types.FunctionType(traced.__code__, {}, "traced", None, traced.__closure__)


# --- the API probe: does each operation exist and build a linked graph node? ---------------

API_X = 1.3
API_Y = 0.6
API_C = 0.5  # the plain float added to (and subtracted from) a node
API_K = 2.5  # the plain float a node is multiplied (and divided) by

# Each operation on leaves x, y and plain floats c, k.
Build = Callable[[Any, Any, float, float], Any]
API_OPERATIONS: dict[str, Build] = {
    "add": lambda x, y, c, k: x + y,
    "add_float": lambda x, y, c, k: x + c,
    "radd": lambda x, y, c, k: c + x,
    "mul": lambda x, y, c, k: x * y,
    "mul_float": lambda x, y, c, k: x * k,
    "rmul": lambda x, y, c, k: k * x,
    "sub": lambda x, y, c, k: x - y,
    "sub_float": lambda x, y, c, k: x - c,
    "rsub": lambda x, y, c, k: c - x,
    "div": lambda x, y, c, k: x / y,
    "div_float": lambda x, y, c, k: x / k,
    "rdiv": lambda x, y, c, k: k / x,
    "pow": lambda x, y, c, k: x**3,
    "neg": lambda x, y, c, k: -x,
    "tanh": lambda x, y, c, k: x.tanh(),
    "relu": lambda x, y, c, k: x.relu(),
    "exp": lambda x, y, c, k: x.exp(),
    "log": lambda x, y, c, k: x.log(),
}
USES_Y = {"add", "mul", "sub", "div"}


def _reaches(cls: type, result: Any, targets: list[Any]) -> bool:
    """True when every target is an ancestor of result through its links (bounded search)."""
    wanted = {id(t) for t in targets}
    frontier: list[Any] = [result]
    seen: set[int] = set()
    while frontier and wanted and len(seen) < 64:
        node = frontier.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        for parent in links_of(node, cls):
            wanted.discard(id(parent))
            frontier.append(parent)
    return not wanted


def run_api(
    cls: type,
    make: Make,
    x: float = API_X,
    y: float = API_Y,
    c: float = API_C,
    k: float = API_K,
    ask: Ask = call_here,
) -> dict[str, Observation]:
    """Does each operation exist and build a linked node? On leaves ``x`` (> 0, for log) and ``y``,
    with plain floats ``c`` and ``k`` (not 0) on the other side."""
    obs: dict[str, Observation] = {}
    leaf, failure = ask(PAIR, "try_make", make, x)
    if failure is not None:
        obs["construct"] = failure
        return obs
    obs["construct"] = "ok"
    for field in ("data", "grad", "_prev", "_op", "_backward"):
        obs[f"field.{field}"] = ask(PLAIN, "field", leaf, field, x)
    obs["method.backward"] = ask(PLAIN, "has_backward", leaf)
    for op in API_OPERATIONS:
        obs.update(_fields(ask(PLAIN, "api_op", cls, make, op, (x, y, c, k)), (f"op.{op}.status", f"op.{op}.data")))
    return obs


def _fields(answer: dict[str, Observation], keys: Iterable[str]) -> dict[str, Observation]:
    """The observations the observing code asked for, and only those: which quantities a
    record holds is its decision, whatever an answer holds."""
    return {key: answer[key] for key in keys if key in answer}


def _graph_keys(nodes: dict[str, Any]) -> list[str]:
    return [f"{name}.{part}" for name in nodes for part in ("prev", "op")]


def _field(leaf: Any, field: str, x: float) -> Observation:
    if not hasattr(leaf, field):
        return "missing"
    value = getattr(leaf, field)
    if field in ("data", "grad") and not plain_number(value):
        return f"a {type(value).__name__[:MAX_TEXT]}, not a Python float: store float(...)"
    if field == "data":
        return "ok" if read_float(value) == x else "wrong value"
    if field == "grad":
        return "ok" if read_float(value) == 0.0 else "not 0.0 on a new leaf"
    if field == "_prev":
        try:
            return "ok" if len(parents_of(leaf)) == 0 else "not empty on a leaf"
        except Exception:
            return "not iterable"
    if field == "_op":
        return "ok" if isinstance(read_text(value), str) else "not a string"
    return "ok" if callable(value) else "not callable"


def _api_op(
    cls: type, make: Make, op: str, build: Build, values: tuple[float, float, float, float]
) -> dict[str, Observation]:
    x_value, y_value, c, k = values
    try:
        x, y = make(x_value), make(y_value)
        result = build(x, y, c, k)
        if not isinstance(result, cls):
            status = f"returned {type(result).__name__[:MAX_TEXT]}, not a graph node"
        elif not _reaches(cls, result, [x, y] if op in USES_Y else [x]):
            status = "result is not linked to its inputs"
        else:
            status = "ok"
        data = read_float(getattr(result, "data", None)) if isinstance(result, cls) else {wire.BAD: "no node"}
    except Exception as error:
        status = f"raised {type(error).__name__}: {error}"[:200]
        data = {wire.BAD: "raised"}
    return {f"op.{op}.status": status, f"op.{op}.data": data}


# --- the steps that touch engine objects (run where the engine lives: see ``ask``) ---------------


def _construct(make: Make, value: float) -> tuple[Any, Observation]:
    node = make(value)
    return node, read_float(node.data)


def _apply_op(op: str, args: Sequence[Any]) -> tuple[Any, Observation]:
    node = _apply(op, args)
    return node, read_float(node.data)


def _read(node: Any, field: str) -> Observation:
    return read_float(getattr(node, field))


def _read_each(nodes: Sequence[Any], field: str) -> tuple[list[Observation], Exception | None]:
    values: list[Observation] = []
    for node in nodes:
        try:
            values.append(read_float(getattr(node, field)))
        except Exception as error:  # what was read before it stands, as it would one read at a time
            return values, error
    return values, None


def _backward(node: Any) -> None:
    node.backward()


def _graph_of(items: tuple[tuple[str, Any], ...]) -> dict[str, Observation]:
    return _graph(dict(items))


def _trace_backwards(items: tuple[tuple[str, Any], ...]) -> list[str]:
    schedule: list[str] = []
    _wrap_backwards(dict(items), schedule)
    return schedule


def _schedule(schedule: list[str]) -> list[str]:
    return schedule[: MAX_PARENTS * 4]


def _try_make(make: Make, x: float) -> tuple[Any, str | None]:
    try:
        return make(x), None
    except Exception as error:
        return None, f"{type(error).__name__}: {error}"[:200]


def _has_backward(leaf: Any) -> bool:
    return callable(getattr(leaf, "backward", None))


def _api_step(cls: type, make: Make, op: str, values: tuple[float, float, float, float]) -> dict[str, Observation]:
    return _api_op(cls, make, op, API_OPERATIONS[op], values)


PRIMITIVES: dict[str, Callable[..., Any]] = {
    "construct": _construct,
    "read": _read,
    "read_each": _read_each,
    "apply": _apply_op,
    "backward": _backward,
    "graph": _graph_of,
    "trace_backwards": _trace_backwards,
    "schedule": _schedule,
    "try_make": _try_make,
    "field": _field,
    "has_backward": _has_backward,
    "api_op": _api_step,
}
