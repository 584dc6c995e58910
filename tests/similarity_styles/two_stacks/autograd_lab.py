"""Gradients pushed by static rule methods named after the op (_grad_add, _grad_mul, ...), found
with getattr; the order comes from the classic two-stack iterative post-order."""
import math


class Value:
    __slots__ = ("data", "grad", "_prev", "_op", "_arg")

    def __init__(self, data, _prev=(), _op="", _arg=None):
        self.data = float(data)
        self.grad = 0.0
        self._prev = _prev
        self._op = _op
        self._arg = _arg

    @staticmethod
    def coerce(x):
        return x if isinstance(x, Value) else Value(x)

    def __add__(self, x):
        x = Value.coerce(x)
        return Value(self.data + x.data, (self, x), "add")

    def __mul__(self, x):
        x = Value.coerce(x)
        return Value(self.data * x.data, (self, x), "mul")

    def __pow__(self, n):
        return Value(self.data ** n, (self,), "pow", n)

    def relu(self):
        return Value(0.0 if self.data < 0 else self.data, (self,), "relu")

    def tanh(self):
        return Value(math.tanh(self.data), (self,), "tanh")

    def sigmoid(self):
        return Value(1.0 / (1.0 + math.exp(-self.data)), (self,), "sigmoid")

    def __neg__(self):
        return self * -1.0

    def __sub__(self, x):
        return self + Value.coerce(x) * -1.0

    def __truediv__(self, x):
        return self * Value.coerce(x) ** -1

    def __radd__(self, x):
        return Value.coerce(x) + self

    def __rmul__(self, x):
        return Value.coerce(x) * self

    def __rsub__(self, x):
        return Value.coerce(x) - self

    def __rtruediv__(self, x):
        return Value.coerce(x) / self

    @staticmethod
    def _grad_add(node):
        a, b = node._prev
        a.grad += node.grad
        b.grad += node.grad

    @staticmethod
    def _grad_mul(node):
        a, b = node._prev
        a.grad += b.data * node.grad
        b.grad += a.data * node.grad

    @staticmethod
    def _grad_pow(node):
        (a,) = node._prev
        a.grad += node._arg * a.data ** (node._arg - 1) * node.grad

    @staticmethod
    def _grad_relu(node):
        node._prev[0].grad += node.grad if node._prev[0].data > 0 else 0.0

    @staticmethod
    def _grad_tanh(node):
        node._prev[0].grad += (1.0 - node.data * node.data) * node.grad

    @staticmethod
    def _grad_sigmoid(node):
        node._prev[0].grad += node.data * (1.0 - node.data) * node.grad

    def backward(self):
        first, second = [self], []
        marked = {id(self)}
        while first:
            top = first.pop()
            second.append(top)
            for p in top._prev:
                if id(p) not in marked:
                    marked.add(id(p))
                    first.append(p)
        # rank: the longest path from self; a node outranks every node that consumes it
        rank = dict.fromkeys(map(id, second), 0)
        changed = True
        while changed:
            changed = False
            for node in second:
                for p in node._prev:
                    if rank[id(p)] <= rank[id(node)]:
                        rank[id(p)] = rank[id(node)] + 1
                        changed = True
        self.grad = 1.0
        for node in sorted(second, key=lambda n: rank[id(n)]):
            if node._op:
                getattr(Value, "_grad_" + node._op)(node)
