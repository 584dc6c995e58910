"""Forward values through ``operator.*``; local derivatives in tables keyed by the operation,
looked up by two helper methods (one for binary operations, one for unary ones) that build
the nodes and hold the only ``+=`` of the engine."""

import math
import operator

# op -> (d/d self, d/d other), each a function of (self.data, other.data)
_LOCAL = {
    "+": (lambda a, b: 1.0, lambda a, b: 1.0),
    "*": (lambda a, b: b, lambda a, b: a),
}

# op -> (forward, derivative as a function of (x, y) where y is the output)
_UNARY = {
    "relu": (lambda x: max(x, 0.0), lambda x, y: 1.0 if x > 0 else 0.0),
    "tanh": (math.tanh, lambda x, y: 1 - y * y),
    "exp": (math.exp, lambda x, y: y),
    "log": (math.log, lambda x, y: 1 / x),
}


class Value:
    def __init__(self, data, _children=(), _op=""):
        self.data = float(data)
        self.grad = 0.0
        self._prev = set(_children)
        self._op = _op
        self._backward = lambda: None

    def _binary(self, other, op, fn):
        other = other if isinstance(other, Value) else Value(other)
        out = Value(fn(self.data, other.data), (self, other), op)
        d_self, d_other = _LOCAL[op]

        def _backward():
            self.grad += d_self(self.data, other.data) * out.grad
            other.grad += d_other(self.data, other.data) * out.grad

        out._backward = _backward
        return out

    def _unary(self, op):
        fn, df = _UNARY[op]
        out = Value(fn(self.data), (self,), op)

        def _backward():
            self.grad += df(self.data, out.data) * out.grad

        out._backward = _backward
        return out

    def __add__(self, other):
        return self._binary(other, "+", operator.add)

    def __mul__(self, other):
        return self._binary(other, "*", operator.mul)

    def __pow__(self, k):
        out = Value(operator.pow(self.data, k), (self,), "**")

        def _backward():
            self.grad += operator.mul(k, operator.pow(self.data, k - 1)) * out.grad

        out._backward = _backward
        return out

    def relu(self):
        return self._unary("relu")

    def tanh(self):
        return self._unary("tanh")

    def exp(self):
        return self._unary("exp")

    def log(self):
        return self._unary("log")

    def __neg__(self):
        return operator.mul(self, -1)

    def __sub__(self, other):
        return operator.add(self, operator.neg(other))

    def __truediv__(self, other):
        return operator.mul(self, operator.pow(other, -1))

    def __radd__(self, other):
        return operator.add(self, other)

    def __rsub__(self, other):
        return operator.add(operator.neg(self), other)

    def __rmul__(self, other):
        return operator.mul(self, other)

    def __rtruediv__(self, other):
        return operator.mul(operator.pow(self, -1), other)

    def backward(self):
        topo, visited = [], set()
        stack = [(self, False)]
        while stack:
            node, done = stack.pop()
            if done:
                topo.append(node)
            elif node not in visited:
                visited.add(node)
                stack.append((node, True))
                stack.extend((p, False) for p in node._prev)
        self.grad = 1.0
        for node in reversed(topo):
            node._backward()
