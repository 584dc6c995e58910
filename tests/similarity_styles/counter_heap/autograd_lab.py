"""Every Value takes a serial number from a global counter when it is made, so a node is always
newer than its inputs; backward() pops reachable nodes from a max-heap by serial number."""
import heapq
import itertools
import math

_serial = itertools.count()


class Value:
    def __init__(self, data, _children=(), _op="", _rule=None):
        self.data = data
        self.grad = 0.0
        self._prev = frozenset(_children)
        self._op = _op
        self._args = _children
        self._rule = _rule
        self.serial = next(_serial)

    def _backward(self):
        if self._rule:
            for node, g in zip(self._args, self._rule(self)):
                node.grad += g

    def backward(self):
        self.grad = 1.0
        heap = [(-self.serial, self)]
        queued = {self.serial}
        while heap:
            _, node = heapq.heappop(heap)
            node._backward()
            for child in node._prev:
                if child.serial not in queued:
                    queued.add(child.serial)
                    heapq.heappush(heap, (-child.serial, child))

    def __lt__(self, other):
        return self.serial < other.serial


def value_of(x):
    return x if isinstance(x, Value) else Value(x)


def add_rule(out):
    return out.grad, out.grad


def mul_rule(out):
    left, right = out._args
    return right.data * out.grad, left.data * out.grad


def relu_rule(out):
    return (out.grad * (out._args[0].data > 0),)


def tanh_rule(out):
    return (out.grad * (1 - out.data ** 2),)


def make_pow_rule(k):
    return lambda out: (out.grad * k * out._args[0].data ** (k - 1),)


def _add(self, other):
    other = value_of(other)
    return Value(self.data + other.data, (self, other), "+", add_rule)


def _mul(self, other):
    other = value_of(other)
    return Value(self.data * other.data, (self, other), "*", mul_rule)


Value.__add__ = _add
Value.__mul__ = _mul
Value.__radd__ = _add
Value.__rmul__ = _mul
Value.__pow__ = lambda self, k: Value(self.data ** k, (self,), "**", make_pow_rule(k))
Value.relu = lambda self: Value(max(self.data, 0), (self,), "relu", relu_rule)
Value.tanh = lambda self: Value(math.tanh(self.data), (self,), "tanh", tanh_rule)
Value.__neg__ = lambda self: self * -1
Value.__sub__ = lambda self, other: self + value_of(other) * -1
Value.__rsub__ = lambda self, other: value_of(other) + self * -1
Value.__truediv__ = lambda self, other: self * value_of(other) ** -1
Value.__rtruediv__ = lambda self, other: value_of(other) * self ** -1
