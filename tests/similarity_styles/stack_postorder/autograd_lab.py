"""Value nodes built by one factory; backward() sorts the graph with an explicit stack
(iterative post-order), so deep graphs do not hit the recursion limit."""
import math


def _as_value(x):
    return x if isinstance(x, Value) else Value(x)


class Value:
    __slots__ = ("data", "grad", "_prev", "_op", "_backward")

    def __init__(self, data, _prev=(), _op=""):
        self.data = data
        self.grad = 0.0
        self._prev = _prev
        self._op = _op
        self._backward = None

    @classmethod
    def _make(cls, data, parents, op, rule):
        node = cls(data, tuple(parents), op)

        def apply():
            for parent, g in zip(parents, rule(node.grad)):
                parent.grad += g

        node._backward = apply
        return node

    def __add__(self, o):
        o = _as_value(o)
        return Value._make(self.data + o.data, (self, o), "+", lambda g: (g, g))

    def __mul__(self, o):
        o = _as_value(o)
        return Value._make(self.data * o.data, (self, o), "*", lambda g: (o.data * g, self.data * g))

    def __pow__(self, k):
        return Value._make(self.data ** k, (self,), "**", lambda g: (k * self.data ** (k - 1) * g,))

    def relu(self):
        return Value._make(max(self.data, 0.0), (self,), "relu", lambda g: (g if self.data > 0 else 0.0,))

    def tanh(self):
        t = math.tanh(self.data)
        return Value._make(t, (self,), "tanh", lambda g: ((1 - t * t) * g,))

    def log(self):
        return Value._make(math.log(self.data), (self,), "log", lambda g: (g / self.data,))

    def __radd__(self, o):
        return self + o

    def __rmul__(self, o):
        return self * o

    def __neg__(self):
        return self * -1

    def __sub__(self, o):
        return self + (-_as_value(o))

    def __rsub__(self, o):
        return _as_value(o) - self

    def __truediv__(self, o):
        return self * _as_value(o) ** -1

    def __rtruediv__(self, o):
        return _as_value(o) / self

    def backward(self):
        order, visited = [], set()
        stack = [(self, False)]
        while stack:
            node, expanded = stack.pop()
            if expanded:
                order.append(node)
                continue
            if id(node) in visited:
                continue
            visited.add(id(node))
            stack.append((node, True))
            stack.extend((p, False) for p in node._prev if id(p) not in visited)
        self.grad = 1.0
        while order:
            node = order.pop()
            if node._backward is not None:
                node._backward()
