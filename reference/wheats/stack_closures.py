"""A correct engine with one backward closure per node, ordered by an explicit two-stack walk.

``backward()`` keeps a stack of nodes on the current path and a parallel stack of iterators
over their parents, emitting each node once all its parents are emitted (a post-order).
"""

import math


class Value:
    """One scalar node; its ``_backward`` closure reads the operands when it runs."""

    def __init__(self, data, _children=(), _op=""):
        self.data = float(data)
        self.grad = 0.0
        self._prev = set(_children)
        self._op = _op
        self._backward = Value._nothing

    @staticmethod
    def _nothing():
        return None

    def __repr__(self):
        label = f", op={self._op!r}" if self._op else ""
        return f"Value(data={self.data:.6g}, grad={self.grad:.6g}{label})"

    @staticmethod
    def _wrap(x):
        return x if isinstance(x, Value) else Value(x)

    # --- primitive operations -----------------------------------------------------------

    def __add__(self, other):
        left, right = self, Value._wrap(other)
        out = Value(left.data + right.data, (left, right), "+")

        def _backward():
            g = out.grad
            left.grad += g
            right.grad += g

        out._backward = _backward
        return out

    def __mul__(self, other):
        left, right = self, Value._wrap(other)
        out = Value(left.data * right.data, (left, right), "*")

        def _backward():
            g = out.grad
            left.grad += right.data * g
            right.grad += left.data * g

        out._backward = _backward
        return out

    def __pow__(self, exponent):
        if isinstance(exponent, bool) or not isinstance(exponent, (int, float)):
            raise TypeError("only int or float exponents are supported")
        base = self
        out = Value(base.data**exponent, (base,), f"**{exponent}")

        def _backward():
            base.grad += exponent * base.data ** (exponent - 1) * out.grad

        out._backward = _backward
        return out

    def tanh(self):
        x = self
        out = Value(math.tanh(x.data), (x,), "tanh")

        def _backward():
            x.grad += (1.0 - out.data * out.data) * out.grad

        out._backward = _backward
        return out

    def relu(self):
        x = self
        out = Value(x.data if x.data > 0 else 0.0, (x,), "relu")

        def _backward():
            x.grad += (1.0 if x.data > 0 else 0.0) * out.grad

        out._backward = _backward
        return out

    def exp(self):
        x = self
        out = Value(math.exp(x.data), (x,), "exp")

        def _backward():
            x.grad += out.data * out.grad

        out._backward = _backward
        return out

    def log(self):
        x = self
        out = Value(math.log(x.data), (x,), "log")

        def _backward():
            x.grad += out.grad / x.data

        out._backward = _backward
        return out

    # --- derived operations, built from the primitives as the handout builds them ------

    def __neg__(self):
        return self * -1.0

    def __sub__(self, other):
        return self + (-Value._wrap(other))

    def __truediv__(self, other):
        return self * Value._wrap(other) ** -1.0

    def __radd__(self, other):
        return self + other

    def __rmul__(self, other):
        return self * other

    def __rsub__(self, other):
        return Value(other) + (-self)

    def __rtruediv__(self, other):
        return Value(other) * self**-1.0

    # --- reverse sweep ------------------------------------------------------------------

    def backward(self):
        """Post-order with a path stack and a stack of parent iterators; then run it reversed."""
        order = []
        visited = {self}
        path = [self]
        parents_left = [iter(self._prev)]
        while path:
            for parent in parents_left[-1]:
                if parent not in visited:
                    visited.add(parent)
                    path.append(parent)
                    parents_left.append(iter(parent._prev))
                    break
            else:
                parents_left.pop()
                order.append(path.pop())
        self.grad = 1.0
        for node in reversed(order):
            node._backward()
