"""Backward rules as module-level functions.

The operations install them through a lambda, ``functools.partial`` or a function object;
tanh, exp, log and relu share one rule and pass their local derivative at the call site; the
topological sort is a module-level function too.
"""

import math
from functools import partial


def _add_backward(a, b, out):
    a.grad += out.grad
    b.grad += out.grad


def _mul_backward(a, b, out):
    a.grad += b.data * out.grad
    b.grad += a.data * out.grad


def _pow_backward(base, k, out):
    base.grad += k * base.data ** (k - 1) * out.grad


def _chain(x, out, local):
    x.grad += local * out.grad


def _topo(root):
    order, seen = [], set()

    def visit(v):
        if v not in seen:
            seen.add(v)
            for child in v._prev:
                visit(child)
            order.append(v)

    visit(root)
    return order


class Value:
    def __init__(self, data, _children=(), _op=""):
        self.data = float(data)
        self.grad = 0.0
        self._prev = set(_children)
        self._op = _op
        self._backward = lambda: None

    def __add__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        out = Value(self.data + other.data, (self, other), "+")
        out._backward = lambda: _add_backward(self, other, out)
        return out

    def __mul__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        out = Value(self.data * other.data, (self, other), "*")
        out._backward = partial(_mul_backward, self, other, out)
        return out

    def __pow__(self, k):
        out = Value(self.data**k, (self,), f"**{k}")
        out._backward = partial(_pow_backward, self, k, out)
        return out

    def relu(self):
        out = Value(max(self.data, 0.0), (self,), "relu")
        out._backward = lambda: _chain(self, out, 1.0 if self.data > 0 else 0.0)
        return out

    def tanh(self):
        t = math.tanh(self.data)
        out = Value(t, (self,), "tanh")
        out._backward = lambda: _chain(self, out, 1 - t**2)
        return out

    def exp(self):
        out = Value(math.exp(self.data), (self,), "exp")
        out._backward = lambda: _chain(self, out, out.data)
        return out

    def log(self):
        out = Value(math.log(self.data), (self,), "log")
        out._backward = lambda: _chain(self, out, 1 / self.data)
        return out

    def __neg__(self):
        return self * -1

    def __sub__(self, other):
        return self + (-other)

    def __truediv__(self, other):
        return self * other**-1

    def __radd__(self, other):
        return self + other

    def __rsub__(self, other):
        return other + (-self)

    def __rmul__(self, other):
        return self * other

    def __rtruediv__(self, other):
        return other * self**-1

    def backward(self):
        order = _topo(self)
        self.grad = 1.0
        for v in reversed(order):
            v._backward()


if __name__ == "__main__":
    x = Value(3.0)
    y = x * x + x
    y.backward()
    assert x.grad == 7.0, x.grad
