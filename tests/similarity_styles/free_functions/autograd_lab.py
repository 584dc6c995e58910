"""Ops are plain functions of two nodes that return the result and a list of (parent, local
gradient) edges; Value's operators only call them. backward() walks the graph with a generator."""
import math


class Value:
    def __init__(self, data, edges=(), op=""):
        self.data = data
        self.grad = 0.0
        self.edges = list(edges)
        self._prev = {parent for parent, _ in self.edges}
        self._op = op

    def __add__(self, other):
        return plus(self, lift(other))

    def __radd__(self, other):
        return plus(lift(other), self)

    def __mul__(self, other):
        return times(self, lift(other))

    def __rmul__(self, other):
        return times(lift(other), self)

    def __pow__(self, exponent):
        return power(self, exponent)

    def __neg__(self):
        return times(self, lift(-1.0))

    def __sub__(self, other):
        return plus(self, -lift(other))

    def __rsub__(self, other):
        return plus(lift(other), -self)

    def __truediv__(self, other):
        return times(self, power(lift(other), -1))

    def __rtruediv__(self, other):
        return times(lift(other), power(self, -1))

    def relu(self):
        return rectify(self)

    def tanh(self):
        return squash(self)

    def backward(self):
        self.grad = 1.0
        for node in reverse_topological(self):
            for parent, local in node.edges:
                parent.grad += local * node.grad


def lift(x):
    return x if isinstance(x, Value) else Value(x)


def plus(a, b):
    return Value(a.data + b.data, [(a, 1.0), (b, 1.0)], "+")


def times(a, b):
    return Value(a.data * b.data, [(a, b.data), (b, a.data)], "*")


def power(a, n):
    return Value(a.data ** n, [(a, n * a.data ** (n - 1))], f"**{n}")


def rectify(a):
    positive = a.data > 0
    return Value(a.data if positive else 0.0, [(a, 1.0 if positive else 0.0)], "relu")


def squash(a):
    t = math.tanh(a.data)
    return Value(t, [(a, 1 - t * t)], "tanh")


def reverse_topological(root):
    seen = set()

    def post(node):
        if id(node) in seen:
            return
        seen.add(id(node))
        for parent, _ in node.edges:
            yield from post(parent)
        yield node

    return list(post(root))[::-1]
