"""A correct engine whose backward rules live in one table keyed by the kind of operation.

Every node is stamped with an increasing creation number; parents always exist before their
children, so ``backward()`` sweeps the reachable nodes in decreasing creation order.
"""

import itertools
import math


class Value:
    """One scalar node: a creation stamp, its ordered operands and the kind of rule to apply."""

    _stamps = itertools.count()

    # kind -> (node, upstream gradient) -> the gradient owed to each operand, in order
    _RULES = {
        "leaf": lambda node, g: (),
        "add": lambda node, g: (g, g),
        "mul": lambda node, g: (node._args[1].data * g, node._args[0].data * g),
        "pow": lambda node, g: (node._power * node._args[0].data ** (node._power - 1) * g,),
        "tanh": lambda node, g: ((1.0 - node.data * node.data) * g,),
        "relu": lambda node, g: ((1.0 if node._args[0].data > 0 else 0.0) * g,),
        "exp": lambda node, g: (node.data * g,),
        "log": lambda node, g: (g / node._args[0].data,),
    }

    def __init__(self, data, _children=(), _op=""):
        self.data = float(data)
        self.grad = 0.0
        self._args = tuple(_children)
        self._prev = set(self._args)
        self._op = _op
        self._kind = "leaf"
        self._power = None
        self._stamp = next(Value._stamps)
        node = self

        def _backward():
            owed = Value._RULES[node._kind](node, node.grad)
            for operand, amount in zip(node._args, owed, strict=False):
                operand.grad += amount

        self._backward = _backward

    def __repr__(self):
        label = f", op={self._op!r}" if self._op else ""
        return f"Value(data={self.data:.6g}, grad={self.grad:.6g}{label})"

    @staticmethod
    def _coerce(x):
        return x if isinstance(x, Value) else Value(x)

    @staticmethod
    def _make(data, operands, op, kind):
        out = Value(data, operands, op)
        out._kind = kind
        return out

    # --- primitive operations: forward value and a rule kind -----------------------------

    def __add__(self, other):
        other = Value._coerce(other)
        return Value._make(self.data + other.data, (self, other), "+", "add")

    def __mul__(self, other):
        other = Value._coerce(other)
        return Value._make(self.data * other.data, (self, other), "*", "mul")

    def __pow__(self, exponent):
        if isinstance(exponent, bool) or not isinstance(exponent, (int, float)):
            raise TypeError("only int or float exponents are supported")
        out = Value._make(self.data**exponent, (self,), f"**{exponent}", "pow")
        out._power = exponent
        return out

    def tanh(self):
        return Value._make(math.tanh(self.data), (self,), "tanh", "tanh")

    def relu(self):
        return Value._make(self.data if self.data > 0 else 0.0, (self,), "relu", "relu")

    def exp(self):
        return Value._make(math.exp(self.data), (self,), "exp", "exp")

    def log(self):
        return Value._make(math.log(self.data), (self,), "log", "log")

    # --- derived operations, composed as the handout composes them ----------------------

    def __neg__(self):
        return self * -1.0

    def __sub__(self, other):
        return self + (-Value._coerce(other))

    def __truediv__(self, other):
        return self * Value._coerce(other) ** -1.0

    def __radd__(self, other):
        return self + other

    def __rmul__(self, other):
        return self * other

    def __rsub__(self, other):
        return Value(other) + (-self)

    def __rtruediv__(self, other):
        return Value(other) * self**-1.0

    # --- reverse sweep: newest node first ----------------------------------------------

    def backward(self):
        """Gather every node this one depends on, then run their rules from newest to oldest."""
        reached = {self}
        frontier = [self]
        while frontier:
            for parent in frontier.pop()._prev:
                if parent not in reached:
                    reached.add(parent)
                    frontier.append(parent)
        self.grad = 1.0
        for node in sorted(reached, key=lambda n: n._stamp, reverse=True):
            node._backward()
