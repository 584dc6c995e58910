"""Scalar autograd where each node stores its local derivatives at forward time, and backward
runs Kahn's algorithm over consumer counts (a node is processed once all its consumers are)."""
from collections import deque
import math


class Value:
    def __init__(self, data, parents=(), local=(), op=""):
        self.data = float(data)
        self.grad = 0.0
        self._prev = tuple(parents)
        self._local = tuple(local)  # d(self)/d(parent), same order as _prev
        self._op = op

    def _lift(x):
        return x if isinstance(x, Value) else Value(x)

    def __add__(self, other):
        other = Value._lift(other)
        return Value(self.data + other.data, (self, other), (1.0, 1.0), "+")

    def __mul__(self, other):
        other = Value._lift(other)
        return Value(self.data * other.data, (self, other), (other.data, self.data), "*")

    def __pow__(self, p):
        return Value(self.data ** p, (self,), (p * self.data ** (p - 1),), "^")

    def relu(self):
        on = self.data > 0
        return Value(self.data if on else 0.0, (self,), (1.0 if on else 0.0,), "relu")

    def tanh(self):
        y = math.tanh(self.data)
        return Value(y, (self,), (1.0 - y ** 2,), "tanh")

    def exp(self):
        y = math.exp(self.data)
        return Value(y, (self,), (y,), "exp")

    def __neg__(self): return self * -1.0
    def __radd__(self, other): return self + other
    def __rmul__(self, other): return self * other
    def __sub__(self, other): return self + (-Value._lift(other))
    def __rsub__(self, other): return Value._lift(other) + (-self)
    def __truediv__(self, other): return self * Value._lift(other) ** -1
    def __rtruediv__(self, other): return Value._lift(other) * self ** -1

    def backward(self):
        # count, for every reachable node, how many edges lead out of it towards self
        pending = {}
        frontier = [self]
        seen = {id(self)}
        while frontier:
            node = frontier.pop()
            for p in node._prev:
                pending[id(p)] = pending.get(id(p), 0) + 1
                if id(p) not in seen:
                    seen.add(id(p))
                    frontier.append(p)
        self.grad = 1.0
        ready = deque([self])
        while ready:
            node = ready.popleft()
            for p, d in zip(node._prev, node._local):
                p.grad += d * node.grad
                pending[id(p)] -= 1
                if pending[id(p)] == 0:
                    ready.append(p)
