"""A dataclass Value; backward() gives every node its depth (longest path from a leaf) and
processes nodes from the deepest down, which is a valid reverse topological order."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable


@dataclass(eq=False)
class Value:
    data: float
    _prev: tuple = ()
    _op: str = ""
    grad: float = 0.0
    _backward: Callable[[], None] = field(default=lambda: None, repr=False)

    def _binary(self, other, value, op):
        other = other if isinstance(other, Value) else Value(float(other))
        return other, Value(value(other), (self, other), op)

    def __add__(self, other):
        other, res = self._binary(other, lambda o: self.data + o.data, "+")

        def rule():
            self.grad += res.grad
            other.grad += res.grad

        res._backward = rule
        return res

    def __mul__(self, other):
        other, res = self._binary(other, lambda o: self.data * o.data, "*")

        def rule():
            self.grad += res.grad * other.data
            other.grad += res.grad * self.data

        res._backward = rule
        return res

    def __pow__(self, k: float) -> Value:
        res = Value(self.data ** k, (self,), "pow")

        def rule():
            self.grad += res.grad * k * self.data ** (k - 1)

        res._backward = rule
        return res

    def relu(self) -> Value:
        res = Value(self.data if self.data > 0 else 0.0, (self,), "relu")

        def rule():
            self.grad += res.grad if self.data > 0 else 0.0

        res._backward = rule
        return res

    def tanh(self) -> Value:
        res = Value(math.tanh(self.data), (self,), "tanh")

        def rule():
            self.grad += res.grad * (1 - res.data ** 2)

        res._backward = rule
        return res

    __radd__ = __add__
    __rmul__ = __mul__

    def __neg__(self) -> Value:
        return -1 * self

    def __sub__(self, other) -> Value:
        return self + (-1) * other

    def __rsub__(self, other) -> Value:
        return (-1) * self + other

    def __truediv__(self, other) -> Value:
        divisor = other if isinstance(other, Value) else Value(float(other))
        return self * divisor ** -1

    def __rtruediv__(self, other) -> Value:
        return other * self ** -1

    def backward(self) -> None:
        depth: dict[int, int] = {}
        nodes: dict[int, Value] = {}

        def measure(v: Value) -> int:
            if id(v) not in depth:
                nodes[id(v)] = v
                depth[id(v)] = 1 + max((measure(p) for p in v._prev), default=0)
            return depth[id(v)]

        measure(self)
        self.grad = 1.0
        for key in sorted(depth, key=depth.get, reverse=True):
            nodes[key]._backward()
