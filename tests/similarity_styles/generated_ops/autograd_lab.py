"""The operators are generated: a spec lists each op's arity, forward and local derivative,
and a loop installs the dunder methods on Value with setattr."""
import math
import operator


class Value:
    def __init__(self, data, _children=(), _op="", _locals=()):
        self.data = data
        self.grad = 0.0
        self._prev = _children
        self._op = _op
        self._locals = _locals

    def backward(self):
        topo = []
        state = set()
        todo = [iter([self])]
        path = []
        while todo:
            for node in todo[-1]:
                if id(node) not in state:
                    state.add(id(node))
                    path.append(node)
                    todo.append(iter(node._prev))
                    break
            else:
                todo.pop()
                if path:
                    topo.append(path.pop())
        self.grad = 1.0
        for node in reversed(topo):
            for child, local in zip(node._prev, node._locals):
                child.grad += local * node.grad


def _const(x):
    return x if isinstance(x, Value) else Value(x)


BINARY = [
    ("add", operator.add, lambda a, b: (1.0, 1.0)),
    ("mul", operator.mul, lambda a, b: (b, a)),
]
UNARY = [
    ("relu", lambda a: max(a, 0.0), lambda a, y: 1.0 if a > 0 else 0.0),
    ("tanh", math.tanh, lambda a, y: 1 - y * y),
    ("exp", math.exp, lambda a, y: y),
]


def _install_binary(name, fwd, dfn):
    def method(self, other):
        other = _const(other)
        return Value(fwd(self.data, other.data), (self, other), name, dfn(self.data, other.data))

    def reflected(self, other):
        return method(_const(other), self)

    setattr(Value, f"__{name}__", method)
    setattr(Value, f"__r{name}__", reflected)


def _install_unary(name, fwd, dfn):
    def method(self):
        y = fwd(self.data)
        return Value(y, (self,), name, (dfn(self.data, y),))

    setattr(Value, name, method)


for spec in BINARY:
    _install_binary(*spec)
for spec in UNARY:
    _install_unary(*spec)


def _pow(self, k):
    return Value(self.data ** k, (self,), "pow", (k * self.data ** (k - 1),))


Value.__pow__ = _pow
Value.__neg__ = lambda self: self * -1
Value.__sub__ = lambda self, other: self + (-_const(other))
Value.__rsub__ = lambda self, other: _const(other) + (-self)
Value.__truediv__ = lambda self, other: self * _const(other) ** -1
Value.__rtruediv__ = lambda self, other: _const(other) * self ** -1
