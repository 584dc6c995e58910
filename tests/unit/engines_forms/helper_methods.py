"""A ``_binary`` and a ``_unary`` helper build every node; each operation passes its local
derivatives in: as lambdas (binary operations, evaluated during the backward pass) or as a
number worked out when the node is made (unary ones). One static method accumulates."""

import math


class Value:
    def __init__(self, data, _children=(), _op=""):
        self.data = float(data)
        self.grad = 0.0
        self._prev = tuple(_children)
        self._op = _op
        self._backward = lambda: None

    @staticmethod
    def _acc(node, g):
        node.grad += g

    def _binary(self, other, op, forward, d_self, d_other):
        other = other if isinstance(other, Value) else Value(other)
        out = Value(forward(self.data, other.data), (self, other), op)

        def back():
            a, b = self.data, other.data
            Value._acc(self, d_self(a, b) * out.grad)
            Value._acc(other, d_other(a, b) * out.grad)

        out._backward = back
        return out

    def _unary(self, op, data, local):
        out = Value(data, (self,), op)
        out._backward = lambda: Value._acc(self, local * out.grad)
        return out

    def __add__(self, other):
        return self._binary(other, "+", lambda a, b: a + b, lambda a, b: 1.0, lambda a, b: 1.0)

    def __mul__(self, other):
        return self._binary(other, "*", lambda a, b: a * b, lambda a, b: b, lambda a, b: a)

    def __pow__(self, k):
        return self._unary(f"**{k}", self.data**k, k * self.data ** (k - 1))

    def relu(self):
        return self._unary("relu", max(self.data, 0.0), float(self.data > 0))

    def tanh(self):
        t = math.tanh(self.data)
        return self._unary("tanh", t, 1 - t * t)

    def exp(self):
        e = math.exp(self.data)
        return self._unary("exp", e, e)

    def log(self):
        return self._unary("log", math.log(self.data), 1 / self.data)

    def __neg__(self):
        return self * -1

    def __sub__(self, other):
        return self + (-other)

    def __truediv__(self, other):
        return self * other**-1

    def __radd__(self, other):
        return self + other

    def __rsub__(self, other):
        return -self + other

    def __rmul__(self, other):
        return self * other

    def __rtruediv__(self, other):
        return self**-1 * other

    def backward(self):
        order, seen = [], set()

        def visit(v):
            if id(v) in seen:
                return
            seen.add(id(v))
            for p in v._prev:
                visit(p)
            order.append(v)

        visit(self)
        self.grad = 1.0
        for v in reversed(order):
            v._backward()
