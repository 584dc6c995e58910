"""A correct engine that records each node's local derivatives when it is built.

Every node keeps its parents as an ordered tuple of edges with one local derivative per edge
(so ``a + a`` has two edges to ``a``); ``backward()`` orders the nodes with Kahn's algorithm.
"""

import collections
import math


class Value:
    """One scalar node: its value, its gradient, and the local derivative along each edge."""

    def __init__(self, data, _children=(), _op=""):
        self.data = float(data)
        self.grad = 0.0
        self._edges = tuple(_children)
        self._locals = ()
        self._prev = set(self._edges)
        self._op = _op
        self._backward = self._push_to_parents

    def __repr__(self):
        label = f", op={self._op!r}" if self._op else ""
        return f"Value(data={self.data:.6g}, grad={self.grad:.6g}{label})"

    def _push_to_parents(self):
        # One term per edge: a parent reached twice is credited twice.
        for parent, local in zip(self._edges, self._locals, strict=False):
            parent.grad += local * self.grad

    @staticmethod
    def _as_value(x):
        if isinstance(x, Value):
            return x
        return Value(x)

    @staticmethod
    def _node(data, parents, op, locals_):
        out = Value(data, parents, op)
        out._locals = locals_
        return out

    # --- primitive operations: value and local derivatives, both at build time ---------

    def __add__(self, other):
        other = Value._as_value(other)
        return Value._node(self.data + other.data, (self, other), "+", (1.0, 1.0))

    def __mul__(self, other):
        other = Value._as_value(other)
        return Value._node(self.data * other.data, (self, other), "*", (other.data, self.data))

    def __pow__(self, exponent):
        if isinstance(exponent, bool) or not isinstance(exponent, (int, float)):
            raise TypeError("only int or float exponents are supported")
        slope = exponent * self.data ** (exponent - 1)
        return Value._node(self.data**exponent, (self,), f"**{exponent}", (slope,))

    def tanh(self):
        t = math.tanh(self.data)
        return Value._node(t, (self,), "tanh", (1.0 - t * t,))

    def relu(self):
        positive = self.data > 0
        data = self.data if positive else 0.0
        return Value._node(data, (self,), "relu", (1.0 if positive else 0.0,))

    def exp(self):
        e = math.exp(self.data)
        return Value._node(e, (self,), "exp", (e,))

    def log(self):
        return Value._node(math.log(self.data), (self,), "log", (1.0 / self.data,))

    # --- derived operations, composed as the handout composes them ---------------------

    def __neg__(self):
        return self * -1.0

    def __sub__(self, other):
        return self + (-Value._as_value(other))

    def __truediv__(self, other):
        return self * Value._as_value(other) ** -1.0

    def __radd__(self, other):
        return self + other

    def __rmul__(self, other):
        return self * other

    def __rsub__(self, other):
        return Value(other) + (-self)

    def __rtruediv__(self, other):
        return Value(other) * self**-1.0

    # --- reverse sweep: Kahn's algorithm over consumer counts --------------------------

    def backward(self):
        """Seed 1 at this node; a node runs once every edge from its consumers has fired."""
        waiting = {self: 0}
        todo = [self]
        while todo:
            node = todo.pop()
            for parent in node._edges:
                if parent not in waiting:
                    waiting[parent] = 0
                    todo.append(parent)
                waiting[parent] += 1
        self.grad = 1.0
        ready = collections.deque([self])
        while ready:
            node = ready.popleft()
            node._backward()
            for parent in node._edges:
                waiting[parent] -= 1
                if waiting[parent] == 0:
                    ready.append(parent)
