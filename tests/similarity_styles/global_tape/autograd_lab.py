"""Tape-based reverse mode: every new Value is appended to a tape as it is created, so the tape
is already in topological order and backward() just replays it from the end."""
import math

TAPE = []


class Value:
    def __init__(self, data, _children=(), _op="", _pullback=None):
        self.data = data
        self.grad = 0.0
        self._prev = set(_children)
        self._op = _op
        self._pullback = _pullback  # gradient of output -> gradients of inputs
        self._inputs = tuple(_children)
        TAPE.append(self)

    def _backward(self):
        if self._pullback is None:
            return
        for node, contribution in zip(self._inputs, self._pullback(self.grad)):
            node.grad += contribution

    def backward(self):
        position = len(TAPE) - 1
        while TAPE[position] is not self:
            position -= 1
        self.grad = 1.0
        for node in reversed(TAPE[: position + 1]):
            node._backward()

    @staticmethod
    def clear_tape():
        TAPE.clear()


def _v(x):
    return x if isinstance(x, Value) else Value(x)


def _add(a, b):
    a, b = _v(a), _v(b)
    return Value(a.data + b.data, (a, b), "+", lambda g: (g, g))


def _mul(a, b):
    a, b = _v(a), _v(b)
    return Value(a.data * b.data, (a, b), "*", lambda g: (g * b.data, g * a.data))


def _power(a, e):
    return Value(a.data ** e, (a,), "pow", lambda g: (g * e * a.data ** (e - 1),))


def _relu(a):
    return Value(a.data * (a.data > 0), (a,), "relu", lambda g: (g * (a.data > 0),))


def _tanh(a):
    out = math.tanh(a.data)
    return Value(out, (a,), "tanh", lambda g: (g * (1 - out ** 2),))


Value.__add__ = _add
Value.__radd__ = lambda self, other: _add(other, self)
Value.__mul__ = _mul
Value.__rmul__ = lambda self, other: _mul(other, self)
Value.__pow__ = _power
Value.relu = _relu
Value.tanh = _tanh
Value.__neg__ = lambda self: _mul(self, -1)
Value.__sub__ = lambda self, other: _add(self, _mul(other, -1))
Value.__rsub__ = lambda self, other: _add(other, _mul(self, -1))
Value.__truediv__ = lambda self, other: _mul(self, _power(_v(other), -1))
Value.__rtruediv__ = lambda self, other: _mul(other, _power(self, -1))
