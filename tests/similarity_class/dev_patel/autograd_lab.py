"""Scalar reverse-mode autodiff built on a tape (Wengert list).  -- Dev Patel
Every operation that creates a Value appends a TapeEntry to TAPE.  Entries are
recorded after their inputs exist, so the tape is already a topological order
and backward() just walks it from the end to the start.
"""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from typing import Callable, List, NamedTuple, Optional, Sequence, Tuple, Union

Number = Union[int, float]
Operand = Union["Value", int, float]
Pullback = Callable[[float], Tuple[float, ...]]
Fn = Callable[[List["Value"]], "Value"]


class TapeEntry(NamedTuple):
    out: "Value"
    inputs: Tuple["Value", ...]
    pullback: Pullback  # d(loss)/d(out) -> contribution for each input


TAPE: List[TapeEntry] = []


def _accumulate(node: Value, amount: float) -> None:
    node.grad += amount


def _coerce(x: Operand) -> Value:
    return x if isinstance(x, Value) else Value(x)


def _record(data: float, inputs: Tuple[Value, ...], op: str, pullback: Pullback) -> Value:
    out = Value(data, inputs, op)
    TAPE.append(TapeEntry(out, inputs, pullback))
    return out


class Value:
    def __init__(self, data: Number, _prev: Tuple[Value, ...] = (), _op: str = "") -> None:
        self.data: float = float(data)
        self.grad: float = 0.0
        self._prev: Tuple[Value, ...] = _prev
        self._op: str = _op

    def __add__(self, other: Operand) -> Value:
        o = _coerce(other)
        return _record(self.data + o.data, (self, o), "+", lambda g: (g, g))

    def __mul__(self, other: Operand) -> Value:
        o = _coerce(other)
        x, y = self.data, o.data
        return _record(x * y, (self, o), "*", lambda g: (g * y, g * x))

    def __pow__(self, k: Number) -> Value:
        if not isinstance(k, (int, float)):
            raise TypeError("Value ** only supports int/float exponents")
        x = self.data
        return _record(x ** k, (self,), f"**{k}", lambda g: (g * k * x ** (k - 1),))

    def __neg__(self) -> Value:
        return _record(-self.data, (self,), "neg", lambda g: (-g,))

    def __sub__(self, other: Operand) -> Value:
        return self + (-_coerce(other))

    def __truediv__(self, other: Operand) -> Value:
        return self * _coerce(other) ** -1

    __radd__ = __add__  # addition and multiplication commute
    __rmul__ = __mul__

    def __rsub__(self, other: Number) -> Value:
        return _coerce(other) + (-self)

    def __rtruediv__(self, other: Number) -> Value:
        return _coerce(other) * self ** -1

    def relu(self) -> Value:
        x = self.data
        return _record(max(x, 0.0), (self,), "relu", lambda g: (g if x > 0 else 0.0,))

    def tanh(self) -> Value:
        t = math.tanh(self.data)
        return _record(t, (self,), "tanh", lambda g: (g * (1.0 - t * t),))

    def exp(self) -> Value:
        e = math.exp(self.data)
        return _record(e, (self,), "exp", lambda g: (g * e,))

    def log(self) -> Value:
        x = self.data
        return _record(math.log(x), (self,), "log", lambda g: (g / x,))

    def backward(self) -> None:
        self.grad = 1.0  # replay the tape backwards, only entries self depends on
        live = {self}
        for entry in reversed(TAPE):
            if entry.out not in live:
                continue
            for node, contribution in zip(entry.inputs, entry.pullback(entry.out.grad)):
                _accumulate(node, contribution)
                live.add(node)


# ----------------------------------------------------------------- checks

def numerical_gradient(f: Fn, point: Sequence[float], h: float = 1e-6) -> List[float]:
    """Centered finite difference in every coordinate of `point`."""
    grads: List[float] = []
    for i in range(len(point)):
        up, down = list(point), list(point)
        up[i], down[i] = up[i] + h, down[i] - h
        f_up, f_down = f([Value(v) for v in up]).data, f([Value(v) for v in down]).data
        grads.append((f_up - f_down) / (2.0 * h))
    return grads


def _near(got: float, want: float, tol: float) -> bool:
    return abs(got - want) <= tol * max(1.0, abs(want))


@dataclass
class GradCase:
    name: str
    fn: Fn
    point: List[float]
    expected_out: Optional[float] = None
    expected_grads: List[float] = field(default_factory=list)
    tol: float = 1e-9

    def run(self) -> Tuple[bool, str]:
        TAPE.clear()
        xs = [Value(v) for v in self.point]
        out = self.fn(xs)
        out.backward()
        problems: List[str] = []  # stays empty when everything matches
        if self.expected_out is not None and not _near(out.data, self.expected_out, self.tol):
            problems.append(f"out={out.data} != {self.expected_out}")
        for i, (x, want) in enumerate(zip(xs, self.expected_grads)):
            if not _near(x.grad, want, self.tol):
                problems.append(f"grad[{i}]={x.grad:.8g} != {want:.8g}")
        return not problems, "; ".join(problems)


def neuron(p: List[Value]) -> Value:
    w1, w2, b = p
    return 0.5 * ((w1 * 1.0 + w2 * 2.0 + b).relu() - 1) ** 2


FD_FUNCTIONS: dict[str, Tuple[Fn, List[float]]] = {
    "mul+add":  (lambda v: v[0] * v[1] + v[0], [1.5, -0.8]),
    "div":      (lambda v: v[0] / v[1], [2.0, 0.7]),
    "pow":      (lambda v: v[0] ** 3 - v[1] ** 1.5, [1.1, 2.2]),
    "tanh+exp": (lambda v: (v[0] * v[1]).tanh() + (v[0] - v[1]).exp(), [0.3, 0.9]),
    "log":      (lambda v: (v[0] * v[0] + v[1]).log(), [1.2, 0.5]),
    "relu":     (lambda v: (v[0] - v[1]).relu() * v[0], [2.0, 0.5]),
    "reflect":  (lambda v: 2 - v[0] + 3 * v[1] + 2 / v[0] + 1 / (1 + v[1]), [1.3, 0.4]),
}


def build_cases() -> List[GradCase]:
    cases = [
        GradCase("worked graph", lambda v: (v[0] * v[1] + v[2]) * v[3].relu(),
                 [2.0, 3.0, 1.0, 1.5], 10.5, [4.5, 3.0, 1.5, 7.0]),
        GradCase("neuron", neuron, [0.5, 0.3, 0.1], 0.02, [0.2, 0.4, 0.2]),
        GradCase("reuse x*x+x", lambda v: v[0] * v[0] + v[0], [3.0], 12.0, [7.0]),
    ]
    cases += [GradCase(f"finite diff: {name}", fn, pt, None, numerical_gradient(fn, pt), 1e-5)
              for name, (fn, pt) in FD_FUNCTIONS.items()]
    return cases


def run_cases(cases: List[GradCase]) -> int:
    failed = 0
    for case in cases:
        ok, msg = case.run()
        print(f"{'PASS' if ok else 'FAIL'}  {case.name}" + ("" if ok else f"  ({msg})"))
        failed += not ok
    return failed


def check_gradient_step(lr: float = 0.1) -> bool:
    TAPE.clear()
    params = [Value(p) for p in (0.5, 0.3, 0.1)]
    loss = neuron(params)
    loss.backward()
    after = neuron([Value(p.data - lr * p.grad) for p in params]).data
    ok = after < loss.data
    print(f"{'PASS' if ok else 'FAIL'}  gradient step: {loss.data:.4f} -> {after:.4f}")
    return ok


def check_bug_injection(cases: List[GradCase]) -> bool:
    global _accumulate
    original = _accumulate
    def overwrite(node: Value, amount: float) -> None:
        node.grad = amount  # injected bug: '=' instead of '+='
    _accumulate = overwrite
    try:
        caught = [c.name for c in cases if not c.run()[0]]
    finally:
        _accumulate = original
    restored = all(c.run()[0] for c in cases)
    print(f"{'PASS' if caught and restored else 'FAIL'}  bug injection caught by: {caught}")
    return bool(caught) and restored


def main() -> int:
    cases = build_cases()
    failed = run_cases(cases) + (not check_gradient_step()) + (not check_bug_injection(cases))
    print(f"\n{failed} failure(s)")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
